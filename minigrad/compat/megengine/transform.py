"""``minigrad.data.transform``: MegEngine's ``megengine.data.transform`` (``import ... as T``).

Transforms work on samples whose parts are named by ``order`` (default ``("image",)``; e.g.
``order=("image", "image_category")`` for ``(image, label)`` samples): images are NumPy
``(H, W, C)`` arrays, ``"mask"`` parts follow the image's geometry (nearest-neighbour), parts
named ``*category`` or ``*info`` pass through, and parts beyond ``order`` are kept as they are.
The image arithmetic is ``minigrad.data.vision``'s; random choices draw from minigrad's CPU
generator (``mg.manual_seed``), where MegEngine draws from ``np.random``.

Example:
    >>> import numpy as np
    >>> import minigrad.data.transform as T
    >>> t = T.Compose([T.Normalize(mean=127.5, std=127.5), T.ToMode("CHW")])
    >>> image, label = t.apply((np.full((4, 4, 3), 255, np.uint8), 3))
    >>> image.shape, float(image.max()), label
    ((3, 4, 4), 1.0, 3)
"""

from __future__ import annotations

import collections.abc

from ...data import vision

__all__ = ["Transform", "PseudoTransform", "VisionTransform", "Compose", "ToMode", "Normalize",
           "Resize", "Pad", "RandomCrop", "CenterCrop", "RandomHorizontalFlip",
           "RandomVerticalFlip", "INTER_NEAREST", "INTER_LINEAR"]

INTER_NEAREST, INTER_LINEAR = 0, 1  # OpenCV's codes, which MegEngine's Resize takes
_INTERPOLATION = {INTER_NEAREST: "nearest", INTER_LINEAR: "bilinear", "nearest": "nearest",
                  "bilinear": "bilinear", "linear": "bilinear"}


class Transform:
    """MegEngine's transform protocol: ``apply(sample)`` and ``apply_batch(samples)``;
    calling a transform is ``apply``."""

    def apply(self, input):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.apply")

    def apply_batch(self, inputs):
        return tuple(self.apply(x) for x in inputs)

    def __call__(self, input):
        return self.apply(input)


class PseudoTransform(Transform):
    """Returns its input unchanged."""

    def apply(self, input):
        return input


class VisionTransform(Transform):
    """Base of the image transforms: applies ``_apply_<kind>`` to each part of a sample.

    Args:
        order: the kind of each part of a sample (``"image"``, ``"mask"``, ``"*category"``,
            ``"*info"``).
    """

    def __init__(self, order=None):
        if order is None:
            order = ("image",)
        elif not isinstance(order, collections.abc.Sequence) or isinstance(order, str):
            raise ValueError(f"order should be a sequence, but got order={order!r}")
        for k in order:
            if k.endswith("category") or k.endswith("info"):
                continue
            if k not in ("image", "mask"):
                raise NotImplementedError(f"{k} is unsupported data type (minigrad's MegEngine "
                                          "transforms take image, mask, *category and *info)")
        self.order = tuple(order)

    def _prepare(self, image) -> None:
        """Draw this sample's random choices from its image (before any part is touched)."""

    def apply(self, input):
        single = not isinstance(input, tuple)
        parts = (input,) if single else input
        if "image" in self.order and self.order.index("image") < len(parts):
            self._prepare(parts[self.order.index("image")])
        out = []
        for i, part in enumerate(parts):
            kind = self.order[i] if i < len(self.order) else None
            fn = getattr(self, f"_apply_{kind}", None) if kind in ("image", "mask") else None
            out.append(part if fn is None else fn(part))
        return out[0] if len(out) == 1 else tuple(out)

    def _apply_image(self, image):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}._apply_image")

    def _apply_mask(self, mask):
        return mask


class Compose(VisionTransform):
    """Apply ``transforms`` one after the other (each takes this ``order``)."""

    def __init__(self, transforms=(), batch_compose=False, shuffle_indices=None, *, order=None):
        super().__init__(order)
        if shuffle_indices is not None:
            raise NotImplementedError("Compose(shuffle_indices=...) is not supported")
        self.transforms = list(transforms)
        self.batch_compose = bool(batch_compose)
        for t in self.transforms:
            if isinstance(t, VisionTransform):
                t.order = self.order
                if isinstance(t, Compose):
                    for inner in t.transforms:
                        inner.order = self.order

    def apply(self, input):
        for t in self.transforms:
            input = t.apply(input)
        return input

    def apply_batch(self, inputs):
        if self.batch_compose:
            for t in self.transforms:
                inputs = t.apply_batch(inputs)
            return inputs
        return super().apply_batch(inputs)


class ToMode(VisionTransform):
    """``ToMode("CHW")``: ``(H, W, C)`` images (and masks) to contiguous ``(C, H, W)``."""

    def __init__(self, mode="CHW", *, order=None):
        super().__init__(order)
        if mode != "CHW":
            raise ValueError(f"unsupported mode: {mode}")
        self.mode = mode

    def _apply_image(self, image):
        return vision.hwc_to_chw(image)

    _apply_mask = _apply_image


class Normalize(VisionTransform):
    """``(image - mean) / std`` per channel, in float32 (masks untouched)."""

    def __init__(self, mean=0.0, std=1.0, *, order=None):
        super().__init__(order)
        self.mean, self.std = mean, std

    def _apply_image(self, image):
        return vision.normalize(image, self.mean, self.std)


class Resize(VisionTransform):
    """Resize to ``output_size``: ``(height, width)``, or an int for the shorter side (the
    longer one scaled to keep the aspect ratio, truncated).

    Args:
        output_size: the target size.
        interpolation: ``INTER_LINEAR`` (1, default) or ``INTER_NEAREST`` (0); masks always use
            nearest.
    """

    def __init__(self, output_size, interpolation=INTER_LINEAR, *, order=None):
        super().__init__(order)
        if interpolation not in _INTERPOLATION:
            raise NotImplementedError(f"Resize: interpolation {interpolation!r} is not "
                                      "supported; use INTER_LINEAR (1) or INTER_NEAREST (0)")
        self.output_size = output_size
        self.interpolation = interpolation

    def _prepare(self, image):
        h, w = image.shape[:2]
        size = self.output_size
        if isinstance(size, int):
            if min(h, w) == size:
                size = (h, w)
            elif h < w:
                size = (size, int(size * w / h))
            else:
                size = (int(size * h / w), size)
        self._size = tuple(size)

    def _apply_image(self, image):
        return vision.resize(image, self._size, _INTERPOLATION[self.interpolation])

    def _apply_mask(self, mask):
        return vision.resize(mask, self._size, "nearest")


def _pad_sizes(size):
    if isinstance(size, int):
        return (size, size, size, size)
    if isinstance(size, collections.abc.Sequence) and len(size) == 2:
        return (0, size[0], 0, size[1])
    if isinstance(size, collections.abc.Sequence) and len(size) == 4:
        return tuple(size)
    raise ValueError("size should be a list/tuple which contains (top, down, left, right) "
                     "four pad sizes.")


class Pad(VisionTransform):
    """Constant padding: ``size`` is one int (all sides), ``(bottom, right)`` or
    ``(top, bottom, left, right)``; ``value`` pads images, ``mask_value`` masks."""

    def __init__(self, size=0, value=0, mask_value=0, *, order=None):
        super().__init__(order)
        self.size = _pad_sizes(size)
        self.value = value
        self.mask_value = mask_value

    def _apply_image(self, image):
        return vision.pad(image, *self.size, value=self.value)

    def _apply_mask(self, mask):
        return vision.pad(mask, *self.size, value=self.mask_value)


class RandomCrop(VisionTransform):
    """Pad by ``padding_size`` (as ``Pad``), then crop a random ``output_size`` window (the
    image is padded further at the bottom/right when still smaller than the window)."""

    def __init__(self, output_size, padding_size=0, padding_value=(0, 0, 0),
                 padding_maskvalue=0, *, order=None):
        super().__init__(order)
        self.output_size = (output_size, output_size) if isinstance(output_size, int) \
            else tuple(output_size)
        self.padding = _pad_sizes(padding_size)
        self.padding_value = padding_value
        self.padding_maskvalue = padding_maskvalue

    def _prepare(self, image):
        h = image.shape[0] + self.padding[0] + self.padding[1]
        w = image.shape[1] + self.padding[2] + self.padding[3]
        th, tw = self.output_size
        rng = vision.rng()
        self._x = int(rng.integers(0, max(0, w - tw) + 1))
        self._y = int(rng.integers(0, max(0, h - th) + 1))

    def _crop(self, image, value):
        image = vision.pad(image, *self.padding, value=value)
        th, tw = self.output_size
        h, w = image.shape[:2]
        if th > h or tw > w:
            image = vision.pad(image, 0, max(0, th - h), 0, max(0, tw - w), value=value)
        return vision.crop(image, self._y, self._x, th, tw)

    def _apply_image(self, image):
        return self._crop(image, self.padding_value)

    def _apply_mask(self, mask):
        return self._crop(mask, self.padding_maskvalue)


class CenterCrop(VisionTransform):
    """The central ``output_size`` window."""

    def __init__(self, output_size, *, order=None):
        super().__init__(order)
        self.output_size = (output_size, output_size) if isinstance(output_size, int) \
            else tuple(output_size)

    def _apply_image(self, image):
        return vision.center_crop(image, self.output_size)

    _apply_mask = _apply_image


class RandomHorizontalFlip(VisionTransform):
    """Mirror left to right with probability ``prob``."""

    def __init__(self, prob: float = 0.5, *, order=None):
        super().__init__(order)
        self.prob = prob

    def _prepare(self, image):
        self._flip = bool(vision.rng().random() < self.prob)

    def _apply_image(self, image):
        return vision.hflip(image) if self._flip else image

    _apply_mask = _apply_image


class RandomVerticalFlip(RandomHorizontalFlip):
    """Mirror top to bottom with probability ``prob``."""

    def _apply_image(self, image):
        return vision.vflip(image) if self._flip else image

    _apply_mask = _apply_image
