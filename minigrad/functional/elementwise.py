"""Elementwise arithmetic, selection and comparison.

Arithmetic: ``add``, ``sub``, ``mul``, ``div``, ``neg``, ``pow``, ``square``, ``sqrt``, ``rsqrt``,
``reciprocal``, ``abs``, ``sign``, ``copysign``, ``fmod``/``remainder``, ``hypot``, ``lerp``, and
the fused ``addcmul``/``addcdiv``. Rounding (gradient 0; integers kept): ``floor``, ``ceil``,
``trunc``, ``round``. Selection: ``maximum``, ``minimum``, ``clip``, ``where``. Comparison and
logic (bool results, no gradient): ``equal``, ``less``, ..., ``logical_and``/``or``/``xor``/``not``,
``isfinite``/``isnan``/``isinf``. Exponentials,
logarithms, trigonometric and error functions are in ``transcendental``; activations in
``activation``.

Binary ops take Tensors or Python scalars on either side; dtypes promote as in PyTorch
(``Function.promote``: int64 with float16 -> float16; div of integers -> the default float
dtype, float32 unless changed), and a Python scalar never widens a float tensor (NumPy 2 treats
it as weakly typed; bfloat16 is lifted by hand). Broadcast gradients are summed back to each
input's shape. Backward passes use ops under ``create_graph=True`` (so higher derivatives work)
and one fused array expression otherwise.
"""

from __future__ import annotations

import math
import operator

from .._backend import get_array_module, kernels
from .._backend.dtypes import get_default_dtype
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
    narrow,
    op_error,
    owned_for_backward,
    scalar_like,
    shape_of,
    sum_to_shape,
    to_dtype,
    wide,
)

__all__ = [
    "abs",
    "add",
    "addcdiv",
    "addcmul",
    "ceil",
    "clip",
    "copysign",
    "div",
    "equal",
    "floor",
    "fmod",
    "greater",
    "greater_equal",
    "hypot",
    "isfinite",
    "isinf",
    "isnan",
    "lerp",
    "less",
    "less_equal",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mul",
    "neg",
    "not_equal",
    "pow",
    "reciprocal",
    "remainder",
    "round",
    "rsqrt",
    "sign",
    "sqrt",
    "square",
    "sub",
    "trunc",
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


# The array formulas go through the backend's elementwise entry point: on the CPU it computes
# float16/bfloat16 in float32 and rounds once (``_backend/lowp_cpu.py``), and it types a Python
# number after a bfloat16 partner, as ``_pair`` does.
_binop = kernels.binary
_add, _sub, _mul, _truediv, _pow, _neg = (operator.add, operator.sub, operator.mul,
                                          operator.truediv, operator.pow, operator.neg)


# --------------------------------------------------------------------------- arithmetic
class Add(Function):
    name = "add"
    promote = "common"

    def forward(self, a, b):
        return _binop(_add, a, b)

    def backward(self, gy):
        a, b = self.inputs
        na, nb = self.needs_input_grad
        return (sum_to_shape(gy, a.shape) if na else None,
                sum_to_shape(gy, b.shape) if nb else None)


class Sub(Function):
    name = "sub"
    promote = "common"

    def forward(self, a, b):
        return _binop(_sub, a, b)

    def backward(self, gy):
        a, b = self.inputs
        na, nb = self.needs_input_grad
        return (sum_to_shape(gy, a.shape) if na else None,
                sum_to_shape(-gy, b.shape) if nb else None)


class Mul(Function):
    name = "mul"
    promote = "common"

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return kernels.scaled(_mul, a, b)  # a Python number unrounded, as PyTorch's opmath

    def backward(self, gy):
        na, nb = self.needs_input_grad
        a, b = self.saved_tensors_used(nb, na)  # each factor only for the other's gradient
        return (sum_to_shape(gy * b, a.shape) if na else None,
                sum_to_shape(gy * a, b.shape) if nb else None)


class Div(Function):
    name = "div"
    promote = "float"

    def forward(self, a, b):
        self.save_for_backward(a, b)
        # A Python number stays in float32 against float16/bfloat16, as PyTorch's opmath
        # (k / x too: float16(70000.0) is inf); k / x is the correctly rounded quotient, where
        # PyTorch's reciprocal(x) * k rounds twice (docs/migrating.md)
        return kernels.scaled(_truediv, a, b)

    def backward(self, gy):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        # d/db = -gy * (a / b / b), PyTorch's order: the quotients first (gy / b * a
        # overflows where the gradient is representable, for a near the dtype's largest)
        return (sum_to_shape(gy / b, shape_of(a)) if na else None,
                sum_to_shape(-gy * (a / b / b), shape_of(b)) if nb else None)


class Neg(Function):
    name = "neg"

    def forward(self, x):
        return kernels.unary(_neg, x)

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
        if _int_array(b) and (_int_array(a) or type(a) is int):
            y = _int_pow(a, b)
        else:
            y = _binop(_pow, a, b)
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
                    # PyTorch's grad * (exponent * a.pow(exponent - 1)), each of its three ops
                    # rounded to the dtype; float16/bfloat16 compute in float32 on the CPU, so
                    # the exponent meets them unrounded, as in PyTorch's opmath (NumPy's float16
                    # loops rounded it first and ran element by element)
                    p = kernels.binary(operator.pow, a._data, b - 1)
                    ga = const(kernels.binary(operator.mul, gy._data,
                                              kernels.scaled(_mul, p, b)))
                else:
                    ga = gy * (pow(a, b - 1) * b)
            else:  # b * a^(b-1) is 0 * inf at a == b == 0: PyTorch's derivative there is 0
                ga = sum_to_shape(gy * where(const(b._data == 0), 0.0, b * pow(a, b - 1)),
                                  a.shape)
        if nb:
            # d(a**b)/db = a**b * log(a); a == 0 contributes 0 (as in PyTorch), not 0 * -inf.
            if isinstance(a, Tensor):
                zero = const(a._data == 0)
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
        y = kernels.unary(get_array_module(x).sqrt, x)
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
        y = kernels.unary(lambda v: xp.reciprocal(xp.sqrt(v)), x)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy * (y * y * y) * -0.5


class Square(Function):
    name = "square"

    def forward(self, x):
        self.save_for_backward(x)
        return _binop(_mul, x, x)

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
        # sign is piecewise constant: a constant keeps double backward exact (and cheap). Through
        # the low-precision policy, as Sign.forward: bfloat16's own sign of -0 is -0 (a -0
        # gradient where PyTorch's is +0)
        return gy * const(kernels.unary(get_array_module(x._data).sign, x._data))


class Sign(Function):
    name = "sign"

    def forward(self, x):
        if x.dtype.kind == "b":  # NumPy has no bool sign; PyTorch returns the bools
            return x.copy()
        # the low-precision CPU policy: ml_dtypes' own bfloat16 sign gives -0 for -0 (float32's
        # and PyTorch's give 0), and runs element by element
        return kernels.unary(get_array_module(x).sign, x)

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
        xp = get_array_module(a if hasattr(a, "dtype") else b)
        # b first: NumPy's maximum/minimum return their second operand on a tie, PyTorch's the
        # first (maximum(-0.0, 0.0) is -0.0); NaN propagates from either side either way.
        return _binop(getattr(xp, self._pick), b, a)

    def backward(self, gy):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        a_, b_ = getattr(a, "_data", a), getattr(b, "_data", b)
        # PyTorch's: half of gy to each on ties, none to the loser (a selection: an inf gy
        # gives 0, not NaN), all of it to both where either is NaN (neither loses then).
        xp = get_array_module(gy._data)
        tie = _binop(operator.eq, a_, b_)
        gy = gy * const(xp.asarray(xp.where(tie, 0.5, 1.0), dtype=gy.dtype))
        lt, gt = _binop(operator.lt, a_, b_), _binop(operator.gt, a_, b_)
        a_loses, b_loses = (lt, gt) if self._pick == "maximum" else (gt, lt)
        return (sum_to_shape(where(const(a_loses), 0.0, gy), a.shape) if na else None,
                sum_to_shape(where(const(b_loses), 0.0, gy), b.shape) if nb else None)


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
        x = x._data
        keep = None if self.lower is None else _binop(operator.ge, x, self.lower)
        if self.upper is not None:
            below = _binop(operator.le, x, self.upper)
            keep = below if keep is None else keep & below
        # a selection, as PyTorch's: an inf gradient at a clamped element gives 0, not NaN
        if fast_backward():
            xp = get_array_module(gy._data)
            return const(xp.where(keep, gy._data, scalar_like(0, gy._data)))
        return where(const(keep), gy, 0.0)


class Where(Function):
    name = "where"
    promote = "common"
    promote_skip = 1  # the condition is not an operand

    def forward(self, cond, a, b):
        xp = get_array_module(cond)
        if not hasattr(a, "dtype") and not hasattr(b, "dtype"):
            dt = get_default_dtype() if isinstance(a, float) or isinstance(b, float) else None
            a, b = xp.asarray(a, dtype=dt), xp.asarray(b, dtype=dt)
        a, b = _pair(a, b)
        self.cond = cond
        return xp.where(cond, a, b)

    def backward(self, gy):
        _, a, b = self.inputs
        _, na, nb = self.needs_input_grad
        xp = get_array_module(gy._data)
        zero = scalar_like(0, gy._data)
        ga = gb = None
        if fast_backward():
            if na:
                ga = sum_to_shape(const(xp.where(self.cond, gy._data, zero)), a.shape)
            if nb:
                gb = sum_to_shape(const(xp.where(self.cond, zero, gy._data)), b.shape)
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
        # the default float (never a clamp truncated to integers), an integer bound makes bool
        # int64.
        floats = any(isinstance(b, float) and not isinstance(b, bool) for b in (lower, upper))
        if floats or x.dtype.kind == "b":
            x = cast(x, get_default_dtype() if floats else "int64")
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
        c = get_array_module(ref._data).asarray(c) if isinstance(ref, Tensor) else c
    if getattr(c, "dtype", None) is not None and c.dtype.kind != "b":
        c = c.astype(bool)
    a, b = as_operand(a, "where"), as_operand(b, "where")
    return Where.apply(const(c), a, b)


# --------------------------------------------------------------------------- fused (promote)
def _fused(name, combine):
    def impl(x, t1, t2, value):
        # t1 and t2 meet at the output's shape, as in PyTorch's fused kernel: the gradient of a
        # broadcast one is then the sum of gy * the other over the output, so an empty output
        # gives 0 (their product at a smaller shape took 0 * inf = NaN there).
        shape = broadcast_shape(name, *(getattr(t, "shape", ()) for t in (x, t1, t2)))
        t1, t2 = (t.broadcast_to(shape) if isinstance(t, Tensor) and t.shape != shape else t
                  for t in (t1, t2))
        return x + value * combine(t1, t2)
    return composite(name, impl)


_AddCMul = _fused("addcmul", lambda t1, t2: t1 * t2)
_AddCDiv = _fused("addcdiv", lambda t1, t2: t1 / t2)
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
            try:
                xp = get_array_module(a if hasattr(a, "dtype") else b)
                return _binop(getattr(xp, ufunc), a, b)
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
            return kernels.unary(getattr(get_array_module(x), ufunc), x)

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


# --------------------------------------------------------------------------- rounding
class _Rounding(Function):
    """Base of ``floor``/``ceil``/``trunc``/``round``: an integer input is returned as it is
    (PyTorch keeps its dtype); the gradient is zero everywhere (PyTorch's), a constant, so
    higher derivatives are zero too."""

    def forward(self, x, decimals=0):
        if x.dtype.kind in "iu":
            return x.copy()
        xp = get_array_module(x)
        # the low-precision policy: NumPy's float16 floor/rint run element by element (50x
        # float32's time), bfloat16's in ml_dtypes' loops; exact either way
        return kernels.unary(lambda v: self.f(xp, v, decimals), x)

    def backward(self, gy):
        return const(get_array_module(gy._data).zeros_like(gy._data))


class Floor(_Rounding):
    name = "floor"
    f = staticmethod(lambda xp, x, d: xp.floor(x))


class Ceil(_Rounding):
    name = "ceil"
    f = staticmethod(lambda xp, x, d: xp.ceil(x))


class Trunc(_Rounding):
    name = "trunc"
    f = staticmethod(lambda xp, x, d: xp.trunc(x))


class Round(_Rounding):
    name = "round"
    # rint rounds half to even, as PyTorch; with decimals both scale by 10**decimals, round
    # half to even and scale back, float16/bfloat16 in float32 as PyTorch's opmath (6e4 * 100
    # overflows float16).
    f = staticmethod(lambda xp, x, d: xp.rint(x) if d == 0 else narrow(xp.round(wide(x), d),
                                                                        x.dtype))


def _rounding(cls, x, decimals=0):
    if x.dtype.kind == "b":
        raise op_error(cls.name, "is not defined for a bool tensor (as in PyTorch); cast it "
                       "first", shape=x.shape)
    return cls.apply(x, decimals=decimals)


def floor(x: Tensor) -> Tensor:
    """Largest integer not above ``x`` (integer input is returned unchanged; gradient 0)."""
    return _rounding(Floor, x)


def ceil(x: Tensor) -> Tensor:
    """Smallest integer not below ``x`` (integer input is returned unchanged; gradient 0)."""
    return _rounding(Ceil, x)


def trunc(x: Tensor) -> Tensor:
    """``x`` rounded toward zero (integer input is returned unchanged; gradient 0)."""
    return _rounding(Trunc, x)


def round(x: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """``x`` rounded to ``decimals`` decimal places, halves to even (``round(2.5) == 2``), as
    ``torch.round``; integer input is returned unchanged (``decimals=0`` only); gradient 0."""
    if decimals != 0 and x.dtype.kind in "iu":
        raise op_error("round", "decimals is not supported for an integer tensor (as in "
                       "PyTorch); cast it to a float dtype first", dtype=x.dtype)
    return _rounding(Round, x, int(decimals))


# --------------------------------------------------------------------------- sign, modulo, hypot
def _integral(v) -> bool:
    """An integer/bool array or Python int/bool (the operands integer division refuses 0 for)."""
    return v.dtype.kind in "biu" if hasattr(v, "dtype") else not isinstance(v, float)


class Copysign(Function):
    name = "copysign"
    promote = "float"  # integers give the default float dtype, as in PyTorch

    def forward(self, a, b):
        a, b = _pair(a, b)
        y = get_array_module(a if hasattr(a, "dtype") else b).copysign(a, b)
        self.save_for_backward(a, y)
        return y

    def backward(self, gy):
        a, y = self.saved_tensors
        if not self.needs_input_grad[0]:
            return None, None
        # d/da copysign(a, b) = y / a, +-1, and 0 at a == 0 (PyTorch); none for b.
        ad, yd = a._data, y._data
        xp = get_array_module(ad)
        # float16/bfloat16 on the CPU in float32 (NumPy's float16 loops run element by element)
        ratio = kernels.binary(lambda y_, a_: xp.where(a_ == 0, 0, xp.sign(y_) * xp.sign(a_)),
                               yd, ad).astype(gy.dtype, copy=False)
        return sum_to_shape(gy * const(ratio), a.shape), None


class Fmod(Function):
    name = "fmod"
    promote = "common"
    ufunc = "fmod"
    quotient = "trunc"  # d/db fmod(a, b) = -trunc(a / b)

    def forward(self, a, b):
        a, b = _pair(a, b)
        xp = get_array_module(a if hasattr(a, "dtype") else b)
        if _integral(a) and _integral(b) and bool((xp.asarray(b) == 0).any()):
            raise ZeroDivisionError(f"{self.name}: integer division by zero (PyTorch raises "
                                    "too); use a float tensor to get NaN instead")
        self.save_for_backward(a, b)
        return getattr(xp, self.ufunc)(a, b)

    def backward(self, gy):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        ga = sum_to_shape(gy, shape_of(a)) if na else None
        gb = None
        if nb:
            ad, bd = getattr(a, "_data", a), b._data
            xp = get_array_module(bd)
            # float16/bfloat16 on the CPU in float32 (NumPy's float16 loops run element by
            # element); fmod's quotient is rounded to the dtype before trunc, as PyTorch's
            if self.quotient == "trunc":
                q = kernels.unary(xp.trunc, kernels.binary(_truediv, ad, bd))
            else:
                q = kernels.binary(xp.floor_divide, ad, bd)
            gb = sum_to_shape(gy * const(-xp.asarray(q, dtype=gy.dtype)), b.shape)
        return ga, gb


class Remainder(Fmod):
    name = "remainder"
    ufunc = "remainder"
    quotient = "floor"  # d/db remainder(a, b) = -floor(a / b)


class Hypot(Function):
    name = "hypot"
    promote = "common"

    def forward(self, a, b):
        a, b = _pair(a, b)
        y = get_array_module(a if hasattr(a, "dtype") else b).hypot(a, b)
        self.save_for_backward(a, b, y)
        return y

    def backward(self, gy):
        a, b, y = self.saved_tensors
        na, nb = self.needs_input_grad
        # gy * a / y and gy * b / y, in PyTorch's order (gy / y first overflows for a tiny y:
        # inf * a); 0 at the origin (norm's subgradient there) instead of PyTorch's 0/0 = NaN,
        # which would make a GradScaler skip every step.
        safe = where(const(y._data == 0), math.inf, y)
        return (sum_to_shape(gy * a / safe, shape_of(a)) if na else None,
                sum_to_shape(gy * b / safe, shape_of(b)) if nb else None)


def _refuse_bool_pair(op, a, b):
    def is_bool(v):
        return isinstance(v, bool) or isinstance(v, Tensor) and v.dtype.kind == "b"

    if is_bool(a) and is_bool(b):
        raise op_error(op, "is not defined for two bool operands (as in PyTorch); cast one "
                       "to an integer or float dtype first")


def _floating_operands(op, *xs):
    """Refuse what PyTorch's float-only kernels refuse: no floating Tensor or Python float
    among the operands (an integer result would be truncated)."""
    if not any(isinstance(x, float) or isinstance(x, Tensor) and x.dtype.kind in "fV"
               for x in xs):
        raise op_error(op, "expects a floating tensor; cast it first, e.g. x.astype('float32')",
                       dtypes=tuple(str(getattr(x, "dtype", type(x).__name__)) for x in xs))


def copysign(input, other) -> Tensor:
    """``|input|`` with the sign of ``other`` (broadcasting; integers give the default float
    dtype, as in PyTorch). The gradient is ``+-1`` for ``input`` (0 where it is 0) and none
    for ``other``."""
    return _binary(Copysign, input, other)


def fmod(input, other) -> Tensor:
    """C-style remainder ``input - trunc(input / other) * other``: the sign of ``input``
    (``torch.fmod``). Integer division by zero raises ZeroDivisionError; floats give NaN."""
    _refuse_bool_pair("fmod", input, other)
    return _binary(Fmod, input, other)


def remainder(input, other) -> Tensor:
    """Python-style modulo ``input - floor(input / other) * other``: the sign of ``other``
    (``torch.remainder``, Python's ``%``). Integer division by zero raises ZeroDivisionError."""
    _refuse_bool_pair("remainder", input, other)
    return _binary(Remainder, input, other)


def hypot(input, other) -> Tensor:
    """``sqrt(input**2 + other**2)`` without intermediate overflow (broadcasting; floating
    inputs only, as in PyTorch). The gradient at the origin is 0."""
    _floating_operands("hypot", input, other)
    return _binary(Hypot, input, other)


# --------------------------------------------------------------------------- lerp
class Lerp(Function):
    name = "lerp"
    promote = "common"

    def forward(self, start, end, weight):
        xp = get_array_module(start)
        self.save_for_backward(start, end, weight)
        dtype = xp.result_type(*[a for a in (start, end, weight) if hasattr(a, "dtype")])
        # float16/bfloat16 in float32, rounded once (PyTorch's opmath); PyTorch's two-sided
        # formula, exact at weight 0 and at weight 1.
        s, e = wide(start), wide(end)
        diff = e - s
        w = wide(weight) if hasattr(weight, "dtype") else weight
        low = s + w * diff
        if not hasattr(weight, "dtype") and abs(weight) < 0.5:
            return to_dtype(low, dtype)
        near_start = xp.abs(w) < 0.5
        high = e - diff * (1 - w)
        # diff * (1 - w) may overflow where the result does not (end near the dtype's largest,
        # weight < 0.5): there the start-side formula is finite (PyTorch's fused multiply-add
        # gives it too). A diff or end that is itself inf keeps PyTorch's answer.
        near_start = near_start | (xp.isinf(high) & xp.isfinite(diff) & xp.isfinite(e))
        return to_dtype(xp.where(near_start, low, high), dtype)

    def backward(self, gy):
        start, end, weight = self.saved_tensors
        ns, ne, nw = self.needs_input_grad
        return (sum_to_shape(gy * (1 - weight), start.shape) if ns else None,
                sum_to_shape(gy * weight, end.shape) if ne else None,
                sum_to_shape(gy * (end - start), weight.shape) if nw else None)


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)`` (``torch.lerp``), broadcasting;
    ``weight`` is a Python number or a Tensor. Floating inputs only, as in PyTorch."""
    input, end = as_operand(input, "lerp"), as_operand(end, "lerp")
    weight = as_operand(weight, "lerp")
    for name, v in (("input", input), ("end", end), ("weight", weight)):
        if isinstance(v, Tensor) and v.dtype.kind not in "fV" or \
                not isinstance(v, Tensor) and name != "weight":
            raise op_error("lerp", f"{name} must be a floating tensor"
                           + ("" if name == "weight" else " (weight may be a Python number)"),
                           **{name: getattr(v, "dtype", type(v).__name__)})
    return Lerp.apply(input, end, weight)


LogicalXor = _compare("logical_xor", "logical_xor")


def logical_xor(a, b) -> Tensor:
    """Elementwise logical exclusive or (nonzero is true), as a bool Tensor."""
    return _binary(LogicalXor, a, b)
