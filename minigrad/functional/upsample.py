"""Resampling: ``interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
area) and the ``upsample_*`` spellings, with PyTorch's coordinate conventions.

Every mode is separable: along each spatial axis each output is a weighted sum of a few input
taps (1 for nearest, 2 linear, 4 bicubic, the bin for area), whose indices and weights are built
on the host from the sizes alone. So a resize is, per axis, a weighted sum of one gather
(``index_select``) per tap, and its gradient is the scatter-add of ``index_select``'s
backward. A non-finite input reaches only the outputs whose taps read it, as in PyTorch (a
dense resampling matmul would spread it over the axis through 0 * nan). Each mode is its own
composite (``upsample_nearest``, ``upsample_bilinear``...), so each is a float32 row of the AMP
policy as AMP_REFERENCE section 1 lists them; ``area`` runs under the ``interpolate`` row.
"""

from __future__ import annotations

import math

import numpy as np

from .._backend import get_array_module
from ..core.tensor import Tensor
from ._composite import composite
from ._utils import const, op_error
from .elementwise import where
from .shape import index_select

__all__ = [
    "interpolate", "upsample", "upsample_bicubic", "upsample_bilinear", "upsample_linear",
    "upsample_nearest", "upsample_trilinear",
]

_SPATIAL = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution coefficient


def _source(dst, n_in, n_out, scale, align_corners):
    """Source coordinate of output index ``dst`` (PyTorch's area_pixel_compute_source_index,
    without the clamp)."""
    if align_corners:
        return dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    return (dst + 0.5) * scale - 0.5


def _cubic(t):
    a, t = _CUBIC_A, np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def _taps(mode, n_in, n_out, scale, align_corners):
    """The taps of one axis: ``(idx, w, read)``, each (n_out, K); output ``o`` is
    ``sum_k w[o, k] * x[idx[o, k]]`` over the taps with ``read[o, k]`` (None: all). Zero-weight
    taps of the interpolating modes are read (PyTorch reads them too, so a NaN there reaches
    that output, and only that one); area's bins, padded to the longest, skip the padding (an
    adaptive average pool reads only its bin: 0 * inf there would be NaN)."""
    dst = np.arange(n_out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        off = 0.5 if mode == "nearest-exact" else 0.0
        src = np.minimum(np.floor((dst + off) * scale).astype(np.int64), n_in - 1)
        return src[:, None], np.ones((n_out, 1)), None
    if mode == "area":  # adaptive average pooling bins, padded with unread repeats of `lo`
        lo = (np.arange(n_out) * n_in) // n_out
        hi = -(-((np.arange(n_out) + 1) * n_in) // n_out)
        k = np.arange((hi - lo).max())
        inside = k < (hi - lo)[:, None]
        return (np.where(inside, lo[:, None] + k, lo[:, None]),
                np.where(inside, 1.0 / (hi - lo)[:, None], 0.0),
                None if inside.all() else inside)
    src = _source(dst, n_in, n_out, scale, align_corners)
    if mode == "bicubic":
        i0 = np.floor(src).astype(np.int64)
        k = np.arange(-1, 3)
        return np.clip(i0[:, None] + k, 0, n_in - 1), _cubic((src - i0)[:, None] - k), None
    if n_in == n_out:  # linear family, same size: a copy, not even 0 * the neighbour (PyTorch)
        return np.arange(n_out)[:, None], np.ones((n_out, 1)), None
    src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = src - i0
    return (np.stack([i0, np.minimum(i0 + 1, n_in - 1)], 1), np.stack([1.0 - lam, lam], 1),
            None)


def _is_identity(idx, n_in):
    """Whether the taps copy the axis unchanged (then the axis is skipped)."""
    return idx.shape == (n_in, 1) and np.array_equal(idx[:, 0], np.arange(n_in))


def _resample_impl(x, taps):
    # A gather of the taps and a weighted sum over them, not a dense (out, in) matmul: 0 * nan
    # in a matmul would put a NaN input into every output of its axis (and a NaN gradient into
    # every input gradient), while a gather touches only the outputs that read it.
    nd = len(taps)
    for k, t in enumerate(taps):
        if t is None:
            continue
        idx, w, read = t
        axis = x.ndim - nd + k
        src, x = x, None
        trailing = (1,) * (src.ndim - axis - 1)
        # One gather per tap column, summed: cheaper than a reduction over a size-K axis.
        for j in range(idx.shape[1]):
            part = index_select(src, axis, idx[:, j])
            if idx.shape[1] > 1:  # nearest has one tap of weight 1
                # The weights take the dtype the op runs in (after autocast's cast).
                wj = w[:, j].astype(src.dtype).reshape((-1,) + trailing)
                part = part * const(wj)
                if read is not None:  # area's padding taps: nothing, not 0 * x
                    part = where(const(read[:, j].reshape((-1,) + trailing)), part, 0.0)
            x = part if x is None else x + part
    return x


_CLASSES = {name: composite(name, _resample_impl) for name in (
    "upsample_nearest", "upsample_linear", "upsample_bilinear", "upsample_bicubic",
    "upsample_trilinear", "interpolate")}
_ROW = {"nearest": "upsample_nearest", "nearest-exact": "upsample_nearest",
        "linear": "upsample_linear", "bilinear": "upsample_bilinear",
        "bicubic": "upsample_bicubic", "trilinear": "upsample_trilinear", "area": "interpolate"}


def _per_axis(v, n, what):
    if v is None:
        return None
    t = tuple(v) if isinstance(v, (tuple, list)) else (v,) * n
    if len(t) != n:
        raise op_error("interpolate", f"{what} must be a number or a {n}-tuple", **{what: v})
    return t


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial axes of ``(N, C, *spatial)`` input (``torch.nn.functional.interpolate``).

    Args:
        input: 3-D (linear), 4-D (bilinear, bicubic) or 5-D (trilinear) input; nearest,
            nearest-exact and area take 1 to 3 spatial axes.
        size: output spatial size (int or tuple); exactly one of size / scale_factor.
        scale_factor: multiplier (number or tuple); the output size is ``floor(in * scale)``.
        mode: "nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area".
        align_corners: for the linear modes and bicubic only (default False): map the corner
            pixels' centres onto each other.
        recompute_scale_factor: True: coordinates use the computed output size rather than
            ``scale_factor``.
        antialias: not supported (raises when True).
    """
    op = "interpolate"
    if mode not in _ROW:
        raise op_error(op, f"unknown mode {mode!r}; use one of {sorted(_ROW)}")
    if antialias:
        raise op_error(op, "antialias=True is not supported")
    nd = input.ndim - 2
    if nd < 1 or nd > 3 or (mode in _SPATIAL and nd != _SPATIAL[mode]):
        want = f"{_SPATIAL[mode] + 2}-D" if mode in _SPATIAL else "3-D to 5-D"
        raise op_error(op, f"mode {mode!r} expects {want} input (N, C, *spatial)",
                       input=input.shape)
    if align_corners is not None and mode not in ("linear", "bilinear", "bicubic", "trilinear"):
        raise op_error(op, "align_corners only applies to the linear modes and bicubic",
                       mode=mode)
    if (size is None) == (scale_factor is None):
        raise op_error(op, "pass exactly one of size and scale_factor", size=size,
                       scale_factor=scale_factor)
    in_sizes = input.shape[2:]
    if min(in_sizes) < 1:   # as PyTorch; an empty batch or channel axis is fine
        raise op_error(op, "the spatial input sizes must be positive", input=input.shape)
    sizes = _per_axis(size, nd, "size")
    factors = _per_axis(scale_factor, nd, "scale_factor")
    if sizes is None:
        sizes = tuple(int(math.floor(n * f)) for n, f in zip(in_sizes, factors))
    if min(sizes) < 1:
        raise op_error(op, f"output size {sizes} must be positive", input=input.shape)
    taps = []
    for k in range(nd):
        n_in, n_out = in_sizes[k], int(sizes[k])
        if factors is not None and not recompute_scale_factor and mode != "area":
            scale = 1.0 / factors[k]
        else:
            scale = n_in / n_out
        taps.append(_taps(mode, n_in, n_out, scale, bool(align_corners)))
    xp = get_array_module(input._data)
    dtype = input.dtype if input.dtype.kind == "f" or input.dtype.kind == "V" else np.float32
    if dtype != input.dtype:
        input = input.astype(dtype)
    taps = [None if _is_identity(i, n) else
            (xp.asarray(i), xp.asarray(w), None if r is None else xp.asarray(r))
            for (i, w, r), n in zip(taps, in_sizes)]
    return _CLASSES[_ROW[mode]].apply(input, kw={"taps": taps})


upsample = interpolate  # torch.nn.functional.upsample (deprecated alias)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """``interpolate(input, size, scale_factor, mode="nearest")``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Bilinear resize with ``align_corners=True`` (PyTorch's deprecated
    ``upsample_bilinear``)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_linear(input: Tensor, size=None, scale_factor=None, align_corners=False):
    """``interpolate(..., mode="linear")`` on (N, C, L) input."""
    return interpolate(input, size, scale_factor, mode="linear", align_corners=align_corners)


def upsample_bicubic(input: Tensor, size=None, scale_factor=None, align_corners=False):
    """``interpolate(..., mode="bicubic")`` on (N, C, H, W) input."""
    return interpolate(input, size, scale_factor, mode="bicubic", align_corners=align_corners)


def upsample_trilinear(input: Tensor, size=None, scale_factor=None, align_corners=False):
    """``interpolate(..., mode="trilinear")`` on (N, C, D, H, W) input."""
    return interpolate(input, size, scale_factor, mode="trilinear",
                       align_corners=align_corners)
