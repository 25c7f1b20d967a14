"""Linear algebra. Low-precision products follow Tensor Core semantics (invariant 4) through
``_backend.kernels.matmul``: float32 accumulation, result in the input dtype."""

from __future__ import annotations

from .._backend import kernels
from ..autodiff.function import Function
from ..tensor import Tensor
from ._utils import sum_to_shape

__all__ = ["matmul"]


class MatMul(Function):
    name = "matmul"

    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError(f"matmul: operands must be at least 1-D, got shapes {a.shape} "
                             f"and {b.shape}; use mul for scalars")
        if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
            raise ValueError(
                f"matmul: inner dimensions differ: a {a.shape} ({a.dtype}) @ b {b.shape} "
                f"({b.dtype}); a.shape[-1] must equal b.shape[-2]")
        self.save_for_backward(a, b)
        return kernels.matmul(a, b)

    def backward(self, gy):
        a, b = self.saved_tensors
        a2 = a.reshape((1,) + a.shape) if a.ndim == 1 else a
        b2 = b.reshape(b.shape + (1,)) if b.ndim == 1 else b
        g2 = gy
        if a.ndim == 1:
            g2 = g2.reshape(g2.shape[:-1] + (1,) + g2.shape[-1:]) if b.ndim > 1 else g2
        if b.ndim == 1:
            g2 = g2.reshape(g2.shape + (1,))
        ga = matmul(g2, b2.swapaxes(-1, -2) if b2.ndim >= 2 else b2)
        gb = matmul(a2.swapaxes(-1, -2), g2)
        ga = sum_to_shape(ga, a2.shape).reshape(a.shape)
        gb = sum_to_shape(gb, b2.shape).reshape(b.shape)
        return ga, gb


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with NumPy semantics (1-D operands, broadcast batch dims)."""
    return MatMul.apply(a, b)
