"""Op-table entries for ``minigrad/functional/elementwise.py``.

``addcmul``/``addcdiv`` are composites whose backward is written with ops: their second
derivative is declared.
"""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, pos, rand
from ._pointwise import SPECIAL, unary


def _unary(name, amp, special, **kw):
    return unary(name, "elementwise", amp, special, **kw)


def _binary(name, amp, ref, left=rand, right=rand, gradgrad=False, differentiable=True, **kw):
    samples = (Sample((left(3, 4), right(3, 4))),
               Sample((left(3, 4), right(4)), name="broadcast"),
               Sample((left(2, 1, 3), right(4, 1)), name="broadcast2"),
               Sample((left(), right()), name="0d"),
               Sample((left(0, 4), right(4)), name="empty"))
    errors = (ErrorInput((rand(2, 3), right(4)), ValueError, (name, "(2, 3)", "(4,)"),
                         name="broadcast"),)
    return OpInfo(name, "elementwise", samples, amp, errors=errors, gradgrad=gradgrad, ref=ref,
                  differentiable=differentiable, **kw)


def _compare(name, ufunc):
    return _binary(name, "passthrough", ufunc, differentiable=False, nonfinite=(
        NonFinite((np.array([NAN, INF, 1.0]), np.array([NAN, INF, 2.0])),
                  ufunc(np.array([NAN, INF, 1.0]), np.array([NAN, INF, 2.0]))),))


def _test(name, ufunc):
    return OpInfo(name, "elementwise", (Sample((rand(3, 4),)), Sample((rand(0, 2),), name="empty"),
                                        Sample((rand(),), name="0d")),
                  "passthrough", ref=ufunc, differentiable=False,
                  nonfinite=(NonFinite((SPECIAL,), ufunc(SPECIAL)),))


def _fused(name, ref, right=rand):
    a, b, c = rand(3, 4), rand(3, 4, seed=1), right(3, 4, seed=2)
    return OpInfo(name, "elementwise", (
        Sample((a, b, c)),
        Sample((a, b, c), {"value": -0.5}, name="value"),
        Sample((rand(4), rand(3, 1, seed=1), right(3, 4, seed=2)), name="broadcast"),
        Sample((rand(), rand(seed=1), right(seed=2)), {"value": 2.0}, name="0d"),
        Sample((rand(0, 4), rand(4, seed=1), right(4, seed=2)), name="empty")), "promote",
        gradgrad=True, ref=ref,
        nonfinite=(NonFinite((np.array([NAN, 1.0, 1.0]), np.array([1.0, INF, 1.0]),
                              np.array([1.0, 1.0, NAN])), [NAN, INF, NAN]),),
        errors=(ErrorInput((rand(2, 3), rand(4), right(2, 3)), ValueError,
                           (name, "(2, 3)", "(4,)"), name="broadcast"),))


__all__ = ["OPS"]

OPS = [
    _unary("abs", "passthrough", [NAN, INF, INF], ref=np.abs, gradgrad=False),
    _unary("neg", "passthrough", [NAN, -INF, INF], ref=np.negative, gradgrad=False),
    _unary("rsqrt", "fp32", [NAN, 0.0, NAN], domain=pos, ref=lambda x: 1 / np.sqrt(x)),
    # PyTorch gives sign(nan) = 0; NaN in, NaN out is what the math (and NumPy) says.
    _unary("sign", "passthrough", [NAN, 1.0, -1.0], ref=np.sign, gradgrad=False),
    _unary("sqrt", "fp32", [NAN, INF, NAN], domain=pos, ref=np.sqrt),
    _unary("square", "passthrough", [NAN, INF, INF], ref=np.square),
    _unary("reciprocal", "fp32", [NAN, 0.0, -0.0], ref=np.reciprocal, domain=pos,
           nonfinite=(NonFinite((np.array([0.0, -0.0]),), [INF, -INF], name="zero"),)),
    _binary("add", "promote", np.add),
    _binary("sub", "promote", np.subtract),
    _binary("mul", "promote", np.multiply, gradgrad=True),
    _binary("div", "promote", np.divide, right=pos, gradgrad=True),
    _binary("maximum", "promote", np.maximum, nonfinite=(
        NonFinite((np.array([NAN, 1.0, -INF]), np.array([1.0, NAN, 2.0])), [NAN, NAN, 2.0]),)),
    _binary("minimum", "promote", np.minimum, nonfinite=(
        NonFinite((np.array([NAN, 1.0, INF]), np.array([1.0, NAN, 2.0])), [NAN, NAN, 2.0]),)),
    _binary("pow", "fp32", np.power, left=pos, right=rand, gradgrad=True,
            nonfinite=(NonFinite((np.array([NAN, INF, 2.0]), np.array([2.0, 2.0, NAN])),
                                 [NAN, INF, NAN]),)),
    _compare("equal", np.equal),
    _compare("not_equal", np.not_equal),
    _compare("greater", np.greater),
    _compare("greater_equal", np.greater_equal),
    _compare("less", np.less),
    _compare("less_equal", np.less_equal),
    _binary("logical_and", "passthrough", np.logical_and, differentiable=False),
    _binary("logical_or", "passthrough", np.logical_or, differentiable=False),
    _test("logical_not", np.logical_not),
    _test("isfinite", np.isfinite),
    _test("isinf", np.isinf),
    _test("isnan", np.isnan),
    OpInfo("clip", "elementwise", (
        Sample((rand(3, 4), -0.5, 0.5)),
        Sample((rand(3, 4),), {"lower": 0.0}, name="lower_only"),
        Sample((rand(), -0.5, 0.5), name="0d"),
        Sample((rand(0, 4), -0.5, 0.5), name="empty")), "passthrough",
        ref=lambda x, lower=None, upper=None: np.clip(x, lower, upper),
        nonfinite=(NonFinite((SPECIAL, 0.0, 1.0), [NAN, 1.0, 0.0]),)),
    OpInfo("where", "elementwise", (
        Sample((rand(3, 4) > 0, rand(3, 4), rand(3, 4, seed=1))),
        Sample((rand(3, 4) > 0, rand(4), rand(3, 1, seed=1)), name="broadcast"),
        Sample((np.array(True), rand(), rand(seed=1)), name="0d"),
        Sample((np.zeros((0, 4), bool), rand(0, 4), rand(4)), name="empty")), "promote",
        ref=np.where,
        errors=(ErrorInput((rand(2) > 0, rand(2, 3), rand(4)), ValueError,
                           ("where", "(2, 3)", "(4,)"), name="broadcast"),)),
    _fused("addcmul", lambda x, a, b, value=1: x + value * a * b),
    _fused("addcdiv", lambda x, a, b, value=1: x + value * a / b, right=pos),
]


def _spread(*shape, seed=0):
    """float64 in [-4, 4): several integers (and halves) inside the range."""
    return rand(*shape, low=-4.0, high=4.0, seed=seed)


def _rounding(name, ufunc, special):
    return _unary(name, "passthrough", special, ref=ufunc, domain=_spread,
                  gradgrad=False,  # a zero gradient: a constant, no second derivative
        errors=(ErrorInput((np.array([True, False]),), ValueError, (name, "bool"),
                           name="bool"),))


def _lerp_ref(start, end, weight):
    return start + weight * (end - start)


OPS += [
    _rounding("floor", np.floor, [NAN, INF, -INF]),
    _rounding("ceil", np.ceil, [NAN, INF, -INF]),
    _rounding("trunc", np.trunc, [NAN, INF, -INF]),
    OpInfo("round", "elementwise", (
        Sample((_spread(3, 4),)),
        # exactly on the jumps: the values only (the finite differences straddle them)
        Sample((np.array([0.5, 1.5, 2.5, -0.5, -2.5]),), name="halves", grad=False,
               expect=[0.0, 2.0, 2.0, -0.0, -2.0]),
        Sample((10 * _spread(3, 4),), {"decimals": -1}, name="decimals_neg"),
        Sample((_spread(3, 4),), {"decimals": 2}, name="decimals"),
        Sample((rand(),), name="0d"), Sample((rand(0, 3),), name="empty")), "passthrough",
        ref=lambda x, decimals=0: np.round(x, decimals),
        nonfinite=(NonFinite((SPECIAL,), [NAN, INF, -INF]),),
        errors=(ErrorInput((np.array([True, False]),), ValueError, ("round", "bool"),
                           name="bool"),
                ErrorInput((np.array([1, 2]),), ValueError, ("round", "decimals"),
                           {"decimals": 1}, name="int_decimals"))),
    _binary("copysign", "promote", np.copysign, nonfinite=(
        NonFinite((SPECIAL, np.array([1.0, -1.0, 1.0])), [NAN, -INF, INF]),)),
    # the divisor away from 0 (and integer divisors never 0 in the oracle's int samples)
    _binary("fmod", "promote", np.fmod, right=pos, nonfinite=(
        NonFinite((np.array([NAN, INF, 3.0, -3.0, 3.0]), np.array([2.0, 2.0, INF, INF, 0.0])),
                  [NAN, NAN, 3.0, -3.0, NAN]),)),
    _binary("remainder", "promote", np.remainder, right=pos, nonfinite=(
        NonFinite((np.array([NAN, INF, 3.0, -3.0, 3.0]), np.array([2.0, 2.0, INF, INF, 0.0])),
                  [NAN, NAN, 3.0, INF, NAN]),)),
    _binary("hypot", "promote", np.hypot, gradgrad=True, nonfinite=(
        NonFinite((SPECIAL, np.array([1.0, 1.0, NAN])), [NAN, INF, INF]),)),
    _binary("logical_xor", "passthrough", np.logical_xor, differentiable=False),
    OpInfo("lerp", "elementwise", (
        Sample((rand(3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2))),
        Sample((rand(3, 4), rand(3, 4, seed=1), 0.3), name="scalar_weight"),
        Sample((rand(3, 4), rand(3, 4, seed=1), 0.8), name="scalar_weight_high"),
        Sample((rand(4), rand(3, 1, seed=1), rand(3, 4, seed=2)), name="broadcast"),
        Sample((rand(), rand(seed=1), rand(seed=2)), name="0d"),
        Sample((rand(0, 4), rand(4, seed=1), 0.5), name="empty")), "promote",
        gradgrad=True, ref=_lerp_ref,
        nonfinite=(NonFinite((SPECIAL, np.array([1.0, 1.0, 1.0]), 0.5), [NAN, INF, -INF]),),
        errors=(ErrorInput((np.array([1, 2]), np.array([3, 4]), 0.5), ValueError,
                           ("lerp", "floating"), name="integer"),
                ErrorInput((rand(2, 3), rand(4), 0.5), ValueError, ("lerp", "(2, 3)", "(4,)"),
                           name="broadcast"))),
]
