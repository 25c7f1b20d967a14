"""Op-table entries for ``minigrad/functional/sampling.py``.

``grid_sample`` is a composite (second derivative declared); ``index_put`` is linear in both
inputs, so its second derivative is identically zero (no graph to check, like ``add``).
"""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, rand


def _grid_sample_ref(x, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Direct per-sample loop over PyTorch's formulas (zeros/border padding)."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])

    def coord(g, size):
        p = (g + 1) * (size - 1) / 2 if align_corners else ((g + 1) * size - 1) / 2
        return np.clip(p, 0, size - 1) if padding_mode == "border" else p

    def pixel(b, yi, xi):
        inside = 0 <= yi < h and 0 <= xi < w
        return x[b, :, yi, xi] if inside else np.zeros(c)

    for b in range(n):
        for i in range(grid.shape[1]):
            for j in range(grid.shape[2]):
                px, py = coord(grid[b, i, j, 0], w), coord(grid[b, i, j, 1], h)
                if mode == "nearest":
                    out[b, :, i, j] = pixel(b, int(np.rint(py)), int(np.rint(px)))
                    continue
                x0, y0 = int(np.floor(px)), int(np.floor(py))
                fx, fy = px - x0, py - y0
                top = (1 - fx) * pixel(b, y0, x0) + fx * pixel(b, y0, x0 + 1)
                bottom = (1 - fx) * pixel(b, y0 + 1, x0) + fx * pixel(b, y0 + 1, x0 + 1)
                out[b, :, i, j] = (1 - fy) * top + fy * bottom
    return out


def _identity_grid(h, w):
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    return np.stack([xs, ys], -1)[None]


def _index_put_ref(x, indices, values, accumulate=False):
    out = x.copy()
    if accumulate:
        np.add.at(out, tuple(indices), values)
    else:
        out[tuple(indices)] = values
    return out


_IMG, _GRID = rand(2, 2, 3, 4), rand(2, 3, 2, 2, low=-1.2, high=1.2, seed=1)
_ROWS = (np.array([0, 2]),)
_MASK = rand(4, 3, seed=3) > 0

__all__ = ["OPS"]

OPS = [
    OpInfo("grid_sample", "sampling", (
        Sample((_IMG, _GRID)),
        Sample((_IMG, _GRID), {"align_corners": True}, name="align_corners"),
        Sample((_IMG, _GRID), {"padding_mode": "border"}, name="border"),
        Sample((_IMG, _GRID), {"mode": "nearest"}, name="nearest"),
        # Sampling at the pixel centres reproduces the image (grid gradient: at the kinks).
        Sample((_IMG[:1], _identity_grid(3, 4)), {"align_corners": True}, name="identity",
               expect=_IMG[:1], grad=False),
        Sample((rand(0, 2, 3, 4), rand(0, 3, 2, 2, seed=1)), name="empty"),
        Sample((_IMG, rand(2, 0, 2, 2, seed=1)), name="empty_grid")), "promote",
        gradgrad=True, ref=_grid_sample_ref,
        nonfinite=(NonFinite((np.full((1, 1, 2, 2), NAN), np.zeros((1, 1, 1, 2))), [[[[NAN]]]]),),
        errors=(ErrorInput((rand(1, 2, 3, 3), rand(1, 2, 2, 3)), ValueError,
                           ("grid_sample", "(1, 2, 2, 3)"), name="grid_shape"),
                ErrorInput((rand(1, 2, 3, 3), rand(1, 2, 2, 2)), ValueError,
                           ("grid_sample", "padding_mode"), {"padding_mode": "reflection"},
                           name="padding_mode"))),
    OpInfo("index_put", "sampling", (
        Sample((rand(4, 3), _ROWS, rand(2, 3, seed=1))),
        Sample((rand(4, 3), (np.array([0, 3]), np.array([1, 1])), rand(seed=1)),
               name="broadcast_0d"),
        Sample((rand(4, 3), (np.array([1, 1, 3]),), rand(3, 3, seed=1)), {"accumulate": True},
               name="accumulate_repeated"),
        Sample((rand(4, 3), (_MASK,), rand(int(_MASK.sum()), seed=1)), name="mask"),
        Sample((rand(4, 3), (np.array([-1]),), rand(3, seed=1)), name="negative"),
        Sample((rand(4, 3), (np.zeros(0, np.int64),), rand(0, 3, seed=1)), name="empty")),
        "promote", ref=_index_put_ref,
        nonfinite=(NonFinite((np.array([NAN, 1.0, INF]), (np.array([0, 1]),),
                              np.array([2.0, NAN])), [2.0, NAN, INF]),),
        errors=(ErrorInput((rand(3, 2), (np.array([3]),), rand(2)), (IndexError, ValueError),
                           ("index_put", "out of range"), name="index"),
                ErrorInput((rand(3, 2), (np.array([1]),), rand(3)), ValueError,
                           ("index_put", "(3,)"), name="values_shape"))),
]
