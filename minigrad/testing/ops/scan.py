"""Op-table entries for ``minigrad/functional/scan.py``."""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, rand


def _ref(x, axis=None, dim=None):
    axis = dim if axis is None else axis
    if axis is None:
        return np.cumprod(x.reshape(-1))
    return np.cumprod(x, axis=axis).reshape(x.shape)  # a 0-d input stays 0-d (PyTorch)


_ZEROS = np.array([[0.5, 0.0, 2.0, 0.0], [1.5, -1.0, 0.0, 3.0]])

__all__ = ["OPS"]

OPS = [
    OpInfo("cumsum", "scan", (
        Sample((rand(3, 4),), {"axis": 1}),
        Sample((rand(3, 4),), {"axis": -2}, name="neg_axis"),
        Sample((rand(0, 4),), {"axis": 0}, name="empty"),
        Sample((rand(3, 4),), name="flat")), "fp32",
        ref=lambda x, axis=None: np.cumsum(x, axis=axis),
        errors=(ErrorInput((rand(2, 3),), IndexError, "Dimension out of range", {"axis": 2},
                           name="bad_axis"),),
        nonfinite=(NonFinite((np.array([1.0, NAN, 2.0]),), [1.0, NAN, NAN], {"axis": 0}),
                   NonFinite((np.array([INF, -INF]),), [INF, NAN], {"axis": 0},
                             name="inf_minus_inf"))),
    OpInfo("cumprod", "scan", (
        Sample((rand(3, 4),), {"axis": 1}),
        Sample((rand(3, 4),), {"dim": 0}, name="dim"),
        Sample((rand(2, 3, 4),), {"axis": -2}, name="neg_axis"),
        Sample((rand(3, 4),), name="flat"),
        # Exact gradient through zeros (the first zero of a slice and everything after it).
        Sample((_ZEROS,), {"axis": 1}, name="zeros"),
        Sample((rand(),), name="0d"),
        Sample((rand(),), {"axis": 0}, name="0d_axis"),
        Sample((rand(),), {"dim": -1}, name="0d_dim"),
        Sample((rand(0, 4),), {"axis": 0}, name="empty")), "fp32",
        gradgrad=True, ref=_ref,
        nonfinite=(NonFinite((np.array([1.0, NAN, 2.0]),), [1.0, NAN, NAN], {"axis": 0}),
                   NonFinite((np.array([2.0, INF, 0.0]),), [2.0, INF, NAN], {"axis": 0},
                             name="inf_times_zero")),
        # IndexError is PyTorch's type; the message names the op either way.
        errors=(ErrorInput((rand(2, 3),), (IndexError, ValueError), ("cumprod", "out of range"),
                           {"axis": 2}, name="bad_axis"),)),
]


def _extreme(name, accumulate):
    ties = np.array([[1.0, 1.0, 0.0, 1.0, 2.0], [0.5, -1.0, 0.5, -1.0, 0.5]])
    return OpInfo(name, "scan", (
        Sample((rand(3, 4), 1)),
        Sample((rand(3, 4), 0), name="axis0"),
        Sample((rand(3, 4),), {"dim": -1}, name="dim"),
        # ties: the later position wins; not differentiable there
        Sample((ties, 1), name="ties", grad=False),
        Sample((rand(), 0), name="0d"),
        Sample((rand(0, 4), 1), name="empty")), "passthrough",
        ref=lambda x, axis=None, dim=None: accumulate(x, axis=dim if axis is None else axis)
        if x.ndim else x,
        errors=(ErrorInput((rand(2, 3), 2), IndexError, (name, "Dimension out of range"),
                           name="bad_axis"),
                ErrorInput((rand(2, 3),), TypeError, (name, "required"), name="no_axis")),
        nonfinite=(NonFinite((np.array([1.0, NAN, 2.0, NAN]), 0), [1.0, NAN, NAN, NAN]),))


OPS += [_extreme("cummax", np.maximum.accumulate), _extreme("cummin", np.minimum.accumulate)]
