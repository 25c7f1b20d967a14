"""Op-table entries for ``minigrad/functional/conv_nd.py``.

All four are composites over the 2-D kernels ("lower" rows, second derivative declared). The
references are direct N-D loops over the kernel taps, independent of the 2-D kernels.
"""

import numpy as np

from ..op_table import NAN, ErrorInput, NonFinite, OpInfo, Sample, rand


def _per_axis(v, nd):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd


def _conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    nd = x.ndim - 2
    s, p, d = (_per_axis(v, nd) for v in (stride, padding, dilation))
    x = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in p])
    k = w.shape[2:]
    sizes = [(x.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    out = np.zeros((x.shape[0], w.shape[0], *sizes))
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    for tap in np.ndindex(*k):
        patch = x[(slice(None), slice(None)) + tuple(
            slice(tap[i] * d[i], tap[i] * d[i] + (sizes[i] - 1) * s[i] + 1, s[i])
            for i in range(nd))]
        for g in range(groups):
            out[:, g * og:(g + 1) * og] += np.einsum(
                "nc...,oc->no...", patch[:, g * cg:(g + 1) * cg],
                w[(slice(g * og, (g + 1) * og), slice(None)) + tap])
    return out if b is None else out + b.reshape((1, -1) + (1,) * nd)


def _convt_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    nd = x.ndim - 2
    s, p, q, d = (_per_axis(v, nd) for v in (stride, padding, output_padding, dilation))
    k, n_in = w.shape[2:], x.shape[2:]
    full = [(n_in[i] - 1) * s[i] + d[i] * (k[i] - 1) + q[i] + 1 for i in range(nd)]
    cg, og = x.shape[1] // groups, w.shape[1]
    out = np.zeros((x.shape[0], og * groups, *full))
    for tap in np.ndindex(*k):
        region = tuple(slice(tap[i] * d[i], tap[i] * d[i] + (n_in[i] - 1) * s[i] + 1, s[i])
                       for i in range(nd))
        for g in range(groups):
            out[(slice(None), slice(g * og, (g + 1) * og)) + region] += np.einsum(
                "nc...,co->no...", x[:, g * cg:(g + 1) * cg],
                w[(slice(g * cg, (g + 1) * cg), slice(None)) + tap])
    out = out[(slice(None), slice(None)) + tuple(slice(p[i], full[i] - p[i])
                                                 for i in range(nd))]
    return out if b is None else out + b.reshape((1, -1) + (1,) * nd)


def _convolution_ref(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        return _convt_ref(x, w, b, stride, padding, output_padding, groups, dilation)
    return _conv_ref(x, w, b, stride, padding, dilation, groups)


def _op(name, samples, errors, ref, nonfinite=()):
    return OpInfo(name, "conv_nd", tuple(samples), "lower", errors=tuple(errors), ref=ref,
                  gradgrad=True, nonfinite=tuple(nonfinite))


_NAN_ROW = np.array([[[NAN, 1.0, 1.0]]])

__all__ = ["OPS"]

OPS = [
    _op("conv3d", [
        Sample((rand(1, 2, 3, 4, 3), rand(2, 2, 2, 2, 2, seed=1), rand(2, seed=2))),
        Sample((rand(1, 2, 4, 3, 4), rand(2, 1, 2, 2, 2, seed=1)),
               {"stride": (2, 1, 2), "padding": 1, "groups": 2}, name="stride_groups"),
        Sample((rand(1, 1, 4, 3, 3), rand(1, 1, 2, 1, 2, seed=1)), {"dilation": (2, 1, 2)},
               name="dilation"),
        Sample((rand(0, 2, 3, 3, 3), rand(2, 2, 2, 2, 2, seed=1)), name="empty")],
        [ErrorInput((rand(2, 3, 3), rand(2, 2, 2, 2, 2)), ValueError,
                    ("conv3d", "(2, 3, 3)"), name="rank"),
         ErrorInput((rand(1, 3, 3, 3, 3), rand(2, 2, 2, 2, 2)), ValueError,
                    ("conv3d", "channel", "(1, 3, 3, 3, 3)", "(2, 2, 2, 2, 2)"),
                    name="channels"),
         ErrorInput((rand(1, 2, 3, 3, 3), rand(2, 2, 2, 2, 2)), ValueError,
                    ("conv3d", "stride"), {"stride": 0}, name="stride0")],
        _conv_ref),
    _op("conv_transpose1d", [
        Sample((rand(2, 2, 4), rand(2, 3, 3, seed=1), rand(3, seed=2))),
        Sample((rand(1, 2, 3), rand(2, 2, 3, seed=1)),
               {"stride": 2, "padding": 1, "output_padding": 1}, name="stride"),
        Sample((rand(1, 4, 3), rand(4, 1, 2, seed=1)), {"groups": 2, "dilation": 2},
               name="groups_dilation"),
        Sample((rand(0, 2, 4), rand(2, 3, 3, seed=1)), name="empty")],
        [ErrorInput((rand(1, 3, 5), rand(4, 2, 3)), ValueError,
                    ("conv_transpose1d", "channel", "(1, 3, 5)"), name="channels")],
        _convt_ref,
        [NonFinite((_NAN_ROW, np.ones((1, 1, 2))), [[[NAN, NAN, 2.0, 1.0]]])]),
    _op("conv_transpose3d", [
        Sample((rand(1, 2, 2, 3, 2), rand(2, 2, 2, 2, 2, seed=1), rand(2, seed=2))),
        Sample((rand(1, 2, 2, 2, 3), rand(2, 1, 2, 2, 2, seed=1)),
               {"stride": (2, 1, 2), "padding": (1, 0, 1), "output_padding": (1, 0, 0),
                "groups": 2}, name="stride_groups"),
        Sample((rand(1, 1, 2, 2, 2), rand(1, 1, 2, 2, 1, seed=1)), {"dilation": 2},
               name="dilation"),
        Sample((rand(0, 2, 2, 2, 2), rand(2, 2, 2, 2, 2, seed=1)), name="empty")],
        [ErrorInput((rand(1, 2, 3, 3, 3), rand(2, 2, 2, 2, 2)), ValueError,
                    ("conv_transpose3d", "output_padding"), {"output_padding": 1},
                    name="output_padding")],
        _convt_ref),
    _op("convolution", [
        Sample((rand(1, 2, 3, 4), rand(3, 2, 2, 2, seed=1), rand(3, seed=2), 1, 0, 1, False, 0,
                1)),
        Sample((rand(2, 2, 5), rand(2, 2, 3, seed=1), None, 2, 1, 1, False, 0, 1), name="1d"),
        Sample((rand(1, 2, 3, 3, 2), rand(2, 1, 2, 2, 2, seed=1), None, 1, 1, 1, False, 0, 2),
               name="3d_groups"),
        Sample((rand(1, 2, 3, 3), rand(2, 2, 2, 2, seed=1), rand(2, seed=2), 2, 1, 1, True, 1,
                1), name="transposed_2d"),
        Sample((rand(1, 2, 3), rand(2, 3, 2, seed=1), None, 1, 0, 2, True, 0, 1),
               name="transposed_1d"),
        Sample((rand(1, 2, 2, 2, 2), rand(2, 1, 2, 2, 2, seed=1), None, 1, 0, 1, True, 0, 1),
               name="transposed_3d")],
        [ErrorInput((rand(2, 3), rand(2, 3), None, 1, 0, 1, False, 0, 1), ValueError,
                    ("convolution", "(2, 3)"), name="rank"),
         ErrorInput((rand(1, 3, 4, 4, 4), rand(2, 2, 2, 2, 2), None, 1, 0, 1, False, 0, 1),
                    ValueError, ("convolution", "channel", "(1, 3, 4, 4, 4)"),
                    name="channels")],
        _convolution_ref),
]
