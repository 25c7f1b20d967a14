"""Op-table entries for ``minigrad/functional/elementwise.py``."""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, pos, rand

SPECIAL = np.array([NAN, INF, -INF])


def _unary(name, amp, special, domain=rand, gradgrad=True, ref=None, kwargs=None, xfail_0d=None,
           xfail_0d_grad=None, **kw):
    kwargs = kwargs or {}
    samples = (Sample((domain(3, 4),), kwargs),
               Sample((domain(),), kwargs, name="0d", xfail=xfail_0d, xfail_grad=xfail_0d_grad),
               Sample((domain(0, 3),), kwargs, name="empty"))
    nonfinite = (NonFinite((SPECIAL,), special, kwargs),) if special is not None else ()
    return OpInfo(name, "elementwise", samples, amp, nonfinite=nonfinite, gradgrad=gradgrad,
                  ref=ref, **kw)


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


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


__all__ = ["OPS"]

OPS = [
    _unary("abs", "passthrough", [NAN, INF, INF], ref=np.abs, gradgrad=False),
    _unary("cos", "passthrough", [NAN, NAN, NAN], ref=np.cos),
    _unary("erf", "fp32", [NAN, 1.0, -1.0]),
    _unary("exp", "fp32", [NAN, INF, 0.0], ref=np.exp),
    _unary("expm1", "fp32", [NAN, INF, -1.0], ref=np.expm1),
    _unary("gelu", "passthrough", [NAN, INF, NAN]),
    _unary("leaky_relu", "passthrough", [NAN, INF, -INF], kwargs={"negative_slope": 0.1},
           gradgrad=False,
           ref=lambda x, negative_slope: np.where(x > 0, x, negative_slope * x)),
    _unary("log", "fp32", [NAN, INF, NAN], domain=pos, ref=np.log),
    _unary("log1p", "fp32", [NAN, INF, NAN], domain=pos, ref=np.log1p),
    _unary("neg", "passthrough", [NAN, -INF, INF], ref=np.negative, gradgrad=False),
    _unary("relu", "passthrough", [NAN, INF, 0.0], ref=lambda x: np.maximum(x, 0),
           gradgrad=False),
    _unary("rsqrt", "fp32", [NAN, 0.0, NAN], domain=pos, ref=lambda x: 1 / np.sqrt(x)),
    _unary("sigmoid", "passthrough", [NAN, 1.0, 0.0], ref=_sigmoid),
    # PyTorch gives sign(nan) = 0; NaN in, NaN out is what the math (and NumPy) says.
    _unary("sign", "passthrough", [NAN, 1.0, -1.0], ref=np.sign, gradgrad=False),
    _unary("silu", "passthrough", [NAN, INF, NAN], ref=lambda x: x * _sigmoid(x)),
    _unary("sin", "passthrough", [NAN, NAN, NAN], ref=np.sin),
    _unary("softplus", "fp32", [NAN, INF, 0.0], ref=lambda x: np.log1p(np.exp(x))),
    _unary("sqrt", "fp32", [NAN, INF, NAN], domain=pos, ref=np.sqrt),
    _unary("square", "passthrough", [NAN, INF, INF], ref=np.square),
    _unary("tanh", "passthrough", [NAN, 1.0, -1.0], ref=np.tanh),
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
    OpInfo("prelu", "elementwise", (
        Sample((rand(2, 3, 4), rand(3, seed=1))),
        Sample((rand(2, 3), rand(1, seed=1)), name="shared"),
        Sample((rand(0, 3), rand(3, seed=1)), name="empty")), "lower", gradgrad=True,
        errors=(ErrorInput((rand(2, 3), rand(4)), ValueError, ("prelu", "weight"),
                           name="weight_shape"),)),
]
