"""Op-table entries for ``minigrad/functional/shape.py``."""

import numpy as np

from ..op_table import ErrorInput, OpInfo, Sample, ints, rand


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
        [ErrorInput((rand(2, 3), (0, 0)), ValueError, ("transpose", "axes"), name="repeated")],
        ref=np.transpose),
    _op("permute", [Sample((rand(2, 3, 4), (2, 0, 1))), Sample((rand(0, 3), (1, 0)), name="empty")],
        [ErrorInput((rand(2, 3), (0, 2)), IndexError, ("permute", "Dimension out of range"),
                    name="bad_axis")],
        ref=np.transpose, policy_name="transpose"),
    _op("swapaxes", [Sample((rand(2, 3, 4), 0, 2)), Sample((rand(0, 3), 0, 1), name="empty")],
        [ErrorInput((rand(2, 3), 0, 4), IndexError, "Dimension out of range", name="bad_axis")],
        ref=np.swapaxes, policy_name="transpose"),
    _op("broadcast_to", [Sample((rand(3, 1), (2, 3, 4))), Sample((rand(), (2, 3)), name="0d"),
                         Sample((rand(0, 1), (0, 4)), name="empty")],
        [ErrorInput((rand(2, 3), (3, 3)), ValueError, ("broadcast_to", "(2, 3)"), name="shape")],
        ref=np.broadcast_to),
    _op("expand_dims", [Sample((rand(3, 4), 1)), Sample((rand(), 0), name="0d"),
                        Sample((rand(0, 4), -1), name="empty")],
        [ErrorInput((rand(2, 3), 5), IndexError, "Dimension out of range", name="bad_axis")],
        ref=np.expand_dims),
    _op("squeeze", [Sample((rand(3, 1, 4),)), Sample((rand(1, 4), 0), name="axis"),
                    Sample((rand(0, 1),), name="empty")],
        [ErrorInput((rand(2, 3), 0), ValueError, ("squeeze", "size 2"), name="not_one")]),
    _op("flatten", [Sample((rand(2, 3, 4),)), Sample((rand(2, 3, 4), 1), name="start"),
                    Sample((rand(),), name="0d"), Sample((rand(0, 3),), name="empty")],
        [ErrorInput((rand(2, 3), 3), IndexError, "Dimension out of range", name="bad_axis")]),
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
        [ErrorInput((rand(2, 3), ((1, 1),)), ValueError, "pad", name="width")]),
    # MegEngine's F.nn.pad: the same pairs, the fill value named constant_value
    OpInfo("nn.pad", "shape", (
        Sample((rand(2, 3), ((1, 0), (0, 2))), {"constant_value": 3.0}),
        Sample((rand(2, 3), ((1, 1), (1, 1)), "reflect"), name="reflect")), "passthrough",
        policy_name="pad",
        ref=lambda x, w, mode="constant", constant_value=0.0: np.pad(
            x, w, mode, **({"constant_values": constant_value} if mode == "constant" else {})),
        errors=(ErrorInput((rand(2, 3), ((1, 1),)), ValueError, "pad", name="width"),)),
    _op("repeat", [Sample((rand(2, 3), 2)), Sample((rand(2, 3), 2, 1), name="axis"),
                   Sample((rand(0, 3), 2, 0), name="empty")],
        [ErrorInput((rand(2, 3), -1), ValueError, ("repeat", "-1"), name="negative")]),
    _op("tile", [Sample((rand(2, 3), (2, 1))), Sample((rand(), (3,)), name="0d"),
                 Sample((rand(0, 3), (1, 2)), name="empty")],
        [ErrorInput((rand(2, 3), (-1,)), ValueError, ("tile", "-1"), name="negative")],
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

OPS += [
    _op("flip", [Sample((rand(3, 4), 1)), Sample((rand(2, 3, 4), (0, 2)), name="axes"),
                 Sample((rand(2, 3),), name="all"), Sample((rand(), 0), name="0d"),
                 Sample((rand(0, 3), 1), name="empty")],
        [ErrorInput((rand(2, 3), 2), IndexError, ("flip", "Dimension out of range"),
                    name="bad_axis"),
         ErrorInput((rand(2, 3), (0, 0)), ValueError, ("flip", "repeated"), name="repeated")],
        ref=lambda x, axis=None: np.flip(x, axis) if x.ndim else x),
    _op("roll", [Sample((rand(3, 4), 5)), Sample((rand(3, 4), (1, -2), (0, 1)), name="axes"),
                 Sample((rand(3, 4), -1, 1), name="axis"),
                 Sample((rand(0, 3), 1, 1), name="empty")],
        [ErrorInput((rand(2, 3), (1, 2), 0), ValueError, ("roll", "same length"),
                    name="lengths"),
         ErrorInput((rand(), 1), IndexError, ("roll", "0-d"), name="0d")],
        ref=lambda x, shifts, axis=None: np.roll(x, shifts, axis)),
    _op("take_along_axis", [
        Sample((rand(3, 4), ints(4, 3, 2), 1)),
        Sample((rand(3, 4), ints(3, 2, 4), 0), name="axis0"),
        Sample((rand(3, 4), ints(4, 1, 5), 1), name="broadcast"),
        Sample((rand(3, 4), ints(12, 5)), name="flat"),
        Sample((rand(3, 4), ints(4, 3, 0), 1), name="empty")],
        [ErrorInput((rand(2, 3), np.array([[5], [0]]), 1), (IndexError, ValueError),
                    ("take_along_axis", "out of range"), name="index"),
         ErrorInput((rand(2, 3), np.array([0, 1]), 1), ValueError,
                    ("take_along_axis", "dimensions"), name="ndim")],
        ref=lambda x, idx, axis=None: np.take_along_axis(x, idx, axis)),
]


def _index_add_ref(x, axis, idx, src, alpha=1):
    out = np.array(x, dtype=np.float64)
    np.add.at(np.moveaxis(out, axis, 0) if out.ndim else out.reshape(1), idx,
              alpha * (np.moveaxis(src, axis, 0) if out.ndim else np.reshape(src, -1)))
    return out


OPS += [
    OpInfo("index_add", "shape", (
        Sample((rand(3, 4), 1, np.array([3, 0, 3]), rand(3, 3, seed=1))),
        Sample((rand(3, 4), 0, np.array([2, 2]), rand(2, 4, seed=1)), {"alpha": 2},
               name="alpha"),
        Sample((rand(), 0, np.array([0]), rand(seed=1)), name="0d"),
        Sample((rand(3, 4), 0, np.array([], np.int64), rand(0, 4, seed=1)), name="empty")),
        "promote", ref=_index_add_ref,
        errors=(ErrorInput((rand(2, 3), 1, np.array([3]), rand(2, 1)), (IndexError, ValueError),
                           ("index_add", "out of range"), name="index"),
                ErrorInput((rand(2, 3), 1, np.array([0]), rand(2, 2)), ValueError,
                           ("index_add", "source"), name="source_shape"),
                ErrorInput((rand(2, 3), 1, np.array([0]), rand(2, 1).astype(np.float32)),
                           ValueError, ("index_add", "same dtype"), name="dtypes"))),
]


def _pixel_shuffle_ref(x, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    k = len(lead)
    y = np.transpose(y, tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return y.reshape(*lead, c // (r * r), h * r, w * r)


OPS += [
    _op("pixel_shuffle", [Sample((rand(2, 8, 2, 3), 2)), Sample((rand(9, 2, 2), 3), name="3d"),
                          Sample((rand(2, 2, 4, 1, 2), 2), name="5d"),
                          Sample((rand(0, 4, 2, 2), 2), name="empty")],
        [ErrorInput((rand(1, 6, 2, 2), 2), ValueError, ("pixel_shuffle", "divisible"),
                    name="channels"),
         ErrorInput((rand(4, 2), 2), ValueError, ("pixel_shuffle", "(*, C, H, W)"),
                    name="ndim")],
        ref=_pixel_shuffle_ref),
]


def _pixel_unshuffle_ref(x, r):
    *lead, c, h, w = x.shape
    k = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = np.transpose(y, tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return y.reshape(*lead, c * r * r, h // r, w // r)


OPS += [
    _op("pixel_unshuffle", [Sample((rand(2, 2, 4, 6), 2)), Sample((rand(1, 3, 3), 3), name="3d"),
                            Sample((rand(2, 2, 1, 4, 2), 2), name="5d"),
                            Sample((rand(0, 1, 2, 2), 2), name="empty")],
        [ErrorInput((rand(1, 1, 3, 2), 2), ValueError, ("pixel_unshuffle", "divisible"),
                    name="spatial"),
         ErrorInput((rand(4, 2), 2), ValueError, ("pixel_unshuffle", "(*, C, H, W)"),
                    name="ndim")],
        ref=_pixel_unshuffle_ref),
]


def _channel_shuffle_ref(x, g):
    n, c, *rest = x.shape
    return x.reshape(n, g, c // g, *rest).swapaxes(1, 2).reshape(x.shape)


OPS += [
    _op("channel_shuffle", [Sample((rand(2, 6, 3), 3)), Sample((rand(1, 4, 2, 2), 2), name="4d"),
                            Sample((rand(0, 4, 2), 2), name="empty")],
        [ErrorInput((rand(1, 5, 2), 2), ValueError, ("channel_shuffle", "divisible"),
                    name="channels"),
         ErrorInput((rand(4, 2), 2), ValueError, ("channel_shuffle", "(N, C, *)"), name="ndim")],
        ref=_channel_shuffle_ref, amp=None,
        amp_note="a composite of views (reshape, swapaxes), each governed by its own row"),
]
