"""Shape and indexing ops."""

from __future__ import annotations

from .._backend import get_array_module
from ..autodiff.function import Function
from ..tensor import Tensor

__all__ = ["reshape", "transpose", "swapaxes", "broadcast_to"]


class Reshape(Function):
    name = "reshape"

    def forward(self, x, shape):
        self.in_shape = x.shape
        return x.reshape(shape)

    def backward(self, gy):
        return gy.reshape(self.in_shape)


class Transpose(Function):
    name = "transpose"

    def forward(self, x, axes):
        self.axes = axes
        return get_array_module(x).transpose(x, axes)

    def backward(self, gy):
        if self.axes is None:
            return transpose(gy)
        inverse = [0] * len(self.axes)
        for i, a in enumerate(self.axes):
            inverse[a % len(self.axes)] = i
        return transpose(gy, tuple(inverse))


class BroadcastTo(Function):
    name = "broadcast_to"

    def forward(self, x, shape):
        self.in_shape = x.shape
        return get_array_module(x).broadcast_to(x, shape)

    def backward(self, gy):
        from ._utils import sum_to_shape

        return sum_to_shape(gy, self.in_shape)


def reshape(x: Tensor, shape) -> Tensor:
    """``x`` with a new shape (one ``-1`` allowed)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if shape == x.shape:
        return x
    return Reshape.apply(x, shape=shape)


def transpose(x: Tensor, axes=None) -> Tensor:
    """Permute axes (reverse them when ``axes`` is None)."""
    return Transpose.apply(x, axes=None if axes is None else tuple(axes))


def broadcast_to(x: Tensor, shape) -> Tensor:
    """``x`` broadcast to ``shape`` (a view; the gradient is summed back)."""
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return BroadcastTo.apply(x, shape=shape)


def swapaxes(x: Tensor, axis1: int, axis2: int) -> Tensor:
    """Exchange two axes."""
    axes = list(range(x.ndim))
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return Transpose.apply(x, axes=tuple(axes))
