"""Reductions. They accumulate in float32 or wider whatever the input dtype (invariant 3) and
return the input's dtype, so a float16 sum of 4096 ones is exactly 4096."""

from __future__ import annotations

from .._backend import get_array_module
from .._backend.kernels import sum_fp32
from ..autodiff.function import Function
from ..tensor import Tensor

__all__ = ["sum", "mean"]


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted(a % ndim if ndim else a for a in axis))


def _expand_grad(gy: Tensor, shape, axes, keepdims) -> Tensor:
    if not keepdims and axes:
        kept = list(gy.shape)
        for a in axes:
            kept.insert(a, 1)
        gy = gy.reshape(tuple(kept))
    return gy.broadcast_to(shape)


class Sum(Function):
    name = "sum"

    def forward(self, x, axis, keepdims):
        self.axes = _axes(axis, x.ndim)
        self.keepdims = keepdims
        self.in_shape = x.shape
        out = sum_fp32(x, axis=self.axes, keepdims=keepdims)
        return get_array_module(out).asarray(out, dtype=x.dtype) if out.dtype != x.dtype and \
            x.dtype.kind != "b" else out

    def backward(self, gy):
        return _expand_grad(gy, self.in_shape, self.axes, self.keepdims)


class Mean(Function):
    name = "mean"

    def forward(self, x, axis, keepdims):
        self.axes = _axes(axis, x.ndim)
        self.keepdims = keepdims
        self.in_shape = x.shape
        count = 1
        for a in self.axes:
            count *= x.shape[a]
        self.count = max(count, 1)
        out = sum_fp32(x, axis=self.axes, keepdims=keepdims) / self.count
        return out.astype(x.dtype, copy=False)

    def backward(self, gy):
        return _expand_grad(gy, self.in_shape, self.axes, self.keepdims) / self.count


def sum(x: Tensor, axis=None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Sum over ``axis`` (all axes when None), accumulated in float32."""
    return Sum.apply(x, axis=axis, keepdims=keepdims)


def mean(x: Tensor, axis=None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (all axes when None), accumulated in float32."""
    return Mean.apply(x, axis=axis, keepdims=keepdims)
