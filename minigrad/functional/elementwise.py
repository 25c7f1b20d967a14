"""Elementwise arithmetic, selection and comparison.

Arithmetic: ``add``, ``sub``, ``mul``, ``div``, ``neg``, ``pow``, ``square``, ``sqrt``, ``rsqrt``,
``reciprocal``, ``abs``, ``sign``, and the fused ``addcmul``/``addcdiv``. Selection: ``maximum``,
``minimum``, ``clip``, ``where``. Comparison and logic (bool results, no gradient): ``equal``,
``less``, ..., ``logical_and``/``or``/``not``, ``isfinite``/``isnan``/``isinf``. Exponentials,
logarithms, trigonometric and error functions are in ``transcendental``; activations in
``activation``.

Binary ops take Tensors or Python scalars on either side; dtypes promote as in PyTorch
(``Function.promote``: int64 with float16 -> float16; div of integers -> float32), and a
Python scalar never widens a float tensor (NumPy 2 treats it as weakly typed; bfloat16 is lifted
by hand). Broadcast gradients are summed back to each input's shape. Backward passes use ops under
``create_graph=True`` (so higher derivatives work) and one fused array expression otherwise.
"""

from __future__ import annotations

import math

from .._backend import get_array_module, kernels
from .._backend.dtypes import float32
from ..core.cast import cast
from ..core.function import Function
from ..core.modes import grad_enabled
from ..core.tensor import Tensor
from ._composite import composite
from ._utils import (
    WideUnary,
    as_operand,
    broadcast_shape,
    const,
    fast_backward,
    lift_scalar,
    op_error,
    owned_for_backward,
    scalar_like,
    shape_of,
    sum_to_shape,
)

__all__ = [
    "abs",
    "add",
    "addcdiv",
    "addcmul",
    "clip",
    "div",
    "equal",
    "greater",
    "greater_equal",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "logical_and",
    "logical_not",
    "logical_or",
    "maximum",
    "minimum",
    "mul",
    "neg",
    "not_equal",
    "pow",
    "reciprocal",
    "rsqrt",
    "sign",
    "sqrt",
    "square",
    "sub",
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
                # log as the Tensor method (``transcendental`` builds on this module)
                log_a = where(zero, 1.0, a).log()
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


# --------------------------------------------------------------------------- roots, powers, signs
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


class Reciprocal(WideUnary):
    name = "reciprocal"
    keep = "y"
    f = staticmethod(lambda xp, x: xp.reciprocal(x))

    def backward(self, gy):
        (y,) = self.saved_tensors
        return -gy * (y * y)


def sqrt(x: Tensor) -> Tensor:
    """Square root."""
    return Sqrt.apply(x)


def rsqrt(x: Tensor) -> Tensor:
    """``1 / sqrt(x)``."""
    return Rsqrt.apply(x)


def square(x: Tensor) -> Tensor:
    """``x * x`` (bool input squares as int64, PyTorch's result)."""
    if x.dtype.kind == "b":
        x = cast(x, "int64")
    return Square.apply(x)


def abs(x: Tensor) -> Tensor:
    """Absolute value (gradient ``sign(x)``, 0 at 0); a bool tensor is refused (PyTorch)."""
    _no_bool("abs", "the absolute value", x)
    return Abs.apply(x)


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 elementwise. Not differentiable: no gradient flows through it."""
    return Sign.apply(x)


def reciprocal(x: Tensor) -> Tensor:
    """``1 / x`` (float32 under autocast: 1/x of a small float16 overflows)."""
    return Reciprocal.apply(x)


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
        zero = scalar_like(0, gy.data)
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


# --------------------------------------------------------------------------- fused (promote)
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
