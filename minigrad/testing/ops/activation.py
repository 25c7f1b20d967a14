"""Op-table entries for ``minigrad/functional/activation.py`` and ``F.nn.logsoftmax``."""

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
