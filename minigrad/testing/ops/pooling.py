"""Op-table entries for ``minigrad/functional/pooling.py`` and ``pooling_nd.py``."""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, rand



def _avg_pool_ref(x, kernel_size, stride=None, padding=0, mode="average_count_exclude_padding",
                  count_include_pad=None):
    """Average pooling; the padding counts in the mean unless excluded (MegEngine's default
    mode, PyTorch's ``count_include_pad=False``)."""
    k = kernel_size
    s = k if stride is None else stride
    include = mode == "average" if count_include_pad is None else count_include_pad
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ones = np.pad(np.ones(x.shape[2:]), padding)
    oh, ow = (xp.shape[2] - k) // s + 1, (xp.shape[3] - k) // s + 1
    out = np.empty(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s:i * s + k, j * s:j * s + k].sum((2, 3))
            n = k * k if include else ones[i * s:i * s + k, j * s:j * s + k].sum()
            out[:, :, i, j] = win / n
    return out


__all__ = ["OPS"]

OPS = [
    OpInfo("max_pool2d", "pooling", (
        Sample((rand(1, 2, 4, 4), 2)),
        Sample((rand(2, 1, 5, 5), 3), {"stride": 2, "padding": 1}, name="padding"),
        Sample((rand(2, 1, 7, 6), 2, 1, 1, 2), name="dilation"),
        Sample((rand(1, 2, 7, 6), 3, 2, 1), {"ceil_mode": True}, name="ceil"),
        Sample((rand(1, 2, 5, 7), (2, 3), (2, 1), (1, 0), (1, 2), True, True),
               name="indices_ceil_dilation"),
        Sample((rand(2, 5, 5), 2), {"return_indices": True}, name="unbatched_indices"),
        Sample((rand(0, 2, 4, 4), 2), name="empty")), "passthrough",
        errors=(ErrorInput((rand(1, 1, 2, 2), 3), ValueError, ("max_pool2d", "kernel"),
                           name="kernel_too_large"),
                ErrorInput((rand(2, 2), 2), ValueError, ("max_pool2d", "(N, C, H, W)"),
                           name="rank"),
                ErrorInput((rand(1, 1, 9, 9), 3), ValueError, ("max_pool2d", "padding"),
                           {"padding": 2, "dilation": 2}, name="padding_dilated"),
                ErrorInput((rand(1, 1, 4, 4), 2), ValueError, ("max_pool2d", "dilation"),
                           {"dilation": 0}, name="dilation")),
        nonfinite=(NonFinite((np.array([[[[1.0, NAN], [2.0, -INF]]]]), 2), [[[[NAN]]]]),)),
    OpInfo("avg_pool2d", "pooling", (
        Sample((rand(1, 2, 4, 4), 2)),
        Sample((rand(2, 1, 5, 5), 3), {"stride": 2, "padding": 1}, name="padding"),
        Sample((rand(2, 1, 5, 5), 3), {"stride": 2, "padding": 1, "count_include_pad": False},
               name="exclude_pad", expect=_avg_pool_ref(rand(2, 1, 5, 5), 3, 2, 1,
                                                         count_include_pad=False)),
        Sample((rand(1, 2, 6, 7), 3, 2, 1, True), name="ceil"),
        Sample((rand(1, 2, 6, 7), 3, 2, 1, True, False), name="ceil_exclude_pad"),
        Sample((rand(2, 5, 6), 2, None, 1, False, True, 3), name="unbatched_divisor"),
        Sample((rand(0, 2, 4, 4), 2), name="empty")), "passthrough",
        errors=(ErrorInput((rand(1, 1, 4, 4), 2), ValueError, ("avg_pool2d", "padding"),
                           {"padding": 2}, name="padding"),
                ErrorInput((rand(1, 1, 4, 4), 2), ValueError, ("avg_pool2d",
                                                               "divisor_override"),
                           {"divisor_override": 0}, name="divisor"),
                ErrorInput((np.ones((1, 1, 4, 4), np.int32), 2), ValueError,
                           ("avg_pool2d", "floating", "int32"), name="int32")),
        nonfinite=(NonFinite((np.array([[[[1.0, INF], [2.0, 3.0]]]]), 2), [[[[INF]]]]),)),
    # MegEngine's F.nn.avg_pool2d: the padding is left out of the mean by default
    OpInfo("nn.avg_pool2d", "pooling", (
        Sample((rand(2, 1, 5, 5), 3), {"stride": 2, "padding": 1}),
        Sample((rand(1, 2, 4, 4), 2), name="no_padding"),
        Sample((rand(2, 1, 5, 5), 3, 2, 1, "average"), name="average")), "passthrough",
        policy_name="avg_pool2d", ref=_avg_pool_ref,
        errors=(ErrorInput((rand(1, 1, 4, 4), 2), ValueError, ("avg_pool2d", "mode"),
                           {"mode": "max"}, name="mode"),)),
    OpInfo("adaptive_avg_pool2d", "pooling", (
        Sample((rand(1, 2, 5, 6), (2, 3))),
        Sample((rand(2, 1, 4, 4), 1), name="global"),
        Sample((rand(0, 2, 4, 4), 2), name="empty")), "passthrough",
        errors=(ErrorInput((rand(1, 1, 4, 4), 0), ValueError,
                           ("adaptive_avg_pool2d", "output_size"), name="size"),)),
]


def _windows1d(length, k, s, p, d=1, ceil_mode=False):
    """PyTorch's 1-D pooling windows: (first position, the window's positions)."""
    span = d * (k - 1) + 1
    num = length + 2 * p - span
    n_out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (n_out - 1) * s >= length + p:
        n_out -= 1
    return [(i * s - p, [i * s - p + j * d for j in range(k)]) for i in range(n_out)]


def _max_pool1d_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                    return_indices=False):
    if x.ndim == 2:  # unbatched
        return _max_pool1d_ref(x[None], kernel_size, stride, padding, dilation, ceil_mode)[0]
    wins = _windows1d(x.shape[2], kernel_size, kernel_size if stride is None else stride,
                      padding, dilation, ceil_mode)
    return np.stack([x[:, :, [q for q in pos if 0 <= q < x.shape[2]]].max(-1)
                     for _, pos in wins], axis=2)


def _avg_pool1d_ref(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                    count_include_pad=True):
    if x.ndim == 2:  # unbatched
        return _avg_pool1d_ref(x[None], kernel_size, stride, padding, ceil_mode,
                               count_include_pad)[0]
    length = x.shape[2]
    wins = _windows1d(length, kernel_size, kernel_size if stride is None else stride, padding,
                      1, ceil_mode)
    out = []
    for start, pos in wins:
        inside = [q for q in pos if 0 <= q < length]
        count = (min(start + kernel_size, length + padding) - start if count_include_pad
                 else len(inside))
        out.append(x[:, :, inside].sum(-1) / count)
    return np.stack(out, axis=2)


def _adaptive_max_ref(x, output_size, return_indices=False):
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    h, w = x.shape[2:]
    oh, ow = h if oh is None else oh, w if ow is None else ow
    out = np.empty(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = x[:, :, i * h // oh:-(-(i + 1) * h // oh),
                                j * w // ow:-(-(j + 1) * w // ow)].max((2, 3))
    return out


OPS += [
    OpInfo("max_pool1d", "pooling", (
        Sample((rand(2, 3, 8), 2)),
        Sample((rand(2, 1, 7), 3), {"stride": 2, "padding": 1}, name="padding"),
        Sample((rand(2, 3, 9), 2, 1, 1, 3, True, True), name="indices_ceil_dilation"),
        Sample((rand(0, 2, 6), 2), name="empty")), "passthrough",
        ref=_max_pool1d_ref,
        errors=(ErrorInput((rand(1, 4, 4, 4), 2), ValueError, ("max_pool1d", "(N, C, L)"),
                           name="ndim"),
                ErrorInput((np.ones((1, 1, 4), np.int64), 2), ValueError,
                           ("max_pool1d", "floating"), name="integer")),
        nonfinite=(NonFinite((np.array([[[1.0, NAN, 2.0, INF]]]), 2), [[[NAN, INF]]]),)),
    OpInfo("avg_pool1d", "pooling", (
        Sample((rand(2, 3, 8), 2)),
        Sample((rand(2, 1, 7), 3), {"stride": 2, "padding": 1}, name="padding"),
        Sample((rand(2, 1, 7), 3), {"stride": 2, "padding": 1, "count_include_pad": False},
               name="exclude_pad"),
        Sample((rand(3, 8), 3, 2, 1, True, False), name="unbatched_ceil"),
        Sample((rand(0, 2, 6), 2), name="empty")), "passthrough",
        ref=_avg_pool1d_ref,
        errors=(ErrorInput((rand(1, 1, 4), 2), ValueError, ("avg_pool1d", "padding"),
                           {"padding": 2}, name="padding"),),
        nonfinite=(NonFinite((np.array([[[1.0, INF, 2.0, 3.0]]]), 2), [[[INF, 2.5]]]),)),
    OpInfo("adaptive_max_pool2d", "pooling", (
        Sample((rand(1, 2, 5, 6), (2, 3))),
        Sample((rand(2, 1, 4, 4), 1), name="global"),
        Sample((rand(1, 2, 5, 7), (3, None)), name="keep_width"),
        Sample((rand(1, 2, 5, 6), (2, 3), True), name="indices"),
        Sample((rand(0, 2, 4, 4), 2), name="empty")), "passthrough", ref=_adaptive_max_ref,
        errors=(ErrorInput((rand(1, 1, 4, 4), 0), ValueError,
                           ("adaptive_max_pool2d", "output_size"), name="size"),),
        nonfinite=(NonFinite((np.array([[[[1.0, NAN], [INF, 2.0]]]]), 1), [[[[NAN]]]]),)),
]


# --------------------------------------------------------------------------- pooling_nd.py
# Composites of other ops (the 1-D/2-D pools, pow, the 2-D adaptive pools, index_put...), each
# governed by its own policy row: no row of their own.
_COMPOSITE = "a composite of other ops (max_pool1d/2d, avg_pool1d/2d, pow, " \
             "adaptive_*_pool2d, index_put...), each governed by its own policy row"


def _nd(name, samples, errors=(), amp_note=_COMPOSITE, **kw):
    return OpInfo(name, "pooling_nd", tuple(samples), None, amp_note=amp_note,
                  errors=tuple(errors), **kw)


OPS += [
    _nd("max_pool3d", [
        Sample((rand(1, 2, 4, 4, 4), 2)),
        Sample((rand(1, 1, 5, 5, 5), 3), {"stride": 2, "padding": 1, "dilation": 1,
                                          "ceil_mode": True}, name="ceil_pad"),
        Sample((rand(2, 3, 5, 4), 2), {"dilation": (1, 2, 1)}, name="unbatched_dilation"),
        Sample((rand(1, 2, 4, 4, 4), 2), {"return_indices": True}, name="indices"),
        Sample((rand(1, 1, 5, 4, 6), (2, 3, 2), (2, 1, 2), (1, 1, 0), (1, 1, 2), True, True),
               name="positional"),
        Sample((rand(0, 2, 4, 4, 4), 2), name="empty")],
        [ErrorInput((rand(1, 4, 4), 2), ValueError, ("max_pool3d", "5-D"), name="ndim"),
         ErrorInput((rand(1, 1, 7, 7, 7), 3), ValueError, ("max_pool3d", "padding"),
                    {"padding": 2, "dilation": 2}, name="padding"),
         ErrorInput((np.ones((1, 1, 2, 2, 2), bool), 2), ValueError, ("max_pool3d", "bool"),
                    name="bool")]),
    _nd("avg_pool3d", [
        Sample((rand(1, 2, 4, 4, 4), 2)),
        Sample((rand(1, 1, 5, 5, 5), 3), {"stride": 2, "padding": 1, "ceil_mode": True,
                                          "count_include_pad": False}, name="ceil_exclude"),
        Sample((rand(2, 3, 4, 4), 2), {"divisor_override": 3}, name="unbatched_divisor"),
        Sample((rand(1, 1, 5, 4, 6), (2, 3, 2), (2, 1, 2), (1, 1, 0), True, False, -4),
               name="positional"),
        Sample((rand(0, 2, 4, 4, 4), 2), name="empty")],
        [ErrorInput((rand(1, 4, 4), 2), ValueError, ("avg_pool3d", "5-D"), name="ndim"),
         ErrorInput((rand(1, 1, 4, 4, 4), 2), ValueError, ("avg_pool3d", "divisor_override"),
                    {"divisor_override": 0}, name="divisor"),
         ErrorInput((rand(1, 1, 5, 5, 5), 6), ValueError, ("avg_pool3d", "kernel must fit"),
                    {"padding": 1}, name="kernel_fits")]),
    _nd("lp_pool1d", [
        Sample((rand(2, 3, 8) + 1.5, 2.0, 2)),
        Sample((rand(1, 2, 7) + 1.5, 3.0, 3), {"stride": 2, "ceil_mode": True}, name="ceil"),
        Sample((rand(0, 2, 6) + 1.5, 2.0, 2), name="empty")]),
    _nd("lp_pool2d", [
        Sample((rand(1, 2, 4, 6) + 1.5, 2.0, 2)),
        Sample((rand(1, 2, 5, 5) + 1.5, 1.5, (2, 3)), {"stride": 2}, name="stride"),
        Sample((rand(1, 2, 5, 6) + 1.5, 2.0, 2, 2, True), name="ceil"),
        Sample((rand(0, 2, 4, 4) + 1.5, 2.0, 2), name="empty")]),
    _nd("lp_pool3d", [
        Sample((rand(1, 2, 4, 4, 4) + 1.5, 2.0, 2)),
        Sample((rand(1, 2, 5, 4, 5) + 1.5, 2.0, 2, (2, 1, 2), True), name="ceil"),
        Sample((rand(0, 2, 4, 4, 4) + 1.5, 2.0, 2), name="empty")]),
    _nd("adaptive_avg_pool1d", [
        Sample((rand(2, 3, 8), 3)),
        Sample((rand(3, 7), 4), name="unbatched"),
        Sample((rand(0, 2, 6), 2), name="empty")]),
    _nd("adaptive_avg_pool3d", [
        Sample((rand(1, 2, 5, 4, 6), (2, 3, 4))),
        Sample((rand(2, 4, 4, 5), (3, None, 2)), name="unbatched_none"),
        Sample((rand(0, 2, 4, 4, 4), 2), name="empty")]),
    _nd("adaptive_max_pool1d", [
        Sample((rand(2, 3, 8), 3)),
        Sample((rand(2, 3, 7), 4, True), name="indices"),
        Sample((rand(0, 2, 6), 2), name="empty")]),
    _nd("adaptive_max_pool3d", [
        Sample((rand(1, 2, 5, 4, 6), (2, 3, 4))),
        Sample((rand(1, 2, 5, 4, 6), (2, 3, 4), True), name="indices"),
        Sample((rand(0, 2, 4, 4, 4), 2), name="empty")]),
    _nd("max_unpool1d", [
        Sample((rand(2, 1, 3), np.array([[[1, 2, 5]], [[0, 3, 4]]]), 2)),
        Sample((rand(1, 1, 3), np.array([[[1, 2, 5]]]), 2), {"output_size": (7,)},
               name="output_size")],
        [ErrorInput((rand(1, 1, 3), np.array([[[1, 2, 9]]]), 2), ValueError,
                    ("max_unpool1d", "index"), name="index")]),
    _nd("max_unpool2d", [
        Sample((rand(1, 1, 2, 2), np.array([[[[5, 2], [13, 15]]]]), 2))]),
    _nd("max_unpool3d", [
        Sample((rand(1, 1, 1, 1, 2), np.array([[[[[5, 10]]]]]), 2))]),
]
