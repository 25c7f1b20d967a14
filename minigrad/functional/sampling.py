"""Sampling and indexed writes: ``grid_sample`` and ``index_put``.

Both are "promote" rows of the AMP policy: their floating inputs (image and grid, target and
values) are cast to the widest of their dtypes, so mixed float16/float32 graphs never fail.
"""

from __future__ import annotations

import numpy as np

from .._backend import get_array_module
from ..core.function import Function
from ..core.tensor import Tensor
from ._composite import composite
from ._utils import const, op_error, scatter_add_flat, sum_to_shape
from .elementwise import clip
from .shape import gather

__all__ = ["grid_sample", "index_put"]


def _unnormalize(g, n, align_corners):
    """[-1, 1] grid coordinates to pixel coordinates (PyTorch's convention)."""
    if align_corners:
        return (g + 1.0) * ((n - 1) / 2.0)
    return ((g + 1.0) * n - 1.0) / 2.0


def _grid_sample_impl(x, grid, mode, padding_mode, align_corners):
    n, c, h, w = x.shape
    ho, wo = grid.shape[1:3]
    xp = get_array_module(x._data)
    ix = _unnormalize(grid[..., 0], w, align_corners)  # (N, Ho, Wo)
    iy = _unnormalize(grid[..., 1], h, align_corners)
    if padding_mode == "border":
        ix, iy = clip(ix, 0.0, w - 1.0), clip(iy, 0.0, h - 1.0)
    flat = x.reshape((n, c, h * w))

    def tap(yi, xi):
        """Pixels at integer (yi, xi) arrays (N, Ho, Wo) and the in-bounds mask."""
        ok = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        lin = (xp.clip(yi, 0, h - 1) * w + xp.clip(xi, 0, w - 1)).reshape(n, 1, ho * wo)
        vals = gather(flat, 2, xp.broadcast_to(lin, (n, c, ho * wo)))
        return vals.reshape((n, c, ho, wo)), const(ok[:, None].astype(x.dtype))

    if mode == "nearest":
        v, ok = tap(xp.rint(iy._data).astype(np.int64), xp.rint(ix._data).astype(np.int64))
        return v * ok
    x0 = xp.floor(ix._data)
    y0 = xp.floor(iy._data)
    wx1 = ix - const(x0)
    wy1 = iy - const(y0)
    wx0, wy0 = 1.0 - wx1, 1.0 - wy1
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    out = None
    for yi, wy in ((y0, wy0), (y0 + 1, wy1)):
        for xi, wx in ((x0, wx0), (x0 + 1, wx1)):
            v, ok = tap(yi, xi)
            term = v * ok * (wy * wx).reshape((n, 1, ho, wo))
            out = term if out is None else out + term
    return out


_GridSample = composite("grid_sample", _grid_sample_impl)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input (N, C, H, W)`` at the locations ``grid (N, Ho, Wo, 2)`` (x, y in [-1, 1]).

    Args:
        input: the image batch.
        grid: sampling locations, normalised so -1 and 1 are the edges (``align_corners=False``)
            or the corner pixels' centres (``align_corners=True``).
        mode: "bilinear" (differentiable in both input and grid) or "nearest".
        padding_mode: "zeros" (outside samples are 0) or "border" (clamped to the edge).
        align_corners: default False, as in PyTorch.

    Returns:
        ``(N, C, Ho, Wo)``.
    """
    op = "grid_sample"
    if mode not in ("bilinear", "nearest"):
        raise op_error(op, "mode must be 'bilinear' or 'nearest' (bicubic is not offered)",
                       mode=mode)
    if padding_mode not in ("zeros", "border"):
        raise op_error(op, "padding_mode must be 'zeros' or 'border' (reflection is not "
                       "offered)", padding_mode=padding_mode)
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 \
            or grid.shape[0] != input.shape[0]:
        raise op_error(op, "expected input (N, C, H, W) and grid (N, Ho, Wo, 2) (5-D volumes "
                       "are not offered)", input=input.shape, grid=grid.shape)
    return _GridSample.apply(input, grid, kw={"mode": mode, "padding_mode": padding_mode,
                                              "align_corners": bool(align_corners)})


class IndexPut(Function):
    name = "index_put"

    def forward(self, x, values, indices, accumulate):
        xp = get_array_module(x)
        self.indices, self.accumulate = indices, accumulate
        lin = xp.arange(x.size, dtype=np.int64).reshape(x.shape)[indices]
        self.lin = lin
        try:
            v = xp.broadcast_to(values.astype(x.dtype, copy=False), lin.shape)
        except ValueError:
            raise op_error("index_put", "values do not broadcast to the indexed shape",
                           input=x.shape, indexed=lin.shape, values=values.shape) from None
        if accumulate:
            return x + scatter_add_flat(xp, x.size, lin, v, x.dtype).reshape(x.shape)
        out = x.copy()
        out[indices] = v
        return out

    def backward(self, gy):
        need_x, need_v = self.needs_input_grad
        gx = gv = None
        if need_x:
            if self.accumulate:
                gx = gy
            else:
                xp = get_array_module(gy._data)
                keep = xp.ones(gy.shape, dtype=gy.dtype)
                keep[self.indices] = 0
                gx = gy * const(keep)
        if need_v:
            gv = sum_to_shape(gy.reshape((-1,))[const(self.lin)], self.inputs[1].shape)
        return gx, gv


def _index_tuple(op, x, indices):
    xp = get_array_module(x._data)
    if not isinstance(indices, (tuple, list)):
        indices = (indices,)
    out = []
    for i in indices:
        a = i._data if isinstance(i, Tensor) else xp.asarray(i)
        if a.dtype == bool:
            out.extend(xp.nonzero(a))
        elif a.dtype.kind in "iu":
            out.append(a)
        else:
            raise op_error(op, f"indices must be integer or bool, got {a.dtype}")
    if len(out) > x.ndim:
        raise op_error(op, f"too many indices ({len(out)}) for a {x.ndim}-D tensor",
                       input=x.shape)
    for d, a in enumerate(out):
        if a.size and (int(a.min()) < -x.shape[d] or int(a.max()) >= x.shape[d]):
            raise op_error(op, f"index out of range on axis {d} (size {x.shape[d]})",
                           input=x.shape)
    return tuple(out)


def index_put(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """Out-of-place ``input[indices] = values`` (``+=`` with ``accumulate=True``).

    Args:
        input: the tensor to write into (not modified).
        indices: a tuple of integer (or bool mask) tensors/arrays, NumPy advanced indexing.
        values: broadcast to the indexed shape; gets the gradient of the written elements.
        accumulate: add instead of overwrite; repeated indices then accumulate. Without it,
            repeated indices keep one of the written values (undefined which, as in PyTorch).
    """
    op = "index_put"
    idx = _index_tuple(op, input, indices)
    if not isinstance(values, Tensor):
        values = const(get_array_module(input._data).asarray(values, dtype=input.dtype))
    return IndexPut.apply(input, values, indices=idx, accumulate=bool(accumulate))
