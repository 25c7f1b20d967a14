"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and
``CircularPad`` in 1, 2 and 3 dimensions, over ``F.pad``.

``padding`` is PyTorch's: an int for every side, or ``(left, right)``, ``(left, right, top,
bottom)``, ``(left, right, top, bottom, front, back)`` from the last axis backwards. Negative
amounts crop that side (as PyTorch's constant padding does).
"""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d"]


class _PadNd(Module):
    _ndim = 1
    _mode = "constant"

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        name, n = type(self).__name__, self._ndim
        pad = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * (2 * n)
        if len(pad) != 2 * n or not all(hasattr(p, "__index__") and not isinstance(p, bool)
                                        for p in pad):
            raise ValueError(f"{name}: padding must be an int or a {2 * n}-tuple of ints, got "
                             f"{padding!r}")
        self.padding = tuple(int(p) for p in pad)
        self.value = value

    def forward(self, x):
        n = self._ndim
        if x.ndim < n + (self._mode != "constant"):
            raise ValueError(f"{type(self).__name__}: expected a {n + 1}-D (unbatched) or "
                             f"{n + 2}-D input, got shape {tuple(x.shape)}")
        lead = x.ndim - n
        pairs = [(self.padding[2 * i], self.padding[2 * i + 1]) for i in range(n)][::-1]
        crop = [slice(-a if a < 0 else 0, size + b if b < 0 else size)
                for (a, b), size in zip(pairs, x.shape[lead:])]
        if any(c.start or c.stop != size for c, size in zip(crop, x.shape[lead:])):
            x = x[(slice(None),) * lead + tuple(crop)]
        widths = [(0, 0)] * lead + [(max(a, 0), max(b, 0)) for a, b in pairs]
        if any(a or b for a, b in widths):
            x = F.pad(x, widths, mode=self._mode, value=self.value)
        return x

    def extra_repr(self) -> str:
        s = f"{self.padding}"
        return s + (f", value={self.value}" if self._mode == "constant" and self.value else "")


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding, value)


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"


# One class per PyTorch name, each a subclass of its own family's base only: as in PyTorch,
# ``isinstance(m, nn.ReflectionPad1d)`` is false for a ReflectionPad2d, and a ZeroPadNd is a
# ConstantPadNd.


class ConstantPad1d(_ConstantPadNd):
    """Pad the last axis with ``value``."""

    _ndim = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two axes with ``value``."""

    _ndim = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three axes with ``value``."""

    _ndim = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last axis with zeros."""

    _ndim = 1

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad2d(ConstantPad2d):
    """Pad the last two axes with zeros."""

    _ndim = 2

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad3d(ConstantPad3d):
    """Pad the last three axes with zeros."""

    _ndim = 3

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ReflectionPad1d(_ReflectionPadNd):
    """Pad the last axis with its reflection (the edge itself is not repeated)."""

    _ndim = 1


class ReflectionPad2d(_ReflectionPadNd):
    """Pad the last two axes with its reflection (the edge itself is not repeated)."""

    _ndim = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Pad the last three axes with its reflection (the edge itself is not repeated)."""

    _ndim = 3


class ReplicationPad1d(_ReplicationPadNd):
    """Pad the last axis by repeating the edge values."""

    _ndim = 1


class ReplicationPad2d(_ReplicationPadNd):
    """Pad the last two axes by repeating the edge values."""

    _ndim = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Pad the last three axes by repeating the edge values."""

    _ndim = 3


class CircularPad1d(_CircularPadNd):
    """Pad the last axis by wrapping around (periodic boundary)."""

    _ndim = 1


class CircularPad2d(_CircularPadNd):
    """Pad the last two axes by wrapping around (periodic boundary)."""

    _ndim = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last three axes by wrapping around (periodic boundary)."""

    _ndim = 3
