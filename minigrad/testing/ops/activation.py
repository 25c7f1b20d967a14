"""Op-table entries for ``minigrad/functional/activation.py`` and ``F.nn.logsoftmax``."""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, ints, rand


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
    _entry("softmax", _softmax),
    _entry("log_softmax", lambda x, axis=-1: np.log(_softmax(x, axis))),
    _entry("nn.logsoftmax", lambda x, axis=-1: np.log(_softmax(x, axis)),
           policy_name="log_softmax"),
]
