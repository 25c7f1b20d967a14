"""Elementwise ops: arithmetic, transcendental functions, activations, comparisons.

Binary ops take Tensors or Python scalars on either side; dtypes promote as in PyTorch
(``Function.promote``: int64 with float16 -> float16; exp/div of integers -> float32), and a
Python scalar never widens a float tensor (NumPy 2 treats it as weakly typed; bfloat16 is lifted
by hand). Broadcast gradients are summed back to each input's shape. Backward passes use ops under
``create_graph=True`` (so higher derivatives work) and one fused array expression otherwise.
"""

from __future__ import annotations

import math

from .._backend import get_array_module, kernels
from .._backend.dtypes import float32, float64
from ..core.function import Function
from ..core.modes import grad_enabled
from ..core.tensor import Tensor
from ._utils import (
    as_operand,
    blockwise,
    broadcast_shape,
    check_floating,
    const,
    fast_backward,
    lift_scalar,
    op_error,
    owned_for_backward,
    shape_of,
    sum_to_shape,
)

__all__ = [
    "abs",
    "add",
    "clip",
    "cos",
    "div",
    "equal",
    "erf",
    "exp",
    "expm1",
    "gelu",
    "greater",
    "greater_equal",
    "isfinite",
    "isinf",
    "isnan",
    "leaky_relu",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "maximum",
    "minimum",
    "mul",
    "neg",
    "not_equal",
    "pow",
    "prelu",
    "relu",
    "rsqrt",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "softplus",
    "sqrt",
    "square",
    "sub",
    "tanh",
    "where",
]


def _pair(a, b):
    """Type a Python scalar after its array partner (only matters for bfloat16)."""
    if type(a) is type(b):  # two arrays: the common case, nothing to do
        return a, b
    if not hasattr(a, "dtype"):
        return lift_scalar(a, b), b
    if not hasattr(b, "dtype"):
        return a, lift_scalar(b, a)
    return a, b


def _typed(value, like):
    """``value`` as a scalar of ``like``'s dtype (keeps bfloat16/float16 from widening)."""
    return like.dtype.type(value)


def _wide(x):
    """``x`` in float32 (float64 stays): NumPy's float16/bfloat16 math is slow and imprecise."""
    return x if x.dtype == float64 or x.dtype == float32 else x.astype(float32)


# --------------------------------------------------------------------------- arithmetic
class Add(Function):
    name = "add"
    promote = "common"

    def forward(self, a, b):
        a, b = _pair(a, b)
        return a + b

    def backward(self, gy):
        a, b = self.inputs
        na, nb = self.needs_input_grad
        return (sum_to_shape(gy, a.shape) if na else None,
                sum_to_shape(gy, b.shape) if nb else None)


class Sub(Function):
    name = "sub"
    promote = "common"

    def forward(self, a, b):
        a, b = _pair(a, b)
        return a - b

    def backward(self, gy):
        a, b = self.inputs
        na, nb = self.needs_input_grad
        return (sum_to_shape(gy, a.shape) if na else None,
                sum_to_shape(-gy, b.shape) if nb else None)


class Mul(Function):
    name = "mul"
    promote = "common"

    def forward(self, a, b):
        a, b = _pair(a, b)
        self.save_for_backward(a, b)
        return a * b

    def backward(self, gy):
        na, nb = self.needs_input_grad
        a, b = self.saved_tensors_used(nb, na)  # each factor only for the other's gradient
        return (sum_to_shape(gy * b, a.shape) if na else None,
                sum_to_shape(gy * a, b.shape) if nb else None)


class Div(Function):
    name = "div"
    promote = "float"

    def forward(self, a, b):
        a, b = _pair(a, b)
        self.save_for_backward(a, b)
        return a / b

    def backward(self, gy):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        ga = gy / b
        return (sum_to_shape(ga, shape_of(a)) if na else None,
                sum_to_shape(-ga * a / b, shape_of(b)) if nb else None)


class Neg(Function):
    name = "neg"

    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


def _int_array(x) -> bool:
    return getattr(x, "ndim", 0) > 0 and x.dtype.kind in "iu"


def _int_pow(a, b):
    """Integer ``a ** b`` with an integer exponent tensor: a negative exponent gives what
    PyTorch gives (1 for a base of 1, +-1 for -1, else 0) instead of NumPy's ValueError."""
    xp = get_array_module(a if hasattr(a, "shape") else b)
    neg = b < 0
    if not neg.any():  # the common case: no negative exponent
        return a ** b
    pos = a ** xp.where(neg, 0, b)
    one, minus = a == 1, a == -1
    small = xp.where(one, 1, xp.where(minus, xp.where(b % 2 == 0, 1, -1), 0))
    return xp.where(neg, small, pos).astype(pos.dtype, copy=False)


class Pow(Function):
    name = "pow"
    promote = "common"

    def forward(self, a, b):
        a, b = _pair(a, b)
        y = _int_pow(a, b) if _int_array(b) and (_int_array(a) or type(a) is int) else a ** b
        self.save_for_backward(a, b, y)
        return y

    def backward(self, gy):
        a, b, y = self.saved_tensors
        na, nb = self.needs_input_grad
        ga = gb = None
        if na:
            if not isinstance(b, Tensor):  # tensor ** scalar: the hot case (x ** 2)
                if b == 0:
                    ga = gy * 0
                elif b == 2:
                    ga = gy * (a * 2)
                elif fast_backward():
                    ga = const(gy.data * (b * a.data ** (b - 1)))
                else:
                    ga = gy * (pow(a, b - 1) * b)
            else:  # b * a^(b-1) is 0 * inf at a == b == 0: PyTorch's derivative there is 0
                ga = sum_to_shape(gy * where(const(b.data == 0), 0.0, b * pow(a, b - 1)),
                                  a.shape)
        if nb:
            # d(a**b)/db = a**b * log(a); a == 0 contributes 0 (as in PyTorch), not 0 * -inf.
            if isinstance(a, Tensor):
                zero = const(a.data == 0)
                log_a = log(where(zero, 1.0, a))
            else:  # a Python number: log(0) -> 0 as above, log(negative) -> nan
                log_a = math.log(a) if a > 0 else (0.0 if a == 0 else math.nan)
            gb = sum_to_shape(gy * y * log_a, b.shape)
        return ga, gb


def _binary(cls, a, b):
    if isinstance(a, Tensor) and isinstance(b, Tensor):  # fast path of every Tensor operator
        return cls.apply(a, b)
    a = as_operand(a, cls.name)
    b = as_operand(b, cls.name)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{cls.name}: at least one argument must be a Tensor")
    return cls.apply(a, b)


def add(a, b) -> Tensor:
    """``a + b`` with broadcasting."""
    return _binary(Add, a, b)


def sub(a, b) -> Tensor:
    """``a - b`` with broadcasting (a bool tensor is refused, as in PyTorch)."""
    _no_bool("sub", "subtraction", a, b)
    return _binary(Sub, a, b)


def _no_bool(op, what, *xs):
    for x in xs:
        if isinstance(x, bool) or isinstance(x, Tensor) and x.dtype.kind == "b":
            raise op_error(op, f"{what} of a bool tensor or scalar is not supported (as in "
                           "PyTorch); to invert a mask use logical_not, else cast it first")


def mul(a, b) -> Tensor:
    """``a * b`` with broadcasting."""
    return _binary(Mul, a, b)


def div(a, b) -> Tensor:
    """``a / b`` (true division) with broadcasting."""
    return _binary(Div, a, b)


def neg(x: Tensor) -> Tensor:
    """``-x`` (a bool tensor is refused, as in PyTorch)."""
    _no_bool("neg", "negation", x)
    return Neg.apply(x)


def pow(x, exponent) -> Tensor:
    """``x ** exponent``; either side may be the Tensor, the other a Tensor or Python number.

    The gradient with respect to the exponent is ``x ** exponent * log(x)``, taken as 0 where
    ``x == 0``. A bool tensor raised to a bool tensor is refused, as in PyTorch (NumPy would
    give int8).
    """
    if isinstance(exponent, Tensor) and exponent.dtype.kind == "b":
        _no_bool("pow", "a power of bool tensors", x)
    return _binary(Pow, x, exponent)


# --------------------------------------------------------------------------- unary math
class Exp(Function):
    name = "exp"
    promote = "float"

    def forward(self, x):
        y = get_array_module(x).exp(x)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy * y


class Log(Function):
    name = "log"
    promote = "float"

    def forward(self, x):
        self.save_for_backward(x)
        return get_array_module(x).log(x)

    def backward(self, gy):
        (x,) = self.saved_tensors
        return gy / x


class Log1p(Function):
    name = "log1p"
    promote = "float"

    def forward(self, x):
        self.save_for_backward(x)
        return get_array_module(x).log1p(x)

    def backward(self, gy):
        (x,) = self.saved_tensors
        return gy / (x + 1)


class Expm1(Function):
    name = "expm1"
    promote = "float"

    def forward(self, x):
        y = get_array_module(x).expm1(x)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy * (y + 1)


class Sqrt(Function):
    name = "sqrt"
    promote = "float"

    def forward(self, x):
        y = get_array_module(x).sqrt(x)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy / (y * 2)


class Rsqrt(Function):
    name = "rsqrt"
    promote = "float"

    def forward(self, x):
        xp = get_array_module(x)
        y = xp.reciprocal(xp.sqrt(x))
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy * (y * y * y) * -0.5


class Square(Function):
    name = "square"

    def forward(self, x):
        self.save_for_backward(x)
        return x * x

    def backward(self, gy):
        (x,) = self.saved_tensors
        return gy * (x * 2)


class Abs(Function):
    name = "abs"

    def forward(self, x):
        self.save_for_backward(x)
        return get_array_module(x).abs(x)

    def backward(self, gy):
        (x,) = self.saved_tensors
        # sign is piecewise constant: a constant keeps double backward exact (and cheap).
        return gy * const(get_array_module(x.data).sign(x.data))


class Sign(Function):
    name = "sign"

    def forward(self, x):
        if x.dtype.kind == "b":  # NumPy has no bool sign; PyTorch returns the bools
            return x.copy()
        return get_array_module(x).sign(x)

    def backward(self, gy):
        return None  # zero almost everywhere: no gradient flows


class Sin(Function):
    name = "sin"
    promote = "float"

    def forward(self, x):
        self.save_for_backward(x)
        return get_array_module(x).sin(x)

    def backward(self, gy):
        (x,) = self.saved_tensors
        return gy * cos(x)


class Cos(Function):
    name = "cos"
    promote = "float"

    def forward(self, x):
        self.save_for_backward(x)
        return get_array_module(x).cos(x)

    def backward(self, gy):
        (x,) = self.saved_tensors
        return -gy * sin(x)


def exp(x: Tensor) -> Tensor:
    """``e ** x``."""
    return Exp.apply(x)


def log(x: Tensor) -> Tensor:
    """Natural logarithm."""
    return Log.apply(x)


def log1p(x: Tensor) -> Tensor:
    """``log(1 + x)``, accurate for small ``x``."""
    return Log1p.apply(x)


def expm1(x: Tensor) -> Tensor:
    """``exp(x) - 1``, accurate for small ``x``."""
    return Expm1.apply(x)


def sqrt(x: Tensor) -> Tensor:
    """Square root."""
    return Sqrt.apply(x)


def rsqrt(x: Tensor) -> Tensor:
    """``1 / sqrt(x)``."""
    return Rsqrt.apply(x)


def square(x: Tensor) -> Tensor:
    """``x * x`` (bool input squares as int64, PyTorch's result)."""
    if x.dtype.kind == "b":
        from ..core.cast import cast

        x = cast(x, "int64")
    return Square.apply(x)


def abs(x: Tensor) -> Tensor:
    """Absolute value (gradient ``sign(x)``, 0 at 0); a bool tensor is refused (PyTorch)."""
    _no_bool("abs", "the absolute value", x)
    return Abs.apply(x)


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 elementwise. Not differentiable: no gradient flows through it."""
    return Sign.apply(x)


def sin(x: Tensor) -> Tensor:
    """Sine."""
    return Sin.apply(x)


def cos(x: Tensor) -> Tensor:
    """Cosine."""
    return Cos.apply(x)


# --------------------------------------------------------------------------- min/max/where
class Maximum(Function):
    name = "maximum"
    promote = "common"
    _pick = "maximum"

    def forward(self, a, b):
        a, b = _pair(a, b)
        self.save_for_backward(a, b)
        return getattr(get_array_module(a if hasattr(a, "dtype") else b), self._pick)(a, b)

    def backward(self, gy):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        a_, b_ = getattr(a, "data", a), getattr(b, "data", b)
        # Share of the gradient that goes to ``a``: 1 where it wins, 1/2 on ties (PyTorch).
        wins = (a_ > b_) if self._pick == "maximum" else (a_ < b_)
        share = const(get_array_module(gy.data).asarray(wins + 0.5 * (a_ == b_), gy.dtype))
        return (sum_to_shape(gy * share, a.shape) if na else None,
                sum_to_shape(gy * (1 - share), b.shape) if nb else None)


class Minimum(Maximum):
    name = "minimum"
    _pick = "minimum"


class Clip(Function):
    name = "clip"

    def forward(self, x, lower, upper):
        self.save_for_backward(x)
        self.lower, self.upper = lower, upper
        return kernels.clamp(x, lower, upper)

    def backward(self, gy):
        (x,) = self.saved_tensors
        x = x.data
        keep = None if self.lower is None else x >= self.lower
        if self.upper is not None:
            keep = (x <= self.upper) if keep is None else keep & (x <= self.upper)
        if fast_backward():
            return const(gy.data * keep)
        return gy * const(keep.astype(gy.dtype))


class Where(Function):
    name = "where"
    promote = "common"
    promote_skip = 1  # the condition is not an operand

    def forward(self, cond, a, b):
        xp = get_array_module(cond)
        if not hasattr(a, "dtype") and not hasattr(b, "dtype"):
            dt = float32 if isinstance(a, float) or isinstance(b, float) else None
            a, b = xp.asarray(a, dtype=dt), xp.asarray(b, dtype=dt)
        a, b = _pair(a, b)
        self.cond = cond
        return xp.where(cond, a, b)

    def backward(self, gy):
        _, a, b = self.inputs
        _, na, nb = self.needs_input_grad
        xp = get_array_module(gy.data)
        zero = _typed(0, gy.data)
        ga = gb = None
        if fast_backward():
            if na:
                ga = sum_to_shape(const(xp.where(self.cond, gy.data, zero)), a.shape)
            if nb:
                gb = sum_to_shape(const(xp.where(self.cond, zero, gy.data)), b.shape)
        else:
            c = const(self.cond)
            if na:
                ga = sum_to_shape(where(c, gy, 0.0), a.shape)
            if nb:
                gb = sum_to_shape(where(c, 0.0, gy), b.shape)
        return None, ga, gb


def maximum(a, b) -> Tensor:
    """Elementwise maximum with broadcasting; ties split the gradient equally."""
    return _binary(Maximum, a, b)


def minimum(a, b) -> Tensor:
    """Elementwise minimum with broadcasting; ties split the gradient equally."""
    return _binary(Minimum, a, b)


def clip(x: Tensor, lower=None, upper=None) -> Tensor:
    """Clamp ``x`` to ``[lower, upper]`` (either bound may be None, or a Tensor).

    The gradient passes where ``lower <= x <= upper`` (bounds included, as in PyTorch).
    """
    if lower is None and upper is None:
        raise op_error("clip", "at least one of lower and upper must be given")
    if isinstance(lower, Tensor) or isinstance(upper, Tensor):
        y = x if lower is None else maximum(x, lower)
        return y if upper is None else minimum(y, upper)
    if x.dtype.kind in "biu":
        # PyTorch's promotion with the bounds: a float bound makes an integer or bool tensor
        # float32 (never a clamp truncated to integers), an integer bound makes bool int64.
        floats = any(isinstance(b, float) and not isinstance(b, bool) for b in (lower, upper))
        if floats or x.dtype.kind == "b":
            from ..core.cast import cast

            x = cast(x, float32 if floats else "int64")
    return Clip.apply(x, lower=lower, upper=upper)


def where(cond, a, b) -> Tensor:
    """``a`` where ``cond`` is true, else ``b`` (broadcasting; a/b Tensors or Python numbers).

    Args:
        cond: a bool Tensor (or array).
        a: values where ``cond`` holds.
        b: values elsewhere.
    """
    needed = grad_enabled.get() and any(isinstance(t, Tensor) and t.requires_grad
                                        for t in (a, b))
    c = owned_for_backward(cond, needed)
    if not hasattr(c, "dtype"):
        ref = a if isinstance(a, Tensor) else b
        c = get_array_module(ref.data).asarray(c) if isinstance(ref, Tensor) else c
    if getattr(c, "dtype", None) is not None and c.dtype.kind != "b":
        c = c.astype(bool)
    a, b = as_operand(a, "where"), as_operand(b, "where")
    return Where.apply(const(c), a, b)


# --------------------------------------------------------------------------- activations
def _sigmoid_array(x):
    # exp(min(x, 0)) / (1 + exp(-|x|)) equals 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) below: no
    # exponent is ever positive (no overflow warnings), tiny results keep their relative
    # precision, and there is no ``where`` (NumPy's is ~50x slower than arithmetic on random
    # masks, through branch misprediction).
    xp = get_array_module(x)
    zero, one = _typed(0, x), _typed(1, x)
    return xp.exp(xp.minimum(x, zero)) / (one + xp.exp(-xp.abs(x)))


class Tanh(Function):
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


class Sigmoid(Function):
    name = "sigmoid"
    promote = "float"

    def forward(self, x):
        y = _sigmoid_array(_wide(x)).astype(x.dtype, copy=False)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        if fast_backward():
            return const(gy.data * (y.data * (1 - y.data)))
        return gy * (y * (1 - y))


class ReLU(Function):
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


class LeakyReLU(Function):
    name = "leaky_relu"

    def forward(self, x, negative_slope):
        self.save_for_backward(x)
        self.negative_slope = negative_slope
        xp, zero = get_array_module(x), _typed(0, x)
        return xp.maximum(x, zero) + xp.minimum(x, zero) * _typed(negative_slope, x)

    def backward(self, gy):
        (x,) = self.saved_tensors
        k = self.negative_slope
        slope = (x.data > 0) * _typed(1 - k, gy.data) + _typed(k, gy.data)
        return gy * const(slope)


class GELU(Function):
    name = "gelu"
    promote = "float"
    _K = math.sqrt(2.0 / math.pi)

    def forward(self, x, approximate):
        self.approximate = approximate
        self.save_for_backward(x)
        xp = get_array_module(x)
        z = _wide(x)
        if approximate == "tanh":
            y = 0.5 * z * (1 + xp.tanh(self._K * (z + 0.044715 * z * z * z)))
        else:
            y = 0.5 * z * (1 + _erf_array(z * (1 / math.sqrt(2.0))))
        return y.astype(x.dtype, copy=False)

    def backward(self, gy):
        (x,) = self.saved_tensors
        if self.approximate == "tanh":
            # In float32 (x**3 overflows float16 from |x| ~ 40), and where tanh has saturated the
            # x * sech^2 * du term is 0, not inf * 0 (PyTorch's derivative there is 0 or 1).
            xw = _wide(x)
            u = (xw + xw * xw * xw * 0.044715) * self._K
            t = tanh(u)
            sech2 = 1 - t * t
            du = (xw * xw * (3 * 0.044715) + 1) * self._K
            slope = (1 + t) * 0.5 + where(const(sech2.data == 0), 0.0, xw * 0.5 * sech2 * du)
            return gy * slope.astype(gy.dtype)
        if fast_backward():
            z = _wide(x.data)
            xp = get_array_module(z)
            d = 0.5 * (1 + _erf_array(z * (1 / math.sqrt(2.0)))) + \
                z * xp.exp(-0.5 * z * z) * (1 / math.sqrt(2 * math.pi))
            return const(gy.data * d.astype(gy.dtype, copy=False))
        cdf = (erf(x * (1 / math.sqrt(2.0))) + 1) * 0.5
        pdf = exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
        return gy * (cdf + x * pdf)


class SiLU(Function):
    name = "silu"
    promote = "float"

    def forward(self, x):
        self.save_for_backward(x)
        z = _wide(x)
        return (z * _sigmoid_array(z)).astype(x.dtype, copy=False)

    def backward(self, gy):
        (x,) = self.saved_tensors
        if fast_backward():
            z = _wide(x.data)
            s = _sigmoid_array(z)
            return const(gy.data * (s * (1 + z * (1 - s))).astype(gy.dtype, copy=False))
        s = sigmoid(x)
        return gy * (s * (1 + x * (1 - s)))


class Softplus(Function):
    name = "softplus"
    promote = "float"

    def forward(self, x, beta, threshold):
        xp = get_array_module(x)
        w = _wide(x)
        z = w * beta
        self.save_for_backward(x)
        self.beta, self.threshold = beta, threshold
        # log(1 + e^z) = max(z, 0) + log1p(e^-|z|): no overflow for large |z|.
        soft = (xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))) / beta
        return xp.where(z > threshold, w, soft).astype(x.dtype, copy=False)

    def backward(self, gy):
        (x,) = self.saved_tensors
        z = _wide(x.data) * self.beta
        linear = z > self.threshold
        if fast_backward():
            s = _sigmoid_array(z)
            s = get_array_module(s).where(linear, 1, s)
            return const(gy.data * s.astype(gy.dtype, copy=False))
        return gy * where(const(linear), 1.0, sigmoid(x * self.beta))


class PReLU(Function):
    name = "prelu"

    def forward(self, x, w):
        if w.size != 1 and (x.ndim < 2 or w.ndim != 1 or x.shape[1] != w.size):
            raise op_error("prelu", "weight must have 1 element or one per channel (axis 1)",
                           x_shape=x.shape, weight_shape=w.shape)
        self.save_for_backward(x, w)
        wb = w.reshape(self._wshape(x, w))
        xp, zero = get_array_module(x), _typed(0, x)
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
    return Tanh.apply(x)


def sigmoid(x: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``, computed without overflow for large ``|x|``."""
    return Sigmoid.apply(x)


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)`` (gradient 0 at 0)."""
    return ReLU.apply(x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise."""
    check_floating("leaky_relu", x)  # as PyTorch: a slope times an integer is no integer
    return LeakyReLU.apply(x, negative_slope=negative_slope)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit ``x * Phi(x)``.

    Args:
        x: input.
        approximate: ``"none"`` (exact, via :func:`erf`) or ``"tanh"`` (the GPT-2 formula).
    """
    if approximate not in ("none", "tanh"):
        raise op_error("gelu", f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return GELU.apply(x, approximate=approximate)


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` (a.k.a. swish)."""
    return SiLU.apply(x)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``; never overflows."""
    return Softplus.apply(x, beta=beta, threshold=threshold)


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """Parametric ReLU: ``weight`` (1 or C elements) scales negatives, per channel (axis 1)."""
    return PReLU.apply(x, weight)


# --------------------------------------------------------------------------- erf
# erf without SciPy, one body for NumPy and CuPy. Two regimes:
#   |x| < 0.5: Maclaurin series x * sum_n c_n x^(2n), truncated where terms < 1e-16 relative.
#   |x| >= 0.5: erfc(x) = t * exp(-x^2 + P(t)), t = 1 / (1 + x/2), with P a degree-18 Chebyshev
#   least-squares fit (in t over x in [0.5, 26.2]) of log(erfc(x) / t) + x^2, made against
#   math.erfc; for x > 26.2 erfc underflows and erf == 1.
# Measured max relative error of erf against math.erf over a 3e5-point grid: 2.3e-15 (float64).
# float32/float16/bfloat16 inputs are evaluated in float32 with truncated expansions (11
# Chebyshev terms, 7 series terms: dropped terms < 5e-9), i.e. about float32 round-off.
_ERF_SERIES = (
    1.1283791670955126, -0.37612638903183754, 0.11283791670955126, -0.026866170645131252,
    0.005223977625442188, -0.0008548327023450852, 0.00012055332981789664,
    -1.492565035840625e-05, 1.6462114365889246e-06, -1.6365844691234924e-07,
    1.4807192815879218e-08, -1.2290555301717926e-09)
_ERFC_CHEB = (
    -0.742062260554924, 0.4688785733423456, 0.01521604030695505, -0.0035407797199814668,
    -0.0004388299053620404, 6.875280070367556e-05, 1.3362561525792202e-05,
    -2.100879216991314e-06, -4.2982211885539266e-07, 8.401848096076688e-08,
    1.3259029704653059e-08, -3.7714300971806336e-09, -3.2289937772048997e-10,
    1.689953134275217e-10, 1.1704177092382052e-12, -6.8710935188433545e-12,
    5.460561686623539e-13, 2.2265977023937694e-13, -4.4707085175876647e-14)
_T_MIN, _T_MAX = 1 / (1 + 26.2 / 2), 0.8


def _erf_array(x):
    return blockwise(_erf_block, x)


def _erf_block(x):
    # In-place updates throughout: each fresh 1M-element temporary costs more than the
    # arithmetic itself, and this runs ~40 passes.
    xp = get_array_module(x)
    wide = x.dtype == float64
    z = x.astype(float64 if wide else float32)  # always a copy: reused as a buffer below
    series = _ERF_SERIES if wide else _ERF_SERIES[:7]
    cheb = _ERFC_CHEB if wide else _ERFC_CHEB[:11]
    a = xp.abs(z)
    m = a < 0.5
    # Series part (Horner in x^2), on x clamped to the series range so it stays finite.
    zc = xp.clip(z, -0.5, 0.5)
    s = zc * zc
    small = xp.full_like(z, series[-1])
    for c in series[-2::-1]:
        small *= s
        small += c
    small *= zc
    # Chebyshev part (Clenshaw); clamp t so tiny |x| stays inside the fitted range.
    t = xp.maximum(a, 0.5)
    t *= 0.5
    t += 1
    xp.reciprocal(t, out=t)
    u = xp.maximum(t, _T_MIN)
    u -= _T_MIN
    u *= 2 / (_T_MAX - _T_MIN)
    u -= 1
    u2 = u * 2
    b1, b2, tmp = xp.zeros_like(u), xp.zeros_like(u), s  # s is free again
    for c in cheb[:0:-1]:
        xp.multiply(u2, b1, out=tmp)
        tmp -= b2
        tmp += c
        b1, b2, tmp = tmp, b1, b2
    xp.multiply(u, b1, out=tmp)
    tmp -= b2
    tmp += cheb[0]
    # erfc = t * exp(P - x^2); erf = sign(x) * (1 - erfc)
    xp.minimum(a, 27.0, out=a)
    a *= a
    tmp -= a
    xp.exp(tmp, out=tmp)
    tmp *= t
    xp.subtract(1, tmp, out=tmp)
    xp.copysign(tmp, z, out=tmp)
    # Blend by multiplication, exact because both parts are finite (where() is slow on NumPy).
    small *= m
    xp.logical_not(m, out=m)
    tmp *= m
    tmp += small
    return tmp.astype(x.dtype, copy=False)


class Erf(Function):
    name = "erf"
    promote = "float"

    def forward(self, x):
        self.save_for_backward(x)
        return _erf_array(x)

    def backward(self, gy):
        (x,) = self.saved_tensors
        k = 2 / math.sqrt(math.pi)
        if fast_backward():
            xd = x.data
            return const(gy.data * (get_array_module(xd).exp(-xd * xd) * _typed(k, xd)))
        return gy * (exp(x * x * -1.0) * k)


def erf(x: Tensor) -> Tensor:
    """The error function; relative error about 2e-15 in float64 (see ``_erf_array``)."""
    return Erf.apply(x)


# --------------------------------------------------------------------------- comparisons
class _NoGrad(Function):
    """Base of ops whose outputs carry no gradient (bool results)."""

    def backward(self, *grads):
        return (None,) * len(self.inputs)


def _compare(name, ufunc):
    class Compare(_NoGrad):
        def forward(self, a, b):
            a, b = _pair(a, b)
            try:
                return getattr(get_array_module(a if hasattr(a, "dtype") else b), ufunc)(a, b)
            except ValueError:
                # The logical ops promote nothing, so Function.apply's broadcast message (for
                # promoting ops) does not reach them: name the op and both shapes here.
                broadcast_shape(self.name, getattr(a, "shape", ()), getattr(b, "shape", ()))
                raise

    Compare.name = name
    if not name.startswith("logical"):
        Compare.promote = "common"
    Compare.__name__ = Compare.__qualname__ = "".join(p.title() for p in name.split("_"))
    return Compare


def _unary_test(name, ufunc):
    class Test(_NoGrad):
        def forward(self, x):
            return getattr(get_array_module(x), ufunc)(x)

    Test.name = name
    Test.__name__ = Test.__qualname__ = "".join(p.title() for p in name.split("_"))
    return Test


Equal = _compare("equal", "equal")
NotEqual = _compare("not_equal", "not_equal")
Less = _compare("less", "less")
LessEqual = _compare("less_equal", "less_equal")
Greater = _compare("greater", "greater")
GreaterEqual = _compare("greater_equal", "greater_equal")
LogicalAnd = _compare("logical_and", "logical_and")
LogicalOr = _compare("logical_or", "logical_or")
LogicalNot = _unary_test("logical_not", "logical_not")
IsFinite = _unary_test("isfinite", "isfinite")
IsNaN = _unary_test("isnan", "isnan")
IsInf = _unary_test("isinf", "isinf")


def equal(a, b) -> Tensor:
    """``a == b`` elementwise, as a bool Tensor (no gradient)."""
    return _binary(Equal, a, b)


def not_equal(a, b) -> Tensor:
    """``a != b`` elementwise, as a bool Tensor."""
    return _binary(NotEqual, a, b)


def less(a, b) -> Tensor:
    """``a < b`` elementwise, as a bool Tensor."""
    return _binary(Less, a, b)


def less_equal(a, b) -> Tensor:
    """``a <= b`` elementwise, as a bool Tensor."""
    return _binary(LessEqual, a, b)


def greater(a, b) -> Tensor:
    """``a > b`` elementwise, as a bool Tensor."""
    return _binary(Greater, a, b)


def greater_equal(a, b) -> Tensor:
    """``a >= b`` elementwise, as a bool Tensor."""
    return _binary(GreaterEqual, a, b)


def logical_and(a, b) -> Tensor:
    """Elementwise logical and (nonzero is true), as a bool Tensor."""
    return _binary(LogicalAnd, a, b)


def logical_or(a, b) -> Tensor:
    """Elementwise logical or, as a bool Tensor."""
    return _binary(LogicalOr, a, b)


def logical_not(x: Tensor) -> Tensor:
    """Elementwise logical not, as a bool Tensor."""
    return LogicalNot.apply(x)


def isfinite(x: Tensor) -> Tensor:
    """True where ``x`` is neither inf nor NaN."""
    return IsFinite.apply(x)


def isnan(x: Tensor) -> Tensor:
    """True where ``x`` is NaN."""
    return IsNaN.apply(x)


def isinf(x: Tensor) -> Tensor:
    """True where ``x`` is +inf or -inf."""
    return IsInf.apply(x)

