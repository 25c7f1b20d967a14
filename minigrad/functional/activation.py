"""Activations: ``relu``, ``leaky_relu``, ``prelu``, ``gelu``, ``silu``, ``sigmoid``, ``tanh``,
``softplus``, and the normalising ``softmax``/``log_softmax``.

The pointwise activations keep the input's dtype; gelu, silu, sigmoid and softplus compute
float16/bfloat16 in float32 and round once. Softmax and log-softmax subtract the row maximum and
accumulate in float32 (float64 for float64 input) whatever the input dtype (invariant 3), then
round the result to the input dtype: a float16 softmax over 4096 logits still sums to one. Every
backward is written with ops under ``create_graph=True``, so double backward (gradient
penalties, meta-learning) works.
"""

from __future__ import annotations

import math

from .._backend import get_array_module, kernels
from ..core.function import Function
from ..core.tensor import Tensor
from ._axes import check_axis
from ._utils import acc_dtype, check_floating, const, fast_backward, op_error, scalar_like, wide
from .elementwise import where
from .transcendental import erf, erf_array, exp

__all__ = ["gelu", "leaky_relu", "log_softmax", "prelu", "relu", "sigmoid", "silu", "softmax",
           "softplus", "tanh"]


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
    z = x.astype(acc_dtype(x.dtype), copy=False)
    if z.size == 0:  # an empty axis (or batch): an empty result, as in PyTorch
        return z.copy()
    e = xp.exp(z - z.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


def log_softmax_array(x, axis):
    """Max-subtracted log-softmax of an array in ``acc_dtype(x.dtype)``."""
    xp = get_array_module(x)
    z = x.astype(acc_dtype(x.dtype), copy=False)
    if z.size == 0:
        return z.copy()
    s = z - z.max(axis=axis, keepdims=True)
    s -= xp.log(xp.exp(s).sum(axis=axis, keepdims=True))
    return s


# --------------------------------------------------------------------------- pointwise
class TanhFunction(Function):
    name = "tanh"
    promote = "float"

    def forward(self, x):
        y = get_array_module(x).tanh(x)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        if fast_backward():
            return const(gy.data * (1 - y.data * y.data))
        return gy * (1 - y * y)


class SigmoidFunction(Function):
    name = "sigmoid"
    promote = "float"

    def forward(self, x):
        y = sigmoid_array(wide(x)).astype(x.dtype, copy=False)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        if fast_backward():
            return const(gy.data * (y.data * (1 - y.data)))
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
            return const(kernels.relu_grad(gy.data, y.data))
        return where(const(y.data <= 0), 0.0, gy)


class LeakyReLUFunction(Function):
    name = "leaky_relu"

    def forward(self, x, negative_slope):
        self.save_for_backward(x)
        self.negative_slope = negative_slope
        xp, zero = get_array_module(x), scalar_like(0, x)
        return xp.maximum(x, zero) + xp.minimum(x, zero) * scalar_like(negative_slope, x)

    def backward(self, gy):
        (x,) = self.saved_tensors
        k = self.negative_slope
        slope = (x.data > 0) * scalar_like(1 - k, gy.data) + scalar_like(k, gy.data)
        return gy * const(slope)


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
        return y.astype(x.dtype, copy=False)

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
            slope = (1 + t) * 0.5 + where(const(sech2.data == 0), 0.0, xw * 0.5 * sech2 * du)
            return gy * slope.astype(gy.dtype)
        if fast_backward():
            z = wide(x.data)
            xp = get_array_module(z)
            d = 0.5 * (1 + erf_array(z * (1 / math.sqrt(2.0)))) + \
                z * xp.exp(-0.5 * z * z) * (1 / math.sqrt(2 * math.pi))
            return const(gy.data * d.astype(gy.dtype, copy=False))
        cdf = (erf(x * (1 / math.sqrt(2.0))) + 1) * 0.5
        pdf = exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
        return gy * (cdf + x * pdf)


class SiLUFunction(Function):
    name = "silu"
    promote = "float"

    def forward(self, x):
        self.save_for_backward(x)
        z = wide(x)
        return (z * sigmoid_array(z)).astype(x.dtype, copy=False)

    def backward(self, gy):
        (x,) = self.saved_tensors
        if fast_backward():
            z = wide(x.data)
            s = sigmoid_array(z)
            return const(gy.data * (s * (1 + z * (1 - s))).astype(gy.dtype, copy=False))
        s = sigmoid(x)
        return gy * (s * (1 + x * (1 - s)))


class Softplus(Function):
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
        return xp.where(z > threshold, w, soft).astype(x.dtype, copy=False)

    def backward(self, gy):
        (x,) = self.saved_tensors
        z = wide(x.data) * self.beta
        linear = z > self.threshold
        if fast_backward():
            s = sigmoid_array(z)
            s = get_array_module(s).where(linear, 1, s)
            return const(gy.data * s.astype(gy.dtype, copy=False))
        return gy * where(const(linear), 1.0, sigmoid(x * self.beta))


class PReLUFunction(Function):
    name = "prelu"

    def forward(self, x, w):
        if w.size != 1 and (x.ndim < 2 or w.ndim != 1 or x.shape[1] != w.size):
            raise op_error("prelu", "weight must have 1 element or one per channel (axis 1)",
                           x_shape=x.shape, weight_shape=w.shape)
        self.save_for_backward(x, w)
        wb = w.reshape(self._wshape(x, w))
        xp, zero = get_array_module(x), scalar_like(0, x)
        return xp.maximum(x, zero) + xp.minimum(x, zero) * wb

    @staticmethod
    def _wshape(x, w):
        if w.size == 1 or x.ndim < 2:  # one weight: a 0-d one, so a 0-d x stays 0-d
            return ()
        return (1, -1) + (1,) * (x.ndim - 2)

    def backward(self, gy):
        x, w = self.saved_tensors
        pos = const((x.data > 0).astype(gy.dtype))
        wb = w.reshape(self._wshape(x, w)) if w.size != 1 else w.reshape(())
        nx, nw = self.needs_input_grad
        gx = gy * (pos + (1 - pos) * wb) if nx else None
        gw = None
        if nw:
            gw = gy * x * (1 - pos)
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
    return Softplus.apply(x, beta=beta, threshold=threshold)


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """Parametric ReLU: ``weight`` (1 or C elements) scales negatives, per channel (axis 1)."""
    return PReLUFunction.apply(x, weight)


# --------------------------------------------------------------------------- softmax family
class SoftmaxFunction(Function):
    name = "softmax"

    def forward(self, x, axis):
        check_floating("softmax", x)
        self.axis = axis
        y = softmax_array(x, axis).astype(x.dtype, copy=False)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return y * (gy - (gy * y).sum(self.axis, keepdims=True))


class LogSoftmax(Function):
    name = "log_softmax"

    def forward(self, x, axis):
        check_floating("log_softmax", x)
        self.axis = axis
        y = log_softmax_array(x, axis).astype(x.dtype, copy=False)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy - y.exp() * gy.sum(self.axis, keepdims=True)


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """Softmax along ``axis``, max-subtracted and accumulated in float32.

    Args:
        x: floating Tensor (float16/bfloat16 are computed in float32 and rounded back).
        axis: the axis that sums to one.

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    return SoftmaxFunction.apply(x, axis=_axis(x, axis, "softmax"))


def _axis(x, axis, op):
    # A 0-d input normalises over its one element (None: NumPy has no axis 0 there).
    return check_axis(axis, x.ndim, op) if x.ndim else None


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """``log(softmax(x))`` computed stably (``x - max - log(sum(exp(x - max)))``) in float32.

    Args:
        x: floating Tensor.
        axis: the normalised axis.

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    return LogSoftmax.apply(x, axis=_axis(x, axis, "log_softmax"))
