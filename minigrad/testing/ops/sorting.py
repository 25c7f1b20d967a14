"""Op-table entries for ``minigrad/functional/sorting.py``."""

import numpy as np

from ..op_table import NAN, ErrorInput, NonFinite, OpInfo, Sample, rand


def _zero_dim(ref):
    """A 0-d input is one slice of one element: every op gives it back."""
    def call(x, *args, **kwargs):
        return x if x.ndim == 0 else ref(x, *args, **kwargs)
    return call


def _sort(x, descending=False, dim=-1):
    s = np.sort(x, axis=dim)
    return np.flip(s, axis=dim) if descending else s


def _topk(x, k, descending=True, kth_only=False, dim=-1):
    s = np.take(_sort(x, descending, dim), np.arange(k), axis=dim)
    return np.take(s, k - 1, axis=dim) if kth_only else s


def _kthvalue(x, k, axis=-1, keepdims=False):
    out = np.take(np.sort(x, axis=axis), [k - 1], axis=axis)
    return out if keepdims else out.squeeze(axis)


def _median(x, axis=None, keepdims=False):
    if axis is None:
        s = np.sort(x.reshape(-1))
        return s[(s.size - 1) // 2]
    s = np.sort(x, axis=axis)
    out = np.take(s, [(x.shape[axis] - 1) // 2], axis=axis)
    return out if keepdims else out.squeeze(axis)


def _mode(x, axis=-1, keepdims=False):
    moved = np.moveaxis(x, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    out = []
    for row in flat:
        vals, counts = np.unique(row, return_counts=True)
        out.append(vals[np.argmax(counts)])  # unique sorts: the first maximum is the smallest
    out = np.array(out).reshape(moved.shape[:-1])
    return np.expand_dims(out, axis) if keepdims else out


# Distinct values, so the sort order and the gradient are unambiguous; _TIES has repeats.
_TIES = np.array([[0.5, -1.0, 0.5, 2.0, -1.0], [3.0, 3.0, 1.0, 1.0, 2.0]])
_BAD_DIM = ErrorInput((rand(2, 3),), IndexError, "Dimension out of range", {"dim": 2},
                      name="bad_dim")

__all__ = ["OPS"]

OPS = [
    OpInfo("sort", "sorting", (
        Sample((rand(3, 4),)),
        Sample((rand(3, 4), True), name="descending"),
        Sample((rand(2, 3, 4),), {"dim": 1}, name="dim"),
        Sample((rand(3, 4),), {"descending": True, "dim": 0}, name="kw"),
        Sample((rand(),), name="0d"),
        Sample((rand(0, 4),), {"dim": 0}, name="empty")), "passthrough",
        ref=_zero_dim(_sort),
        errors=(ErrorInput((rand(2, 3),), IndexError, "Dimension out of range", {"dim": 2},
                           name="bad_dim"),),
        nonfinite=(NonFinite((np.array([1.0, NAN, 0.0]),), [0.0, 1.0, NAN]),
                   NonFinite((np.array([1.0, NAN, 0.0]), True), [NAN, 1.0, 0.0],
                             name="descending"))),
    OpInfo("argsort", "sorting", (
        Sample((rand(3, 4),)),
        Sample((rand(3, 4), True), name="descending"),
        Sample((_TIES,), name="stable"),
        Sample((_TIES, True), name="stable_descending"),
        Sample((rand(),), name="0d")), "passthrough",
        ref=lambda x, descending=False, dim=-1: 0 if x.ndim == 0 else (
            np.argsort(x, axis=dim, kind="stable") if not descending else
            x.shape[dim] - 1 - np.flip(np.argsort(np.flip(x, dim), axis=dim, kind="stable"),
                                       dim)),
        differentiable=False, errors=(_BAD_DIM,)),
    OpInfo("topk", "sorting", (
        Sample((rand(3, 5), 2)),
        Sample((rand(3, 5), 2, False), name="smallest"),
        Sample((rand(3, 5), 3), {"kth_only": True}, name="kth_only"),
        Sample((rand(2, 3, 4), 2), {"dim": 1}, name="dim"),
        Sample((rand(3, 5), 0), name="k0"),
        Sample((rand(), 1), name="0d")), "passthrough",
        ref=_zero_dim(_topk),
        errors=(ErrorInput((rand(2, 3), 4), ValueError, ("topk", "out of range"), name="big_k"),
                ErrorInput((rand(2, 3), 1), IndexError, "Dimension out of range", {"dim": 2},
                           name="bad_dim")),
        nonfinite=(NonFinite((np.array([1.0, NAN, 0.0]), 1), [NAN]),)),
    OpInfo("kthvalue", "sorting", (
        Sample((rand(3, 5), 2)),
        Sample((rand(3, 5), 5, 1, True), name="keepdims"),
        Sample((rand(2, 3, 4), 1), {"axis": 0}, name="axis0"),
        Sample((rand(), 1), name="0d")), "passthrough",
        ref=_zero_dim(_kthvalue),
        errors=(ErrorInput((rand(2, 3), 0), ValueError, ("kthvalue", "out of range"),
                           name="k0"),
                ErrorInput((rand(2, 3), 1), IndexError, "Dimension out of range", {"axis": 2},
                           name="bad_axis")),
        nonfinite=(NonFinite((np.array([1.0, NAN, 0.0]), 3), NAN),)),
    OpInfo("median", "sorting", (
        Sample((rand(3, 5),)),
        Sample((rand(3, 4),), {"axis": 1}, name="axis_even"),
        Sample((rand(2, 3, 5),), {"axis": 2, "keepdims": True}, name="keepdims"),
        Sample((rand(),), name="0d")), "passthrough",
        ref=_median,
        errors=(ErrorInput((rand(0),), ValueError, ("median", "empty"), name="empty"),
                ErrorInput((rand(2, 3),), IndexError, "Dimension out of range", {"axis": 2},
                           name="bad_axis")),
        nonfinite=(NonFinite((np.array([1.0, NAN, 0.0]),), NAN),
                   NonFinite((np.array([[1.0, NAN, 0.0], [2.0, 0.0, 1.0]]),), [NAN, 1.0],
                             {"axis": 1}, name="rows"))),
    OpInfo("mode", "sorting", (
        # Ties: a perturbed repeat is no longer a repeat, so no finite-difference gradient.
        Sample((_TIES,), grad=False),
        Sample((_TIES,), {"axis": 0, "keepdims": True}, name="axis0", grad=False),
        Sample((rand(3, 4),), name="distinct"),
        Sample((rand(),), name="0d")), "passthrough",
        ref=_zero_dim(_mode),
        errors=(ErrorInput((rand(2, 0),), ValueError, ("mode", "empty"), name="empty"),
                ErrorInput((rand(2, 3),), IndexError, "Dimension out of range", {"axis": 2},
                           name="bad_axis"))),
]
