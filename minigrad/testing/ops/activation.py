"""Op-table entries for ``minigrad/functional/activation.py`` and ``F.nn.logsoftmax``."""

import dataclasses

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, ints, rand
from ._pointwise import unary


def _unary(name, amp, special, **kw):
    return unary(name, "activation", amp, special, **kw)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True)) if x.size else x
    return e / e.sum(axis, keepdims=True) if x.size else x


def _entry(name, ref, policy_name=None):
    return OpInfo(name, "activation", (
        Sample((rand(3, 4),)),
        Sample((rand(2, 3, 4),), {"axis": 1}, name="axis"),
        Sample((rand(0, 4),), name="empty")), "fp32", policy_name=policy_name, gradgrad=True,
        ref=ref,
        errors=(ErrorInput((ints(3, 2),), ValueError, (policy_name or name, "floating"),
                           name="integer"),
                ErrorInput((rand(2, 3),), IndexError, "Dimension out of range", {"axis": 2},
                           name="bad_axis")),
        # PyTorch: one NaN or +inf in a row makes the whole row NaN (inf - inf in the shift).
        nonfinite=(NonFinite((np.array([1.0, NAN]),), [NAN, NAN], name="nan"),
                   NonFinite((np.array([1.0, INF]),), [NAN, NAN], name="inf")))


__all__ = ["OPS"]

OPS = [
    _unary("gelu", "passthrough", [NAN, INF, NAN]),
    _unary("leaky_relu", "passthrough", [NAN, INF, -INF], kwargs={"negative_slope": 0.1},
           gradgrad=False,
           ref=lambda x, negative_slope: np.where(x > 0, x, negative_slope * x)),
    _unary("relu", "passthrough", [NAN, INF, 0.0], ref=lambda x: np.maximum(x, 0),
           gradgrad=False),
    _unary("sigmoid", "passthrough", [NAN, 1.0, 0.0], ref=_sigmoid),
    _unary("silu", "passthrough", [NAN, INF, NAN], ref=lambda x: x * _sigmoid(x)),
    _unary("softplus", "fp32", [NAN, INF, 0.0], ref=lambda x: np.log1p(np.exp(x))),
    _unary("tanh", "passthrough", [NAN, 1.0, -1.0], ref=np.tanh),
    OpInfo("prelu", "activation", (
        Sample((rand(2, 3, 4), rand(3, seed=1))),
        Sample((rand(2, 3), rand(1, seed=1)), name="shared"),
        Sample((rand(0, 3), rand(3, seed=1)), name="empty")), "lower", gradgrad=True,
        errors=(ErrorInput((rand(2, 3), rand(4)), ValueError, ("prelu", "weight"),
                           name="weight_shape"),)),
    _entry("softmax", _softmax),
    _entry("log_softmax", lambda x, axis=-1: np.log(_softmax(x, axis))),
    _entry("nn.logsoftmax", lambda x, axis=-1: np.log(_softmax(x, axis)),
           policy_name="log_softmax"),
]


# --------------------------------------------------------------------------- added in issue 21
_SELU_A, _SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _wide(*shape, seed=0):
    """float64 in [-5, 5): both sides of every kink (+-3, 0) and the saturated tails."""
    return rand(*shape, low=-5.0, high=5.0, seed=seed)


def _relu6_domain(*shape, seed=0):
    return rand(*shape, low=-3.0, high=9.0, seed=seed)


def _elu_ref(x, alpha=1.0, scale=1.0, input_scale=1.0):
    return scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0) * input_scale))


def _softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _integer_refused(name):
    return (ErrorInput((ints(3, 2),), ValueError, (name, "floating"), name="integer"),)


def _float_act(name, special, ref, domain=_wide, gradgrad=True, **kw):
    return _unary(name, "passthrough", special, ref=ref, domain=domain, gradgrad=gradgrad,
                  errors=_integer_refused(name), **kw)


def _hardsigmoid(x):
    return np.minimum(np.maximum(x + 3, 0), 6) / 6


OPS += [
    _float_act("elu", [NAN, INF, -1.5], lambda x, alpha=1.0: _elu_ref(x, alpha),
               kwargs={"alpha": 1.5}),
    _float_act("celu", [NAN, INF, -2.0], lambda x, alpha=1.0: _elu_ref(x, alpha, 1.0, 1 / alpha),
               kwargs={"alpha": 2.0}),
    _float_act("selu", [NAN, INF, -_SELU_A * _SELU_S],
               lambda x: _elu_ref(x, _SELU_A, _SELU_S)),
    _float_act("hardsigmoid", [NAN, 1.0, 0.0], _hardsigmoid, gradgrad=False),
    _float_act("hardswish", [NAN, INF, NAN], lambda x: x * _hardsigmoid(x)),
    _float_act("mish", [NAN, INF, NAN], lambda x: x * np.tanh(_softplus(x))),
    _float_act("logsigmoid", [NAN, 0.0, -INF], lambda x: -_softplus(-x)),
    # piecewise linear: no second derivative; integers keep their dtype, bool is refused
    _unary("relu6", "passthrough", [NAN, 6.0, 0.0], ref=lambda x: np.clip(x, 0, 6),
           domain=_relu6_domain, gradgrad=False,
           errors=(ErrorInput((np.array([True, False]),), ValueError, ("relu6", "bool"),
                              name="bool"),)),
    _unary("hardtanh", "passthrough", [NAN, 0.5, -0.5], kwargs={"min_val": -0.5, "max_val": 0.5},
           ref=lambda x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val),
           gradgrad=False,
           errors=(ErrorInput((np.array([True, False]),), ValueError, ("hardtanh", "bool"),
                              name="bool"),
                   ErrorInput((rand(2),), ValueError, ("hardtanh", "min_val"),
                              {"min_val": 1.0, "max_val": 0.0}, name="bounds"))),
    # softmin([1, inf]) is [1, 0]: -inf only vanishes (softmax of -x); NaN still spreads
    dataclasses.replace(
        _entry("softmin", lambda x, axis=-1: _softmax(-x, axis)),
        nonfinite=(NonFinite((np.array([1.0, NAN]),), [NAN, NAN], name="nan"),
                   NonFinite((np.array([1.0, INF]),), [1.0, 0.0], name="inf"),
                   NonFinite((np.array([1.0, -INF]),), [NAN, NAN], name="-inf"))),
]


# --------------------------------------------------------------------------- the layers' formulas
def _shrink_domain(*shape, seed=0):
    """float64 in [-2, 2) away from the kinks at +-0.5 (gradcheck's finite differences)."""
    x = rand(*shape, low=-2.0, high=2.0, seed=seed)
    return np.where(np.abs(np.abs(x) - 0.5) < 0.05, x + 0.2, x)


def _threshold_domain(*shape, seed=0):
    x = rand(*shape, low=-2.0, high=2.0, seed=seed)
    return np.where(np.abs(x - 0.25) < 0.05, x + 0.2, x)


def _glu_ref(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a * _sigmoid(b)


OPS += [
    _unary("softsign", "passthrough", [NAN, NAN, NAN], ref=lambda x: x / (1 + np.abs(x)),
           domain=_wide, errors=(ErrorInput((np.array([True, False]),), ValueError,
                                            ("softsign", "bool"), name="bool"),)),
    _unary("tanhshrink", "passthrough", [NAN, INF, -INF], ref=lambda x: x - np.tanh(x),
           domain=_wide, errors=(ErrorInput((np.array([True, False]),), ValueError,
                                            ("tanhshrink", "bool"), name="bool"),)),
    _unary("softshrink", "passthrough", [NAN, INF, -INF], kwargs={"lambd": 0.5},
           ref=lambda x, lambd=0.5: np.where(np.abs(x) <= lambd, 0.0, x - lambd * np.sign(x)),
           domain=_shrink_domain, gradgrad=True,
           errors=_integer_refused("softshrink") + (
               ErrorInput((rand(2),), ValueError, ("softshrink", "lambd"), {"lambd": -1.0},
                          name="negative_lambd"),)),
    _unary("hardshrink", "passthrough", [NAN, INF, -INF], kwargs={"lambd": 0.5},
           ref=lambda x, lambd=0.5: np.where(np.abs(x) <= lambd, 0.0, x),
           domain=_shrink_domain, gradgrad=True, errors=_integer_refused("hardshrink")),
    _unary("threshold", "passthrough", [NAN, INF, 2.0], kwargs={"threshold": 0.25, "value": 2.0},
           ref=lambda x, threshold, value: np.where(x <= threshold, value, x),
           domain=_threshold_domain, gradgrad=True,
           errors=(ErrorInput((np.array([True, False]),), ValueError, ("threshold", "bool"),
                              {"threshold": 0.5, "value": 1.0}, name="bool"),)),
    OpInfo("glu", "activation", (
        Sample((rand(3, 4),)),
        Sample((rand(2, 6, 3),), {"dim": 1}, name="dim"),
        Sample((rand(0, 4),), name="empty")), "passthrough", gradgrad=True, ref=_glu_ref,
        errors=(ErrorInput((rand(3, 5),), ValueError, ("glu", "even"), name="odd"),
                ErrorInput((rand(),), ValueError, ("glu", "scalars"), name="0d"),
                ErrorInput((ints(3, 2),), ValueError, ("glu", "floating"), name="integer"))),
    # eval mode only: training draws random slopes (no repeatable gradcheck)
    _unary("rrelu", None, [NAN, INF, -INF * (1 / 8 + 1 / 3) / 2], domain=_wide, gradgrad=False,
           ref=lambda x: np.where(x > 0, x, x * (1 / 8 + 1 / 3) / 2),
           amp_note="no Function of its own: leaky_relu (evaluation) or where/mul (training)",
           errors=_integer_refused("rrelu")),
]
