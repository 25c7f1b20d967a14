"""``minigrad.dataset.vision``: MindSpore's ``mindspore.dataset.vision`` image operations (also
``vision.c_transforms`` / ``vision.py_transforms`` / ``vision.transforms``), each a callable on
one NumPy image, over ``minigrad.data.vision``.

Images are ``(H, W, C)`` (or ``(H, W)``) unless an operation says otherwise; random operations
draw from minigrad's generator.

Example:
    >>> import numpy as np
    >>> from minigrad.dataset import vision
    >>> img = np.full((2, 2, 1), 255, np.uint8)
    >>> ops = [vision.Rescale(1.0 / 255.0, 0), vision.Normalize(mean=(0.5,), std=(0.5,)),
    ...        vision.HWC2CHW()]
    >>> for op in ops:
    ...     img = op(img)
    >>> img.shape, img.dtype.name, float(img.max())
    ((1, 2, 2), 'float32', 1.0)
"""

from __future__ import annotations

import enum
import numbers

import numpy as np

from ...data import vision as _v

__all__ = ["Inter", "Border", "Rescale", "Normalize", "HWC2CHW", "Resize", "CenterCrop",
           "RandomCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "ToTensor", "Decode"]


class Inter(enum.IntEnum):
    """Interpolation modes (MindSpore's ``vision.Inter``)."""

    NEAREST = 0
    LINEAR = 1
    BILINEAR = 1
    CUBIC = 2
    BICUBIC = 2
    AREA = 3
    PILCUBIC = 4
    ANTIALIAS = 5


class Border(enum.IntEnum):
    """Padding modes (MindSpore's ``vision.Border``)."""

    CONSTANT = 0
    EDGE = 1
    REFLECT = 2
    SYMMETRIC = 3


def _interpolation(mode):
    if mode == Inter.NEAREST:
        return "nearest"
    if mode == Inter.LINEAR:
        return "bilinear"
    raise NotImplementedError(f"interpolation {Inter(mode).name} is not supported; use "
                              "Inter.LINEAR or Inter.NEAREST")


def _size(size):
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    return int(size[0]), int(size[1])


class _Op:
    def __call__(self, img):  # pragma: no cover - abstract
        raise NotImplementedError


class Rescale(_Op):
    """``img * rescale + shift`` in float32."""

    def __init__(self, rescale: float, shift: float):
        self.rescale, self.shift = rescale, shift

    def __call__(self, img):
        return _v.rescale(img, self.rescale, self.shift)


class Normalize(_Op):
    """``(img - mean) / std`` per channel in float32 (channels last, or first with
    ``is_hwc=False``)."""

    def __init__(self, mean, std, is_hwc: bool = True):
        self.mean, self.std, self.is_hwc = list(mean), list(std), bool(is_hwc)
        if len(self.mean) != len(self.std):
            raise ValueError("Normalize: mean and std must have the same length")

    def __call__(self, img):
        if self.is_hwc:
            return _v.normalize(img, self.mean, self.std)
        img = np.asarray(img)
        return np.ascontiguousarray(np.moveaxis(
            _v.normalize(np.moveaxis(img, 0, -1), self.mean, self.std), -1, 0))


class HWC2CHW(_Op):
    """``(H, W, C)`` to ``(C, H, W)``."""

    def __call__(self, img):
        return _v.hwc_to_chw(img)


class Resize(_Op):
    """Resize to ``size``: ``(height, width)``, or an int for the shorter side (aspect ratio
    kept)."""

    def __init__(self, size, interpolation=Inter.LINEAR):
        self.size = size
        self.interpolation = _interpolation(interpolation)

    def __call__(self, img):
        h, w = np.asarray(img).shape[:2]
        if isinstance(self.size, numbers.Integral) or len(self.size) == 1:
            s = _size(self.size)[0]
            size = (s, int(s * w / h)) if h <= w else (int(s * h / w), s)
        else:
            size = _size(self.size)
        return _v.resize(img, size, self.interpolation)


class CenterCrop(_Op):
    """The central ``size`` window."""

    def __init__(self, size):
        self.size = _size(size)

    def __call__(self, img):
        return _v.center_crop(img, self.size)


class RandomCrop(_Op):
    """A random ``size`` window, after padding by ``padding`` (one int, ``(left/right,
    top/bottom)`` or ``(left, top, right, bottom)``) with ``fill_value``; ``pad_if_needed``
    pads an image smaller than the window."""

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill_value=0,
                 padding_mode=Border.CONSTANT):
        if padding_mode != Border.CONSTANT:
            raise NotImplementedError("RandomCrop: only Border.CONSTANT padding is supported")
        self.size = _size(size)
        if padding is None:
            padding = 0
        if isinstance(padding, numbers.Integral):
            padding = (padding,) * 4
        elif len(padding) == 2:
            padding = (padding[0], padding[1], padding[0], padding[1])
        self.left, self.top, self.right, self.bottom = (int(p) for p in padding)
        self.pad_if_needed = pad_if_needed
        self.fill_value = fill_value

    def __call__(self, img):
        img = _v.pad(img, self.top, self.bottom, self.left, self.right, self.fill_value)
        th, tw = self.size
        h, w = img.shape[:2]
        if self.pad_if_needed and (h < th or w < tw):
            dh, dw = max(0, th - h), max(0, tw - w)
            img = _v.pad(img, dh // 2, dh - dh // 2, dw // 2, dw - dw // 2, self.fill_value)
            h, w = img.shape[:2]
        if h < th or w < tw:
            raise ValueError(f"RandomCrop: crop size {self.size} is larger than the (padded) "
                             f"image {(h, w)}; set pad_if_needed=True")
        rng = _v.rng()
        top = int(rng.integers(0, h - th + 1))
        left = int(rng.integers(0, w - tw + 1))
        return _v.crop(img, top, left, th, tw)


class RandomHorizontalFlip(_Op):
    """Mirror left to right with probability ``prob``."""

    def __init__(self, prob: float = 0.5):
        self.prob = prob

    def __call__(self, img):
        return _v.hflip(img) if _v.rng().random() < self.prob else np.asarray(img)


class RandomVerticalFlip(RandomHorizontalFlip):
    """Mirror top to bottom with probability ``prob``."""

    def __call__(self, img):
        return _v.vflip(img) if _v.rng().random() < self.prob else np.asarray(img)


class ToTensor(_Op):
    """An ``(H, W, C)`` image to ``(C, H, W)`` ``output_type``, divided by 255 (bytes to
    ``[0, 1]``)."""

    def __init__(self, output_type=np.float32):
        self.output_type = np.dtype(output_type)

    def __call__(self, img):
        return (_v.hwc_to_chw(img).astype(np.float32) / np.float32(255)).astype(
            self.output_type)


class Decode(_Op):
    """Decoding encoded images needs an image library minigrad does not depend on."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("vision.Decode is not supported: decode images with your "
                                  "image library (PIL, OpenCV) inside the source")
