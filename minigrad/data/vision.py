"""Image operations on NumPy arrays in ``(H, W, C)`` (or ``(H, W)``) layout: the one body
behind the peers' data transforms (MegEngine's ``data.transform``, MindSpore's
``dataset.vision``), which only choose arguments and call these.

Random choices draw from minigrad's CPU generator, so ``mg.manual_seed`` makes augmentation
repeat.

Example:
    >>> import numpy as np
    >>> from minigrad.data import vision
    >>> img = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    >>> vision.hwc_to_chw(img).shape
    (3, 2, 2)
    >>> vision.resize(np.eye(2, dtype=np.float32), (4, 4))[0].tolist()
    [1.0, 0.75, 0.25, 0.0]
"""

from __future__ import annotations

import numpy as np

from .._backend import random as _random

__all__ = ["normalize", "rescale", "hwc_to_chw", "resize", "crop", "center_crop", "pad",
           "hflip", "vflip", "rng", "INTERPOLATIONS"]

INTERPOLATIONS = ("nearest", "bilinear")


def rng() -> np.random.Generator:
    """The generator random transforms draw from (minigrad's CPU generator)."""
    return _random.generator("cpu")


def normalize(img, mean, std):
    """``(img - mean) / std`` per channel (the last axis) in float32."""
    mean = np.asarray(mean, dtype=np.float32)
    std = np.asarray(std, dtype=np.float32)
    if (std == 0).any():
        raise ValueError("normalize: std must be nonzero")
    return (np.asarray(img, dtype=np.float32) - mean) / std


def rescale(img, scale: float, shift: float = 0.0):
    """``img * scale + shift`` in float32 (``1 / 255`` maps bytes to ``[0, 1]``)."""
    return np.asarray(img, dtype=np.float32) * np.float32(scale) + np.float32(shift)


def hwc_to_chw(img):
    """``(H, W, C)`` to a contiguous ``(C, H, W)``; an ``(H, W)`` image gets one channel."""
    img = np.asarray(img)
    if img.ndim == 2:
        img = img[:, :, None]
    if img.ndim != 3:
        raise ValueError(f"hwc_to_chw: expected an (H, W, C) or (H, W) image, got shape "
                         f"{img.shape}")
    return np.ascontiguousarray(np.moveaxis(img, 2, 0))


def _axis_weights(n_in: int, n_out: int):
    """Source rows and weights of half-pixel (align_corners=False) linear interpolation along
    one axis, edges clamped: the rule of OpenCV's INTER_LINEAR and PIL's bilinear."""
    pos = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
    pos = np.clip(pos, 0.0, n_in - 1)
    lo = np.minimum(np.floor(pos).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, pos - lo


def resize(img, size, interpolation: str = "bilinear"):
    """Resize an ``(H, W[, C])`` image to ``size = (height, width)``.

    Args:
        img: the image; integer images are rounded back to their dtype (saturated).
        size: ``(height, width)`` of the result.
        interpolation: ``"bilinear"`` (half-pixel centres, edges clamped) or ``"nearest"``
            (source pixel ``floor(dst * in / out)``).
    """
    img = np.asarray(img)
    th, tw = int(size[0]), int(size[1])
    if th < 1 or tw < 1:
        raise ValueError(f"resize: size must be positive, got {size}")
    h, w = img.shape[:2]
    if (h, w) == (th, tw):
        return img.copy()
    if interpolation == "nearest":
        rows = np.minimum((np.arange(th) * (h / th)).astype(np.int64), h - 1)
        cols = np.minimum((np.arange(tw) * (w / tw)).astype(np.int64), w - 1)
        return img[rows][:, cols]
    if interpolation != "bilinear":
        raise ValueError(f"resize: interpolation must be one of {INTERPOLATIONS}, got "
                         f"{interpolation!r}")
    r0, r1, fr = _axis_weights(h, th)
    c0, c1, fc = _axis_weights(w, tw)
    x = img.astype(np.float64)
    extra = (None,) * (img.ndim - 2)
    fr = fr[(slice(None), None) + extra]
    fc = fc[(slice(None),) + extra]
    top = x[r0] * (1 - fr) + x[r1] * fr
    out = top[:, c0] * (1 - fc) + top[:, c1] * fc
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(img.dtype)
    return out.astype(img.dtype)


def crop(img, top: int, left: int, height: int, width: int):
    """The ``height x width`` window whose top-left pixel is ``(top, left)``."""
    img = np.asarray(img)
    if top < 0 or left < 0 or top + height > img.shape[0] or left + width > img.shape[1]:
        raise ValueError(f"crop: window ({top}, {left}, {height}, {width}) does not fit an "
                         f"image of shape {img.shape}")
    return img[top:top + height, left:left + width]


def center_crop(img, size):
    """The central ``(height, width)`` window (offsets rounded as ``round((H - h) / 2)``)."""
    img = np.asarray(img)
    th, tw = size
    h, w = img.shape[:2]
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def pad(img, top: int, bottom: int, left: int, right: int, value=0):
    """Constant padding: ``value`` may be a number or one value per channel."""
    img = np.asarray(img)
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
    value = np.asarray(value)
    if value.ndim == 0 or img.ndim == 2:
        return np.pad(img, widths, mode="constant",
                      constant_values=value.reshape(-1)[0] if value.ndim else value)
    out = np.empty((img.shape[0] + top + bottom, img.shape[1] + left + right) + img.shape[2:],
                   dtype=np.result_type(img, value) if value.dtype.kind == "f" else img.dtype)
    out[...] = value.reshape((1, 1, -1))[..., :img.shape[2]]
    out[top:top + img.shape[0], left:left + img.shape[1]] = img
    return out


def hflip(img):
    """Mirror left to right."""
    return np.ascontiguousarray(np.asarray(img)[:, ::-1])


def vflip(img):
    """Mirror top to bottom."""
    return np.ascontiguousarray(np.asarray(img)[::-1])
