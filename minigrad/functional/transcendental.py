"""More elementwise math: log2, log10, inverse and hyperbolic trig, tan, reciprocal, erfinv,
atan2, and the fused ``addcmul``/``addcdiv``/``cross``.

Unary ops are float32 rows of the AMP policy; on their own (no autocast) float16/bfloat16 inputs
are computed in float32 and rounded once, because NumPy's half-precision transcendental
functions are slow and lose digits. Backward passes are written with ops (double backward works).
"""

from __future__ import annotations

import math


from .._backend import get_array_module
from .._backend.dtypes import float32, float64, float_result_type
from ..core.function import Function
from ..core.tensor import Tensor
from ._composite import composite
from ._utils import (as_operand, broadcast_shape, const, normalize_axis, op_error,
                     refuse_bool_product, shape_of, sum_to_shape)
from .elementwise import _erf_array, exp, sqrt, where

__all__ = [
    "acos", "addcdiv", "addcmul", "asin", "atan2", "cosh", "cross", "erfinv", "log10", "log2",
    "reciprocal", "sinh", "tan",
]


def _wide(x):
    return x if x.dtype == float64 or x.dtype == float32 else x.astype(float32)


class _Unary(Function):
    """``y = f(x)`` computed in float32 or wider and returned in ``x``'s dtype."""

    keep = "x"  # what backward needs: the input "x" or the output "y"

    def forward(self, x):
        if x.dtype.kind != "f" and x.dtype.kind != "V":
            x = x.astype(float32)  # integer input: a float result, like PyTorch
        y = self.f(get_array_module(x), _wide(x)).astype(x.dtype, copy=False)
        self.save_for_backward(x if self.keep == "x" else y)
        return y


class Log2(_Unary):
    name = "log2"
    f = staticmethod(lambda xp, x: xp.log2(x))

    def backward(self, gy):
        (x,) = self.saved_tensors
        return gy / (x * math.log(2.0))


class Log10(_Unary):
    name = "log10"
    f = staticmethod(lambda xp, x: xp.log10(x))

    def backward(self, gy):
        (x,) = self.saved_tensors
        return gy / (x * math.log(10.0))


class Acos(_Unary):
    name = "acos"
    f = staticmethod(lambda xp, x: xp.arccos(x))

    def backward(self, gy):
        (x,) = self.saved_tensors
        return -gy / sqrt(1.0 - x * x)


class Asin(_Unary):
    name = "asin"
    f = staticmethod(lambda xp, x: xp.arcsin(x))

    def backward(self, gy):
        (x,) = self.saved_tensors
        return gy / sqrt(1.0 - x * x)


class Cosh(_Unary):
    name = "cosh"
    f = staticmethod(lambda xp, x: xp.cosh(x))

    def backward(self, gy):
        (x,) = self.saved_tensors
        return gy * sinh(x)


class Sinh(_Unary):
    name = "sinh"
    f = staticmethod(lambda xp, x: xp.sinh(x))

    def backward(self, gy):
        (x,) = self.saved_tensors
        return gy * cosh(x)


class Tan(_Unary):
    name = "tan"
    keep = "y"
    f = staticmethod(lambda xp, x: xp.tan(x))

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy * (1.0 + y * y)


class Reciprocal(_Unary):
    name = "reciprocal"
    keep = "y"
    f = staticmethod(lambda xp, x: xp.reciprocal(x))

    def backward(self, gy):
        (y,) = self.saved_tensors
        return -gy * (y * y)


def _erfinv_array(x):
    """Inverse error function: Giles' single-precision approximation ("Approximating the erfinv
    function", GPU Computing Gems, 2011) refined by two Newton steps on ``erf`` in float64."""
    xp = get_array_module(x)
    z = x.astype(float64)
    a = xp.clip(xp.abs(z), 0.0, 1.0)
    w = -xp.log(xp.maximum((1.0 - a) * (1.0 + a), 1e-300))
    central = w < 5.0
    wc = w - 2.5
    p = xp.full_like(z, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        p = c + p * wc
    wt = xp.sqrt(w) - 3.0
    q = xp.full_like(z, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        q = c + q * wt
    y = xp.where(central, p, q) * a
    for _ in range(2):
        # d erf / dy = 2/sqrt(pi) exp(-y^2); the step vanishes where exp underflows (|x| -> 1).
        err = _erf_array(y) - a
        y = y - err / (2.0 / math.sqrt(math.pi) * xp.exp(-y * y) + 1e-300)
    y = xp.where(a >= 1.0, xp.inf, y)
    y = xp.where(xp.abs(z) > 1.0, xp.nan, xp.sign(z) * y)
    return xp.where(xp.isnan(z), xp.nan, y)


class Erfinv(_Unary):
    name = "erfinv"
    keep = "y"
    f = staticmethod(lambda xp, x: _erfinv_array(x).astype(x.dtype))

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy * (math.sqrt(math.pi) / 2.0) * exp(y * y)


class Atan2(Function):
    name = "atan2"
    # PyTorch's float promotion (int inputs give float32), and with it Function.apply's
    # broadcast error naming atan2 and both shapes instead of NumPy's bare message.
    promote = "float"

    def forward(self, y, x):
        xp = get_array_module(y if hasattr(y, "dtype") else x)
        # PyTorch's promotion of the pair (float16 with float32 gives float32), not y's dtype
        dtype = float_result_type([a.dtype for a in (y, x) if hasattr(a, "dtype")])
        out = xp.arctan2(_wide(xp.asarray(y)), _wide(xp.asarray(x)))
        self.save_for_backward(y, x)
        return out.astype(dtype, copy=False)

    def backward(self, gz):
        y, x = self.saved_tensors
        need_y, need_x = self.needs_input_grad
        den = x * x + y * y  # 0 at the origin, where the gradient is 0 (PyTorch), not 0/0
        r = gz / where(const(den.data == 0), math.inf, den)
        return (sum_to_shape(r * x, y.shape) if need_y else None,
                sum_to_shape(-r * y, x.shape) if need_x else None)


def log2(x: Tensor) -> Tensor:
    """Base-2 logarithm (float32 under autocast)."""
    return Log2.apply(x)


def log10(x: Tensor) -> Tensor:
    """Base-10 logarithm (float32 under autocast)."""
    return Log10.apply(x)


def acos(x: Tensor) -> Tensor:
    """Inverse cosine; NaN outside [-1, 1] like PyTorch."""
    return Acos.apply(x)


def asin(x: Tensor) -> Tensor:
    """Inverse sine; NaN outside [-1, 1] like PyTorch."""
    return Asin.apply(x)


def cosh(x: Tensor) -> Tensor:
    """Hyperbolic cosine (float32 under autocast: overflows float16 beyond |x| ~ 11)."""
    return Cosh.apply(x)


def sinh(x: Tensor) -> Tensor:
    """Hyperbolic sine (float32 under autocast)."""
    return Sinh.apply(x)


def tan(x: Tensor) -> Tensor:
    """Tangent (float32 under autocast)."""
    return Tan.apply(x)


def reciprocal(x: Tensor) -> Tensor:
    """``1 / x`` (float32 under autocast: 1/x of a small float16 overflows)."""
    return Reciprocal.apply(x)


def erfinv(x: Tensor) -> Tensor:
    """Inverse error function on (-1, 1); +-inf at +-1 and NaN outside, like PyTorch."""
    return Erfinv.apply(x)


def atan2(input, other) -> Tensor:
    """Elementwise ``atan(input / other)`` with the quadrant of ``(other, input)``; broadcasts.

    Args:
        input: the y coordinates.
        other: the x coordinates.
    """
    a, b = as_operand(input, "atan2"), as_operand(other, "atan2")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError("atan2: at least one operand must be a Tensor")
    return Atan2.apply(a, b)


# ------------------------------------------------------------------ fused composites (promote)
_AddCMul = composite("addcmul", lambda x, t1, t2, value: x + value * (t1 * t2))
_AddCDiv = composite("addcdiv", lambda x, t1, t2, value: x + value * (t1 / t2))
# The inner ops already promote; the attribute makes Function.apply explain a broadcast failure
# as addcmul/addcdiv with the caller's three shapes, not as the inner mul/div.
_AddCMul.promote = _AddCDiv.promote = "common"


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (broadcasting); inputs promote to the widest dtype.
    """
    return _AddCMul.apply(input, tensor1, tensor2, kw={"value": value})


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcasting); inputs promote to the widest dtype.
    """
    return _AddCDiv.apply(input, tensor1, tensor2, kw={"value": value})


def _cross_impl(a, b, axis):
    from .shape import stack

    def comp(t, i):
        idx = (slice(None),) * axis + (i,)
        return t[idx]

    a0, a1, a2 = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=axis)


_Cross = composite("cross", _cross_impl)


def cross(input: Tensor, other: Tensor, dim: int | None = None, *, axis: int | None = None):
    """Cross product of 3-vectors along ``dim`` (``axis`` is accepted as a synonym).

    Both inputs broadcast against each other. With no ``dim`` the first axis of size 3 is used
    (``torch.cross``'s old default); ``linalg.cross`` users pass ``dim=-1``.
    """
    from .shape import broadcast_to

    if dim is None:
        dim = axis
    refuse_bool_product("cross", input, other)
    shape = tuple(broadcast_shape("cross", shape_of(input), shape_of(other)))
    if dim is None:
        sizes = [i for i, s in enumerate(shape) if s == 3]
        if not sizes:
            raise op_error("cross", "no axis of size 3; pass dim=", input=shape_of(input),
                           other=shape_of(other))
        dim = sizes[0]
    dim = normalize_axis(dim, len(shape), "cross")
    if shape[dim] != 3:
        raise op_error("cross", f"axis {dim} must have size 3", input=shape_of(input),
                       other=shape_of(other))
    a = input if input.shape == shape else broadcast_to(input, shape)
    b = other if other.shape == shape else broadcast_to(other, shape)
    return _Cross.apply(a, b, kw={"axis": dim})
