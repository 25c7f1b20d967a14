"""Op-table entries for ``minigrad/functional/shape.py``."""

import numpy as np

from ..op_table import ErrorInput, OpInfo, Sample, ints, rand

_AXIS_ERR = ("a bad axis raises IndexError 'Dimension out of range' as in PyTorch "
             "(today: ValueError or a bare IndexError)")


def _op(name, samples, errors=(), ref=None, amp="passthrough", **kw):
    return OpInfo(name, "shape", tuple(samples), amp, errors=tuple(errors), ref=ref, **kw)


__all__ = ["OPS"]

OPS = [
    _op("reshape", [Sample((rand(3, 4), (2, 6))), Sample((rand(3, 4), (-1,)), name="infer"),
                    Sample((rand(), (1, 1)), name="0d"),
                    Sample((rand(0, 4), (4, 0)), name="empty")],
        [ErrorInput((rand(2, 3), (4,)), ValueError, ("reshape", "(4,)"), name="size")],
        ref=np.reshape),
    _op("transpose", [Sample((rand(2, 3, 4),)), Sample((rand(2, 3, 4), (1, 2, 0)), name="axes"),
                      Sample((rand(0, 3),), name="empty")],
        [ErrorInput((rand(2, 3), (0, 0)), ValueError, ("transpose", "axes"), name="repeated",
                    xfail="the error names neither the op nor the axes (NumPy's message)")],
        ref=np.transpose),
    _op("permute", [Sample((rand(2, 3, 4), (2, 0, 1))), Sample((rand(0, 3), (1, 0)), name="empty")],
        [ErrorInput((rand(2, 3), (0, 2)), IndexError, ("permute", "Dimension out of range"),
                    name="bad_axis", xfail=_AXIS_ERR)],
        ref=np.transpose, policy_name="transpose"),
    _op("swapaxes", [Sample((rand(2, 3, 4), 0, 2)), Sample((rand(0, 3), 0, 1), name="empty")],
        [ErrorInput((rand(2, 3), 0, 4), IndexError, "Dimension out of range", name="bad_axis",
                    xfail=_AXIS_ERR)],
        ref=np.swapaxes, policy_name="transpose"),
    _op("broadcast_to", [Sample((rand(3, 1), (2, 3, 4))), Sample((rand(), (2, 3)), name="0d"),
                         Sample((rand(0, 1), (0, 4)), name="empty")],
        [ErrorInput((rand(2, 3), (3, 3)), ValueError, ("broadcast_to", "(2, 3)"), name="shape")],
        ref=np.broadcast_to),
    _op("expand_dims", [Sample((rand(3, 4), 1)), Sample((rand(), 0), name="0d"),
                        Sample((rand(0, 4), -1), name="empty")],
        [ErrorInput((rand(2, 3), 5), IndexError, "Dimension out of range", name="bad_axis",
                    xfail=_AXIS_ERR)],
        ref=np.expand_dims),
    _op("squeeze", [Sample((rand(3, 1, 4),)), Sample((rand(1, 4), 0), name="axis"),
                    Sample((rand(0, 1),), name="empty")],
        [ErrorInput((rand(2, 3), 0), ValueError, ("squeeze", "size 2"), name="not_one")]),
    _op("flatten", [Sample((rand(2, 3, 4),)), Sample((rand(2, 3, 4), 1), name="start"),
                    Sample((rand(),), name="0d"), Sample((rand(0, 3),), name="empty")],
        [ErrorInput((rand(2, 3), 3), IndexError, "Dimension out of range", name="bad_axis",
                    xfail=_AXIS_ERR)]),
    _op("concat", [Sample(([rand(2, 3), rand(4, 3, seed=1)],)),
                   Sample(([rand(2, 3), rand(2, 1, seed=1)], 1), name="axis1"),
                   Sample(([rand(0, 3), rand(2, 3, seed=1)],), name="empty")],
        [ErrorInput(([rand(2, 3), rand(4)],), ValueError, ("concat", "(4,)"), name="shapes")],
        amp="promote"),
    _op("stack", [Sample(([rand(2, 3), rand(2, 3, seed=1)],)),
                  Sample(([rand(2, 3), rand(2, 3, seed=1)], -1), name="last"),
                  Sample(([rand(), rand(seed=1)],), name="0d"),
                  Sample(([rand(0, 3), rand(0, 3, seed=1)],), name="empty")],
        [ErrorInput(([rand(2, 3), rand(4)],), ValueError, ("stack", "(4,)"), name="shapes")],
        amp="promote"),
    _op("split", [Sample((rand(4, 3), 2)), Sample((rand(3, 5), [1, 3], 1), name="points"),
                  Sample((rand(0, 3), 1), name="empty")],
        [ErrorInput((rand(2, 3), 4, 1), ValueError, ("split", "4"), name="uneven")]),
    _op("getitem", [Sample((rand(3, 4), (slice(0, 2), 1))),
                    Sample((rand(3, 4), np.array([2, 0, 2])), name="int_array"),
                    Sample((rand(3, 4), (Ellipsis, None, slice(None, None, 2))), name="ellipsis"),
                    Sample((rand(3, 4), rand(3, 4) > 0), name="mask"),
                    Sample((rand(0, 4), slice(None)), name="empty")],
        [ErrorInput((rand(2, 3), 5), IndexError, "5", name="out_of_range")]),
    _op("pad", [Sample((rand(2, 3), ((1, 0), (0, 2)))),
                Sample((rand(2, 3), ((1, 1), (1, 1))), {"mode": "reflect"}, name="reflect"),
                Sample((rand(0, 3), ((0, 0), (1, 1))), {"value": 2.0}, name="empty")],
        [ErrorInput((rand(2, 3), ((1, 1),)), ValueError, "pad", name="width",
                    xfail="a pad width for fewer axes than x has is broadcast silently "
                          "(NumPy semantics); PyTorch pads trailing axes, so it is ambiguous")]),
    _op("repeat", [Sample((rand(2, 3), 2)), Sample((rand(2, 3), 2, 1), name="axis"),
                   Sample((rand(0, 3), 2, 0), name="empty")],
        [ErrorInput((rand(2, 3), -1), ValueError, ("repeat", "-1"), name="negative",
                    xfail="the error is NumPy's 'negative dimensions are not allowed', naming "
                          "neither the op nor the value")]),
    _op("tile", [Sample((rand(2, 3), (2, 1))), Sample((rand(), (3,)), name="0d"),
                 Sample((rand(0, 3), (1, 2)), name="empty")],
        [ErrorInput((rand(2, 3), (-1,)), ValueError, ("tile", "-1"), name="negative",
                    xfail="the error is NumPy's 'negative dimensions are not allowed', naming "
                          "neither the op nor the value")],
        ref=np.tile),
    _op("gather", [Sample((rand(3, 4), 1, ints(4, 3, 2))),
                   Sample((rand(3, 4), 0, ints(3, 2, 4)), name="axis0"),
                   Sample((rand(3, 4), 1, ints(4, 3, 0)), name="empty")],
        [ErrorInput((rand(2, 3), 1, np.array([[5], [0]])), (IndexError, ValueError),
                    ("gather", "out of range"), name="index")],
        ref=lambda x, axis, idx: np.take_along_axis(x, idx, axis)),
    _op("index_select", [Sample((rand(3, 4), 1, np.array([3, 0, 3]))),
                         Sample((rand(3, 4), 0, np.array([], np.int64)), name="empty")],
        [ErrorInput((rand(2, 3), 1, np.array([7])), (IndexError, ValueError),
                    ("index_select", "out of range"), name="index")],
        ref=lambda x, axis, idx: np.take(x, idx, axis)),
    _op("scatter_add", [Sample((rand(3, 4), 1, ints(4, 3, 2), rand(3, 2, seed=1))),
                        Sample((rand(3, 4), 1, ints(4, 3, 0), rand(3, 0)), name="empty")],
        [ErrorInput((rand(2, 3), 1, np.array([[5, 0], [0, 0]]), rand(2, 2)),
                    (IndexError, ValueError), ("scatter_add", "out of range"), name="index")],
        amp="promote"),
    _op("one_hot", [Sample((np.array([0, 2, 1]), 3)),
                    Sample((np.array([], np.int64), 2), name="empty")],
        [ErrorInput((np.array([3]), 2), ValueError, ("one_hot", "num_classes=2"), name="range")],
        differentiable=False, ref=lambda t, n: np.eye(n)[t]),
]
