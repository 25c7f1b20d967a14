"""Op-table entries for ``minigrad/functional/conv.py``."""

import numpy as np

from ..op_table import ErrorInput, OpInfo, Sample, rand


__all__ = ["OPS"]

OPS = [
    OpInfo("conv2d", "conv", (
        Sample((rand(1, 2, 5, 5), rand(3, 2, 3, 3, seed=1), rand(3, seed=2))),
        Sample((rand(2, 2, 5, 6), rand(4, 1, 2, 3, seed=1)),
               {"stride": 2, "padding": 1, "groups": 2}, name="stride_groups"),
        Sample((rand(1, 2, 6, 6), rand(2, 2, 3, 3, seed=1)), {"dilation": 2}, name="dilation"),
        Sample((rand(0, 2, 5, 5), rand(3, 2, 3, 3, seed=1)), name="empty")), "lower",
        gradgrad=True,
        errors=(ErrorInput((rand(1, 3, 5, 5), rand(2, 4, 3, 3)), ValueError,
                           ("conv2d", "channel"), name="channels"),
                ErrorInput((rand(1, 3, 5, 5), rand(2, 3, 3, 3)), ValueError,
                           ("conv2d", "stride"), {"stride": 0}, name="stride0"))),
    OpInfo("conv1d", "conv", (
        Sample((rand(2, 2, 7), rand(3, 2, 3, seed=1), rand(3, seed=2))),
        Sample((rand(1, 2, 7), rand(2, 2, 2, seed=1)), {"stride": 2, "padding": 1},
               name="stride"),
        Sample((rand(0, 2, 7), rand(3, 2, 3, seed=1)), name="empty")), "lower",
        gradgrad=True,
        errors=(ErrorInput((rand(1, 3, 5), rand(2, 3, 7)), ValueError,
                           ("conv1d", "kernel"), name="kernel_too_large"),)),
    OpInfo("conv_transpose2d", "conv", (
        Sample((rand(1, 2, 4, 4), rand(2, 3, 3, 3, seed=1), rand(3, seed=2))),
        Sample((rand(1, 2, 3, 3), rand(2, 2, 3, 3, seed=1)),
               {"stride": 2, "padding": 1, "output_padding": 1}, name="stride"),
        Sample((rand(0, 2, 4, 4), rand(2, 3, 3, 3, seed=1)), name="empty")), "lower",
        gradgrad=True,
        errors=(ErrorInput((rand(1, 3, 5, 5), rand(4, 2, 3, 3)), ValueError,
                           ("conv_transpose2d", "channel"), name="channels"),)),
]


def _pairs(*vs):
    return [(v, v) if isinstance(v, int) else tuple(v) for v in vs]


def _unfold_ref(x, kernel_size, dilation=1, padding=0, stride=1):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _pairs(kernel_size, dilation, padding, stride)
    batched = x.ndim == 4
    x = x if batched else x[None]
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    cols = np.stack([xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                        j * dw:j * dw + sw * (ow - 1) + 1:sw]
                     for i in range(kh) for j in range(kw)], axis=2)
    out = cols.reshape(x.shape[0], x.shape[1] * kh * kw, oh * ow)
    return out if batched else out[0]


def _fold_ref(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    # the adjoint of unfold: each output element sums the columns that copied it
    if cols.ndim == 2:
        return _fold_ref(cols[None], output_size, kernel_size, dilation, padding, stride)[0]
    (h, w), = _pairs(output_size)
    n, c = cols.shape[0], cols.shape[1] // np.prod(_pairs(kernel_size)[0])
    index = np.arange(c * h * w, dtype=np.float64).reshape(1, c, h, w)
    where = _unfold_ref(index, kernel_size, dilation, padding, stride)  # 0 marks padding too
    inside = _unfold_ref(np.ones((1, c, h, w)), kernel_size, dilation, padding, stride) > 0
    out = np.zeros((n, c * h * w))
    for b in range(n):
        np.add.at(out[b], where[0][inside[0]].astype(np.int64), cols[b][inside[0]])
    return out.reshape(n, c, h, w)


OPS += [
    OpInfo("unfold", "conv", (
        Sample((rand(2, 3, 5, 6), 2)),
        Sample((rand(1, 2, 6, 7), (2, 3)), {"dilation": (2, 1), "padding": 1, "stride": (2, 1)},
               name="geometry"),
        Sample((rand(2, 4, 5), 3), {"padding": 1}, name="unbatched"),
        Sample((rand(0, 2, 4, 4), 2), name="empty")), "passthrough", ref=_unfold_ref,
        errors=(ErrorInput((rand(1, 2, 3, 3), 4), ValueError, ("unfold", "do not fit"),
                           name="too_large"),
                ErrorInput((rand(2, 3), 2), ValueError, ("unfold", "(N, C, H, W)"),
                           name="ndim"))),
    OpInfo("fold", "conv", (
        Sample((rand(2, 12, 20), (5, 6), 2)),
        Sample((rand(1, 12, 21), (6, 7), (2, 3)),
               {"dilation": (2, 1), "padding": 1, "stride": (2, 1)}, name="geometry"),
        Sample((rand(36, 15), (5, 6), 3), {"padding": 1, "stride": (1, 2)}, name="unbatched"),
        Sample((rand(0, 8, 9), (4, 4), 2), name="empty")), "passthrough", ref=_fold_ref,
        errors=(ErrorInput((rand(1, 12, 19), (5, 6), 2), ValueError, ("fold", "block"),
                           name="blocks"),
                ErrorInput((rand(1, 10, 20), (5, 6), 2), ValueError, ("fold", "C*4"),
                           name="channels"))),
]
