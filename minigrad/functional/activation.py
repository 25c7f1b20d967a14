"""Activations: ``relu``, ``leaky_relu``, ``prelu``, ``gelu``, ``silu``, ``sigmoid``, ``tanh``,
``softplus``, ``elu``/``selu``/``celu``, ``relu6``/``hardtanh``/``hardsigmoid``/``hardswish``,
``mish``, ``logsigmoid``, and the normalising ``softmax``/``log_softmax``/``softmin``.

The pointwise activations keep the input's dtype; gelu, silu, sigmoid and softplus compute
float16/bfloat16 in float32 and round once. Softmax and log-softmax subtract the row maximum and
accumulate in float32 (float64 for float64 input) whatever the input dtype (invariant 3), then
round the result to the input dtype: a float16 softmax over 4096 logits still sums to one. Every
backward is written with ops under ``create_graph=True``, so double backward (gradient
penalties, meta-learning) works.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .._backend import device_of, get_array_module, kernels, lowp_cpu
from .._backend import random as _random
from .._backend.dtypes import float32
from ..core.function import Function
from ..core.tensor import Tensor
from ..core.cast import cast
from ._axes import check_axis, one_of
from ._utils import (
    acc_dtype, check_floating, const, cpu_wide, fast_backward, narrow, op_error, scalar_like,
    to_dtype, wide,
)
from ._composite import composite
from .elementwise import abs as _abs
from .elementwise import where
from .shape import concat, split
from .transcendental import erf, erf_array, exp

__all__ = ["celu", "elu", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
           "leaky_relu", "log_softmax", "logsigmoid", "mish", "prelu", "relu", "relu6", "rrelu",
           "selu", "sigmoid", "silu", "softmax", "softmin", "softplus", "softshrink", "softsign",
           "tanh", "tanhshrink", "threshold"]


# --------------------------------------------------------------------------- array forms
def sigmoid_array(x):
    """``1 / (1 + exp(-x))`` of an array, in ``x``'s dtype."""
    # exp(min(x, 0)) / (1 + exp(-|x|)) equals 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) below: no
    # exponent is ever positive (no overflow warnings), tiny results keep their relative
    # precision, and there is no ``where`` (NumPy's is ~50x slower than arithmetic on random
    # masks, through branch misprediction).
    xp = get_array_module(x)
    zero, one = scalar_like(0, x), scalar_like(1, x)
    return xp.exp(xp.minimum(x, zero)) / (one + xp.exp(-xp.abs(x)))


def softmax_array(x, axis):
    """Max-subtracted softmax of an array, computed and returned in ``acc_dtype(x.dtype)``."""
    xp = get_array_module(x)
    z = to_dtype(x, acc_dtype(x.dtype))
    if z.size == 0:  # an empty axis (or batch): an empty result, as in PyTorch
        return z.copy()
    e = xp.exp(z - z.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


def log_softmax_array(x, axis):
    """Max-subtracted log-softmax of an array in ``acc_dtype(x.dtype)``."""
    xp = get_array_module(x)
    z = to_dtype(x, acc_dtype(x.dtype))
    if z.size == 0:
        return z.copy()
    s = z - z.max(axis=axis, keepdims=True)
    s -= xp.log(xp.exp(s).sum(axis=axis, keepdims=True))
    return s


def _times(gy, d):
    """``gy * d`` for the fast backwards: the derivative ``d`` as computed (float32 for a
    float16/bfloat16 ``gy``, by :func:`wide` means) and the product rounded once to gy's dtype,
    as PyTorch's fused *_backward kernels do (rounding ``d`` first was 1 ulp off them for about
    a sixth of the elements)."""
    return narrow(wide(gy) * d, gy.dtype)


# --------------------------------------------------------------------------- pointwise
class TanhFunction(Function):
    name = "tanh"
    promote = "float"

    def forward(self, x):
        y = kernels.unary(get_array_module(x).tanh, x)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        if fast_backward():
            # float16/bfloat16 on the CPU in float32, rounded once, as PyTorch's tanh_backward
            # (NumPy's float16 loops round each step and run element by element)
            return const(kernels.binary(lambda g, v: g * (1 - v * v), gy._data, y._data))
        return gy * (1 - y * y)


class SigmoidFunction(Function):
    name = "sigmoid"
    promote = "float"

    def forward(self, x):
        y = narrow(sigmoid_array(wide(x)), x.dtype)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        if fast_backward():
            # float16/bfloat16 on the CPU in float32, rounded once (as TanhFunction's)
            return const(kernels.binary(lambda g, v: g * (v * (1 - v)), gy._data, y._data))
        return gy * (y * (1 - y))


class ReLUFunction(Function):
    name = "relu"

    def forward(self, x):
        y = kernels.clamp(x, lower=0)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        if fast_backward():
            return const(kernels.relu_grad(gy._data, y._data))
        return where(const(y._data <= 0), 0.0, gy)


class LeakyReLUFunction(Function):
    name = "leaky_relu"

    def forward(self, x, negative_slope):
        self.save_for_backward(x)
        self.negative_slope = negative_slope
        # PyTorch's x > 0 ? x : x * slope: -0.0 stays -0.0 (max + min * slope gave +0.0).
        # float16/bfloat16 on the CPU in float32 with the slope unrounded, as PyTorch's opmath
        # (the slope rounded to float16 first gave results 1 ulp off)
        slope_side = kernels.scaled(operator.mul, x, negative_slope)
        return get_array_module(x).where(_positive(x), x, slope_side)

    def backward(self, gy):
        (x,) = self.saved_tensors
        k = self.negative_slope
        if fast_backward():  # PyTorch's x > 0 ? gy : gy * slope, computed as the forward
            slope_side = kernels.scaled(operator.mul, gy._data, k)
            return const(get_array_module(gy._data).where(_positive(x._data), gy._data,
                                                          slope_side))
        # recorded (create_graph): the same selection of ops, gy * k computed as the forward
        return where(const(_positive(x._data)), gy, gy * k)


def _positive(x):
    """``x > 0`` of an array (float16/bfloat16 compared in float32 on the CPU: NumPy's
    float16 comparisons run element by element)."""
    return kernels.binary(operator.gt, x, 0)


class GELUFunction(Function):
    name = "gelu"
    promote = "float"
    _K = math.sqrt(2.0 / math.pi)

    def forward(self, x, approximate):
        self.approximate = approximate
        self.save_for_backward(x)
        xp = get_array_module(x)
        z = wide(x)
        if approximate == "tanh":
            y = 0.5 * z * (1 + xp.tanh(self._K * (z + 0.044715 * z * z * z)))
        else:
            y = 0.5 * z * (1 + erf_array(z * (1 / math.sqrt(2.0))))
        return narrow(y, x.dtype)

    def backward(self, gy):
        (x,) = self.saved_tensors
        if self.approximate == "tanh":
            # In float32 (x**3 overflows float16 from |x| ~ 40), and where tanh has saturated the
            # x * sech^2 * du term is 0, not inf * 0 (PyTorch's derivative there is 0 or 1).
            xw = wide(x)
            u = (xw + xw * xw * xw * 0.044715) * self._K
            t = tanh(u)
            sech2 = 1 - t * t
            du = (xw * xw * (3 * 0.044715) + 1) * self._K
            slope = (1 + t) * 0.5 + where(const(sech2._data == 0), 0.0, xw * 0.5 * sech2 * du)
            return gy * slope.astype(gy.dtype)
        if fast_backward():
            z = wide(x._data)
            xp = get_array_module(z)
            d = 0.5 * (1 + erf_array(z * (1 / math.sqrt(2.0)))) + \
                z * xp.exp(-0.5 * z * z) * (1 / math.sqrt(2 * math.pi))
            return const(_times(gy._data, d))
        cdf = (erf(x * (1 / math.sqrt(2.0))) + 1) * 0.5
        pdf = exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
        return gy * (cdf + x * pdf)


class SiLUFunction(Function):
    name = "silu"
    promote = "float"

    def forward(self, x):
        self.save_for_backward(x)
        z = wide(x)
        return narrow(z * sigmoid_array(z), x.dtype)

    def backward(self, gy):
        (x,) = self.saved_tensors
        if fast_backward():
            z = wide(x._data)
            s = sigmoid_array(z)
            return const(_times(gy._data, s * (1 + z * (1 - s))))
        s = sigmoid(x)
        return gy * (s * (1 + x * (1 - s)))


class SoftplusFunction(Function):
    name = "softplus"
    promote = "float"

    def forward(self, x, beta, threshold):
        xp = get_array_module(x)
        w = wide(x)
        z = w * beta
        self.save_for_backward(x)
        self.beta, self.threshold = beta, threshold
        # log(1 + e^z) = max(z, 0) + log1p(e^-|z|): no overflow for large |z|.
        soft = (xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))) / beta
        return narrow(xp.where(z > threshold, w, soft), x.dtype)

    def backward(self, gy):
        (x,) = self.saved_tensors
        z = wide(x._data) * self.beta
        linear = z > self.threshold
        if fast_backward():
            s = sigmoid_array(z)
            s = get_array_module(s).where(linear, 1, s)
            return const(_times(gy._data, s))
        return gy * where(const(linear), 1.0, sigmoid(x * self.beta))


class PReLUFunction(Function):
    name = "prelu"

    def forward(self, x, w):
        if w.size != 1 and (x.ndim < 2 or w.ndim != 1 or x.shape[1] != w.size):
            raise op_error("prelu", "weight must have 1 element or one per channel (axis 1)",
                           x_shape=x.shape, weight_shape=w.shape)
        self.save_for_backward(x, w)
        wb = w.reshape(self._wshape(x, w))
        # PyTorch's x > 0 ? x : w * x: a positive x never meets its weight (an inf weight
        # does not make it NaN), and -0.0 stays -0.0; float16/bfloat16 in float32 on the CPU
        return get_array_module(x).where(_positive(x), x, kernels.binary(operator.mul, x, wb))

    @staticmethod
    def _wshape(x, w):
        if w.size == 1 or x.ndim < 2:  # one weight: a 0-d one, so a 0-d x stays 0-d
            return ()
        return (1, -1) + (1,) * (x.ndim - 2)

    def backward(self, gy):
        x, w = self.saved_tensors
        pos = const(_positive(x._data))
        wb = w.reshape(self._wshape(x, w)) if w.size != 1 else w.reshape(())
        nx, nw = self.needs_input_grad
        gx = where(pos, gy, gy * wb) if nx else None   # selections: no 0 * inf
        gw = None
        if nw:
            gw = where(pos, 0.0, gy * x)
            gw = gw.sum() if w.size == 1 else gw.sum(
                tuple(i for i in range(x.ndim) if i != 1))
            gw = gw.reshape(w.shape)
        return gx, gw


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return TanhFunction.apply(x)


def sigmoid(x: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``, computed without overflow for large ``|x|``."""
    return SigmoidFunction.apply(x)


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)`` (gradient 0 at 0)."""
    return ReLUFunction.apply(x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise."""
    check_floating("leaky_relu", x)  # as PyTorch: a slope times an integer is no integer
    return LeakyReLUFunction.apply(x, negative_slope=negative_slope)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit ``x * Phi(x)``.

    Args:
        x: input.
        approximate: ``"none"`` (exact, via :func:`erf`) or ``"tanh"`` (the GPT-2 formula).
    """
    if approximate not in ("none", "tanh"):
        raise op_error("gelu", f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return GELUFunction.apply(x, approximate=approximate)


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` (a.k.a. swish)."""
    return SiLUFunction.apply(x)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``; never overflows."""
    return SoftplusFunction.apply(x, beta=beta, threshold=threshold)


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """Parametric ReLU: ``weight`` (1 or C elements) scales negatives, per channel (axis 1)."""
    return PReLUFunction.apply(x, weight)


# --------------------------------------------------------------------------- softmax family
class SoftmaxFunction(Function):
    name = "softmax"

    def forward(self, x, axis):
        check_floating("softmax", x)
        self.axis = axis
        y = narrow(softmax_array(x, axis), x.dtype)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return y * (gy - (gy * y).sum(self.axis, keepdims=True))


class LogSoftmaxFunction(Function):
    name = "log_softmax"

    def forward(self, x, axis):
        check_floating("log_softmax", x)
        self.axis = axis
        y = narrow(log_softmax_array(x, axis), x.dtype)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy - y.exp() * gy.sum(self.axis, keepdims=True)


def softmax(x: Tensor, axis: int | None = None, *, dim: int | None = None, dtype=None) -> Tensor:
    """Softmax along ``axis``, max-subtracted and accumulated in float32.

    Args:
        x: floating Tensor (float16/bfloat16 are computed in float32 and rounded back).
        axis: the axis that sums to one (default: :func:`implicit_axis`;
            ``dim`` is PyTorch's spelling).
        dtype: cast ``x`` to this dtype first (PyTorch's ``dtype=``).

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    x, axis = _dim_spelling(x, axis, dim, dtype, "softmax")
    return SoftmaxFunction.apply(x, axis=_axis(x, axis, "softmax"))


def _dim_spelling(x, axis, dim, dtype, op):
    axis = one_of(op, axis, dim)
    return (x if dtype is None else cast(x, dtype)), (implicit_axis(x.ndim) if axis is None
                                                      else axis)


def implicit_axis(ndim: int) -> int:
    """The axis softmax, log_softmax and softmin take when given none: PyTorch's implicit
    ``dim`` and MegEngine's ``axis=None`` agree on 0 for 0-, 1- and 3-D input and 1 otherwise
    (the classes of ``(N, C)`` and ``(N, C, H, W)``; PyTorch warns that the choice is
    deprecated). Not the last axis: ``F.softmax`` of an ``(N, C, H, W)`` input normalises C."""
    return 0 if ndim in (0, 1, 3) else 1


def _axis(x, axis, op):
    # A 0-d input normalises over its one element (None: NumPy has no axis 0 there).
    return check_axis(axis, x.ndim, op) if x.ndim else None


def log_softmax(x: Tensor, axis: int | None = None, *, dim: int | None = None,
                dtype=None) -> Tensor:
    """``log(softmax(x))`` computed stably (``x - max - log(sum(exp(x - max)))``) in float32.

    Args:
        x: floating Tensor.
        axis: the normalised axis (default: :func:`implicit_axis`;
            ``dim`` is PyTorch's spelling).
        dtype: cast ``x`` to this dtype first (PyTorch's ``dtype=``).

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    x, axis = _dim_spelling(x, axis, dim, dtype, "log_softmax")
    return LogSoftmaxFunction.apply(x, axis=_axis(x, axis, "log_softmax"))


class SoftminFunction(Function):
    name = "softmin"

    def forward(self, x, axis):
        check_floating("softmin", x)
        self.axis = axis
        y = narrow(softmax_array(-x, axis), x.dtype)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return y * ((gy * y).sum(self.axis, keepdims=True) - gy)


def softmin(x: Tensor, axis: int | None = None, *, dim: int | None = None,
            dtype=None) -> Tensor:
    """``softmax(-x)`` along ``axis`` (``F.softmin``), max-subtracted, accumulated in float32.

    Args:
        x: floating Tensor.
        axis: the axis that sums to one (default: :func:`implicit_axis`;
            ``dim`` is PyTorch's spelling).
        dtype: cast ``x`` to this dtype first (PyTorch's ``dtype=``).
    """
    x, axis = _dim_spelling(x, axis, dim, dtype, "softmin")
    return SoftminFunction.apply(x, axis=_axis(x, axis, "softmin"))


# --------------------------------------------------------------------------- ELU family
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class ELUFunction(Function):
    """``scale * x`` for ``x > 0``, ``scale * alpha * (exp(input_scale * x) - 1)`` otherwise:
    elu, selu and celu (PyTorch's one kernel), computed in float32 for 16-bit input."""

    name = "elu"

    def forward(self, x, alpha, scale=1.0, input_scale=1.0):
        self.save_for_backward(x)
        self.alpha, self.scale, self.input_scale = alpha, scale, input_scale
        z = wide(x)
        xp = get_array_module(z)
        # PyTorch's x <= 0 ? expm1(x * input_scale) * alpha : x: -0.0 gives -0.0, NaN takes
        # the linear side (where() before expm1: no overflow on the positive side)
        neg_side = z <= 0
        neg = xp.expm1(xp.where(neg_side, z, 0) * input_scale) * alpha
        y = xp.where(neg_side, neg, z)
        if scale != 1.0:
            y = y * scale
        return narrow(y, x.dtype)

    def backward(self, gy):
        (x,) = self.saved_tensors
        # x == 0 takes the exponential side and NaN the linear one, as in PyTorch (x <= 0);
        # CPU float16/bfloat16 compared in float32 (exact: the same bools)
        xc = cpu_wide(x._data)
        pos = const(~(xc <= 0))
        k = self.scale * self.alpha * self.input_scale
        if fast_backward():
            xd = wide(xc)
            xp = get_array_module(xd)
            d = xp.where(pos._data, self.scale, xp.exp(xp.minimum(xd, 0) * self.input_scale) * k)
            return const(_times(gy._data, d))
        # where() before exp: no overflow on the positive side, and x's second derivative
        # flows only through the exponential side.
        return gy * where(pos, self.scale, exp(where(pos, 0.0, x) * self.input_scale) * k)


class SELUFunction(ELUFunction):
    name = "selu"


class CELUFunction(ELUFunction):
    name = "celu"


def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise (floating input only)."""
    check_floating("elu", x)
    return ELUFunction.apply(x, alpha=float(alpha))


def selu(x: Tensor) -> Tensor:
    """Self-normalising ELU: ``scale * elu(x, alpha)`` with PyTorch's constants
    (alpha 1.6733, scale 1.0507)."""
    check_floating("selu", x)
    return SELUFunction.apply(x, alpha=_SELU_ALPHA, scale=_SELU_SCALE)


def celu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (floating input only)."""
    check_floating("celu", x)
    if alpha == 0:
        raise op_error("celu", "alpha must not be 0 (the exponent divides by it)")
    return CELUFunction.apply(x, alpha=float(alpha), input_scale=1.0 / alpha)


# --------------------------------------------------------------------------- hard activations
class HardtanhFunction(Function):
    name = "hardtanh"

    def forward(self, x, min_val, max_val):
        self.save_for_backward(x)
        self.min_val, self.max_val = min_val, max_val
        # x.dtype.type truncates float bounds for an integer tensor, as PyTorch does
        return kernels.clamp(x, min_val, max_val)

    def backward(self, gy):
        (x,) = self.saved_tensors
        # 0 at and beyond the kinks, gy elsewhere (NaN too): PyTorch's
        # x <= min_val || x >= max_val ? 0 : gy
        xc = _comparable(x._data, self.min_val, self.max_val)
        keep = ~((xc <= self.min_val) | (xc >= self.max_val))
        if fast_backward():
            return const(get_array_module(keep).where(keep, gy._data, scalar_like(0, gy._data)))
        return where(const(keep), gy, 0.0)


class ReLU6Function(HardtanhFunction):
    name = "relu6"


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``x`` clamped to ``[min_val, max_val]``; gradient 1 strictly inside, 0 at and beyond
    the bounds (PyTorch). An integer tensor keeps its dtype (bounds truncated, as PyTorch)."""
    _hard_input("hardtanh", x)
    if min_val > max_val:
        raise op_error("hardtanh", "min_val cannot be greater than max_val",
                       min_val=min_val, max_val=max_val)
    return HardtanhFunction.apply(x, min_val=min_val, max_val=max_val)


def relu6(x: Tensor) -> Tensor:
    """``min(max(x, 0), 6)``; gradient 0 at 0 and at 6 (PyTorch). Integers keep their dtype."""
    _hard_input("relu6", x)
    return ReLU6Function.apply(x, min_val=0.0, max_val=6.0)


def _hard_input(op, x):
    if x.dtype.kind == "b":
        raise op_error(op, "bool input is not supported (as in PyTorch); cast it first",
                       shape=x.shape)


def _comparable(x, *bounds):
    """The array to compare with the Python numbers ``bounds`` in place of the array ``x``,
    giving the bools ``x`` gives: a CPU float16/bfloat16 ``x`` widened to float32 (NumPy's
    float16 comparisons run element by element) when every bound is a value of x's dtype, and
    ``x`` itself otherwise: NumPy compares float16 with the bound rounded to float16 (and
    bfloat16, numpy 2.4 with ml_dtypes, in float32), float32 with it rounded to float32; a bound
    that is a value of x's dtype makes every one of these comparisons exact."""
    if not lowp_cpu.is_low(x):
        return x
    with np.errstate(over="ignore"):
        for b in bounds:
            try:
                if not float(x.dtype.type(b)) == b:
                    return x
            except (OverflowError, TypeError, ValueError):
                return x
    return cpu_wide(x)


class HardsigmoidFunction(Function):
    name = "hardsigmoid"

    def forward(self, x):
        self.save_for_backward(x)
        z = wide(x)
        xp = get_array_module(z)
        return narrow(xp.minimum(xp.maximum(z + 3, 0), 6) / 6, x.dtype)

    def backward(self, gy):
        (x,) = self.saved_tensors
        xc = cpu_wide(x._data)  # CPU float16/bfloat16 compared in float32: the same bools
        inside = const((xc > -3) & (xc < 3))  # 0 at +-3 (PyTorch)
        return where(inside, gy * (1 / 6), 0.0)


class HardswishFunction(Function):
    name = "hardswish"

    def forward(self, x):
        self.save_for_backward(x)
        z = wide(x)
        xp = get_array_module(z)
        return narrow(z * xp.minimum(xp.maximum(z + 3, 0), 6) / 6, x.dtype)

    def backward(self, gy):
        (x,) = self.saved_tensors
        # PyTorch: 0 for x <= -3, x / 3 + 1/2 inside (-3, 3), 1 otherwise (x >= 3 and NaN)
        xc = cpu_wide(x._data)  # CPU float16/bfloat16 compared in float32: the same bools
        low, inside = const(xc <= -3), const((xc > -3) & (xc < 3))
        return where(low, 0.0, where(inside, gy * (x * (1 / 3) + 0.5), gy))


def hardsigmoid(x: Tensor) -> Tensor:
    """``relu6(x + 3) / 6`` (floating input only); gradient 1/6 strictly inside (-3, 3)."""
    check_floating("hardsigmoid", x)
    return HardsigmoidFunction.apply(x)


def hardswish(x: Tensor) -> Tensor:
    """``x * relu6(x + 3) / 6`` (floating input only), MobileNetV3's activation."""
    check_floating("hardswish", x)
    return HardswishFunction.apply(x)


# --------------------------------------------------------------------------- mish, logsigmoid
def _softplus_array(z):
    """``log(1 + exp(z))`` of an array without overflow."""
    xp = get_array_module(z)
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


class MishFunction(Function):
    name = "mish"

    def forward(self, x):
        self.save_for_backward(x)
        z = wide(x)
        return narrow(z * get_array_module(z).tanh(_softplus_array(z)), x.dtype)

    def backward(self, gy):
        (x,) = self.saved_tensors
        if fast_backward():
            z = wide(x._data)
            t = get_array_module(z).tanh(_softplus_array(z))
            d = t + z * sigmoid_array(z) * (1 - t * t)
            return const(_times(gy._data, d))
        t = tanh(softplus(x))
        return gy * (t + x * sigmoid(x) * (1 - t * t))


class LogSigmoidFunction(Function):
    name = "logsigmoid"

    def forward(self, x):
        self.save_for_backward(x)
        z = wide(x)
        xp = get_array_module(z)
        # PyTorch's min(x, 0) - log1p(exp(-|x|)): log(sigmoid(inf)) is +0.0 (-softplus(-x)
        # gave -0.0)
        return narrow(xp.minimum(z, 0) - xp.log1p(xp.exp(-xp.abs(z))), x.dtype)

    def backward(self, gy):
        (x,) = self.saved_tensors
        if fast_backward():
            s = sigmoid_array(-wide(x._data))
            return const(_times(gy._data, s))
        return gy * sigmoid(-x)


def mish(x: Tensor) -> Tensor:
    """``x * tanh(softplus(x))`` (floating input only)."""
    check_floating("mish", x)
    return MishFunction.apply(x)


def logsigmoid(x: Tensor) -> Tensor:
    """``log(sigmoid(x)) = -softplus(-x)``, computed without overflow (floating input only)."""
    check_floating("logsigmoid", x)
    return LogSigmoidFunction.apply(x)


# --------------------------------------------------------------------------- composites
# Layers' formulas as PyTorch's functional forms: each one Function (one policy row, see
# ``_composite``) whose gradient and autocast behaviour come from the ops of its formula.
def _no_bool(op, x):
    if x.dtype.kind == "b":
        raise op_error(op, "bool input is not supported (as in PyTorch); cast it first",
                       shape=x.shape)


_Softsign = composite("softsign", lambda x: x / (_abs(x) + 1))
_Tanhshrink = composite("tanhshrink", lambda x: x - tanh(x))
_Softshrink = composite("softshrink", lambda x, lambd: where(
    (x >= -lambd) & (x <= lambd), 0.0, where(x > 0, x - lambd, x + lambd)))
_Hardshrink = composite("hardshrink", lambda x, lambd: where(
    (x >= -lambd) & (x <= lambd), 0.0, x))
_Threshold = composite("threshold", lambda x, threshold, value: where(
    x <= threshold, value, x))


class GLUFunction(Function):
    name = "glu"

    def forward(self, x, dim):
        self.save_for_backward(x)
        self.dim = dim
        xp = get_array_module(x)
        a, b = xp.split(x, 2, axis=dim)
        return narrow(wide(a) * sigmoid_array(wide(b)), x.dtype)

    def backward(self, gy):
        (x,) = self.saved_tensors
        a, b = split(x, 2, axis=self.dim)
        s = sigmoid(b)
        # PyTorch's order: s * (1 - s) first, so a huge ``a`` under a saturated gate gives 0
        # (not gy * a = inf times 0)
        return concat([gy * s, s * (1 - s) * gy * a], axis=self.dim)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """``x / (1 + |x|)``; an integer input gives a float result (PyTorch)."""
    _no_bool("softsign", input)
    return _Softsign.apply(input, kw={})


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """``x - tanh(x)``; an integer input gives a float result (PyTorch)."""
    _no_bool("tanhshrink", input)
    return _Tanhshrink.apply(input, kw={})


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 on ``[-lambd, lambd]``
    (gradient 0 there, NaN passes through, as PyTorch's). Floating input only."""
    check_floating("softshrink", input)
    if not lambd >= 0:
        raise op_error("softshrink", "lambd must be >= 0", lambd=lambd)
    return _Softshrink.apply(input, kw={"lambd": float(lambd)})


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``x`` where ``|x| > lambd``, else 0 (gradient 0 on ``[-lambd, lambd]``, NaN passes
    through, as PyTorch's). Floating input only."""
    check_floating("hardshrink", input)
    return _Hardshrink.apply(input, kw={"lambd": float(lambd)})


def threshold(input: Tensor, threshold: float, value: float,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """``value`` where ``x <= threshold``, else ``x`` (NaN passes through). An integer tensor
    keeps its dtype (``threshold`` and ``value`` truncated, as PyTorch). ``inplace`` is
    accepted for PyTorch compatibility; the result is always a new tensor."""
    _no_bool("threshold", input)
    if input.dtype.kind in "iu":
        threshold, value = int(threshold), int(value)
    return _Threshold.apply(input, kw={"threshold": threshold, "value": value})


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """Gated linear unit: ``a * sigmoid(b)``, ``a`` and ``b`` the halves of ``input`` along
    ``dim`` (whose size must be even). Floating input only."""
    check_floating("glu", input)
    if input.ndim == 0:
        raise op_error("glu", "glu does not support scalars because halving size must be even")
    dim = check_axis(dim, input.ndim, "glu")
    if input.shape[dim] % 2:
        raise op_error("glu", f"halving dimension must be even, but dimension {dim} is size "
                       f"{input.shape[dim]}", shape=input.shape)
    return GLUFunction.apply(input, dim=dim)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomised leaky ReLU: in training each negative element gets a slope drawn from
    ``U(lower, upper)``; otherwise the slope is ``(lower + upper) / 2`` (``leaky_relu``).
    ``inplace`` is accepted for PyTorch compatibility. Floating input only."""
    check_floating("rrelu", input)
    if not lower <= upper:
        raise op_error("rrelu", f"lower ({lower}) must not exceed upper ({upper})")
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    gen = _random.generator(device_of(input._data))
    slope = gen.random(input.shape, dtype=float32) * (upper - lower) + lower
    slope = const(slope.astype(input.dtype))
    return where(input > 0, input, input * slope)
