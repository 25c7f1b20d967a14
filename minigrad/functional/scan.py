"""Scans: ``cumsum`` and ``cumprod``.

Like the reductions, the running sum and product accumulate in float32 or wider whatever the
input dtype (invariant 3) and are returned in the input's dtype.
"""

from __future__ import annotations

from .._backend import get_array_module
from ..core.function import Function
from ..core.tensor import Tensor
from ._axes import check_axis
from ._utils import acc_dtype, const, fast_backward, normalize_axis, product_acc_dtype
from .reduction import _to_dtype
from .shape import getitem

__all__ = ["cumprod", "cumsum"]


def _rev_cumsum(xp, a):
    return xp.flip(xp.cumsum(xp.flip(a, -1), axis=-1), -1)


class CumSum(Function):
    name = "cumsum"

    def forward(self, x, axis):
        self.axis = axis
        xp = get_array_module(x)
        return _to_dtype(xp.cumsum(x, axis=axis, dtype=product_acc_dtype(x.dtype)), x.dtype)

    def backward(self, gy):
        # The adjoint of a prefix sum is a suffix sum: flip, cumsum, flip.
        flip = (slice(None),) * self.axis + (slice(None, None, -1),)
        return getitem(cumsum(getitem(gy, flip), self.axis), flip)


class CumProd(Function):
    name = "cumprod"

    def forward(self, x, axis):
        self.axis = axis
        xp = get_array_module(x)
        y = _to_dtype(xp.cumprod(x, axis=axis, dtype=product_acc_dtype(x.dtype)), x.dtype)
        self.save_for_backward(x, y)
        return y

    def backward(self, gy):
        x, y = self.saved_tensors
        xp = get_array_module(x.data)
        if not bool(xp.any(x.data == 0)):
            # d y_j / d x_i = y_j / x_i for j >= i: a suffix sum of gy * y, divided by x.
            flip = (slice(None),) * self.axis + (slice(None, None, -1),)
            return cumsum((gy * y)[flip], axis=self.axis)[flip] / x
        if not fast_backward():
            raise RuntimeError("cumprod: double backward through a product containing zeros "
                               "is not supported; perturb the zeros or avoid create_graph=True")
        return const(self._grad_with_zeros(xp, x.data, gy.data))

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
