"""Scans: ``cumsum``, ``cumprod`` and the running extremes ``cummax``/``cummin``.

Like the reductions, the running sum and product accumulate in float32 or wider whatever the
input dtype (invariant 3) and are returned in the input's dtype.
"""

from __future__ import annotations

import collections

from .._backend import get_array_module
from .._backend.dtypes import float32, int64
from ..core.function import Function
from ..core.tensor import Tensor
from ._axes import check_axis, one_of
from ._utils import (acc_dtype, const, cpu_wide, fast_backward, normalize_axis,
                     product_acc_dtype, to_dtype)
from .reduction import _to_dtype
from .shape import GatherBackward, getitem

__all__ = ["cummax", "cummin", "cumprod", "cumsum"]


def _rev_cumsum(xp, a):
    return xp.flip(xp.cumsum(xp.flip(a, -1), axis=-1), -1)


class CumSum(Function):
    name = "cumsum"

    def forward(self, x, axis):
        self.axis = axis
        xp = get_array_module(x)
        # CPU float16/bfloat16 widened first (NumPy's casting loop converts one element at a
        # time): a scan adds in order, so the same sums
        return _to_dtype(xp.cumsum(cpu_wide(x), axis=axis, dtype=product_acc_dtype(x.dtype)),
                         x.dtype)

    def backward(self, gy):
        # The adjoint of a prefix sum is a suffix sum: flip, cumsum, flip.
        flip = (slice(None),) * self.axis + (slice(None, None, -1),)
        return getitem(cumsum(getitem(gy, flip), self.axis), flip)


class CumProd(Function):
    name = "cumprod"

    def forward(self, x, axis):
        self.axis = axis
        xp = get_array_module(x)
        y = _to_dtype(xp.cumprod(cpu_wide(x), axis=axis, dtype=product_acc_dtype(x.dtype)),
                      x.dtype)  # (widened first, as cumsum's)
        self.save_for_backward(x, y)
        return y

    def backward(self, gy):
        x, y = self.saved_tensors
        if x.shape[self.axis] == 1:
            return gy  # each product is of one element (y / x is NaN at inf and NaN)
        xp = get_array_module(x._data)
        if not bool(xp.any(x._data == 0)):
            # d y_j / d x_i = y_j / x_i for j >= i: a suffix sum of gy * y, divided by x.
            flip = (slice(None),) * self.axis + (slice(None, None, -1),)
            return cumsum((gy * y)[flip], axis=self.axis)[flip] / x
        if not fast_backward():
            raise RuntimeError("cumprod: double backward through a product containing zeros "
                               "is not supported; perturb the zeros or avoid create_graph=True")
        return const(self._grad_with_zeros(xp, x._data, gy._data))

    def _grad_with_zeros(self, xp, x, gy):
        """Exact gradient when slices contain zeros: before a slice's first zero the usual
        formula holds, at it the product skips that element, after it the gradient is 0."""
        acc = acc_dtype(x.dtype)
        xm = xp.moveaxis(x, self.axis, -1).astype(acc)
        gm = xp.moveaxis(gy, self.axis, -1).astype(acc)
        n = xm.shape[-1]
        pos = xp.arange(n)
        is_zero = xm == 0
        first = xp.where(is_zero.any(-1), xp.argmax(is_zero, axis=-1), n)[..., None]
        y = xp.cumprod(xm, axis=-1)
        before = _rev_cumsum(xp, gm * y) / xp.where(is_zero, 1.0, xm)
        x1 = xp.where(pos == first, 1.0, xm)  # the first zero replaced by 1
        at = _rev_cumsum(xp, gm * xp.cumprod(x1, axis=-1))
        g = xp.where(pos < first, before, xp.where(pos == first, at, 0.0))
        return xp.moveaxis(g, -1, self.axis).astype(x.dtype)


def cumprod(x: Tensor, axis=None, *, dim=None) -> Tensor:
    """Inclusive running product along ``axis`` (``dim`` is PyTorch's spelling; of the
    flattened tensor when both are None). Exact gradient with zeros."""
    if axis is None:
        axis = dim
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    axis = normalize_axis(axis, x.ndim, "cumprod")
    if x.ndim == 0:  # PyTorch keeps a 0-d input 0-d along axis 0/-1 (NumPy would give (1,))
        return CumProd.apply(x.reshape((1,)), axis=0).reshape(())
    return CumProd.apply(x, axis=axis)


def cumsum(x: Tensor, axis=None) -> Tensor:
    """Inclusive prefix sum along ``axis`` (of the flattened tensor for None)."""
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    axis = check_axis(axis, x.ndim, "cumsum")
    if x.ndim == 0:  # PyTorch keeps a 0-d input 0-d along axis 0/-1 (NumPy would give (1,))
        return CumSum.apply(x.reshape((1,)), axis=0).reshape(())
    return CumSum.apply(x, axis=axis)


# --------------------------------------------------------------------------- cummax / cummin
def _pair_type(name):
    cls = collections.namedtuple(name, ["values", "indices"])
    cls.__module__ = "minigrad.return_types"
    cls.__doc__ = f"PyTorch's ``torch.return_types.{name}``: ``(values, indices)``."
    return cls


_RESULTS = {n: _pair_type(n) for n in ("cummax", "cummin")}


def _accumulate(xp, op, a):
    """``op.accumulate(a, axis=-1)`` for an associative ``op`` (maximum/minimum); where the
    backend has no ufunc accumulate (older CuPy), a log-step scan: ceil(log2 n) passes."""
    try:
        return op.accumulate(a, axis=-1)
    except (AttributeError, NotImplementedError, TypeError):
        out = a.copy()
        k, n = 1, a.shape[-1]
        while k < n:
            out[..., k:] = op(out[..., k:], out[..., :-k])
            k *= 2
        return out


def _running_positions(xp, x, pick):
    """Per position along the last axis, the position of the running maximum (``pick`` is
    ``xp.maximum``) or minimum so far, as PyTorch's cummax/cummin: ties take the later
    position, and from the first NaN on every NaN takes over (the value stays NaN)."""
    if x.dtype.kind == "f" and x.dtype.itemsize < 4 or x.dtype.kind == "V":
        x = to_dtype(x, float32)  # float16/bfloat16 compare exactly in float32
    run = _accumulate(xp, pick, x)
    new = x == run
    if x.dtype.kind == "f":
        new |= xp.isnan(x)
    pos = xp.arange(x.shape[-1], dtype=int64)
    return _accumulate(xp, xp.maximum, xp.where(new, pos, 0))


class Cummax(Function):
    name = "cummax"

    def forward(self, x, axis):
        xp = get_array_module(x)
        pick = xp.maximum if self.name == "cummax" else xp.minimum
        idx = xp.moveaxis(_running_positions(xp, xp.moveaxis(x, axis, -1), pick), -1, axis)
        self.idx, self.axis, self.shape = idx, axis, x.shape
        return xp.take_along_axis(x, idx, axis=axis), idx

    def backward(self, gy, gidx=None):
        if gy is None:
            return None
        # the gradient of each running extreme goes to the position it was taken from
        return GatherBackward.apply(gy, const(self.idx), axis=self.axis, shape=self.shape)


class Cummin(Cummax):
    name = "cummin"


def _cumulative_extreme(cls, x, axis, dim):
    axis = one_of(cls.name, axis, dim)
    if axis is None:
        raise TypeError(f"{cls.name}: axis (PyTorch's dim) is required")
    axis = check_axis(axis, x.ndim, cls.name)
    result = _RESULTS[cls.name]
    if x.ndim == 0:  # one entry: itself, at position 0 (PyTorch keeps both 0-d)
        values, idx = cls.apply(x.reshape((1,)), axis=0)
        return result(values.reshape(()), idx.reshape(()))
    return result(*cls.apply(x, axis=axis))


def cummax(x: Tensor, axis=None, *, dim=None):
    """Running maximum along ``axis`` (``torch.cummax``; ``dim`` is PyTorch's spelling):
    ``(values, indices)``, the indices int64 (of the latest of equal maxima; NaN propagates).
    The gradient of each value goes to the entry it came from."""
    return _cumulative_extreme(Cummax, x, axis, dim)


def cummin(x: Tensor, axis=None, *, dim=None):
    """Running minimum along ``axis`` (``torch.cummin``): ``(values, indices)`` as
    :func:`cummax`."""
    return _cumulative_extreme(Cummin, x, axis, dim)
