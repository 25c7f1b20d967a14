"""Pooling layers over ``(N, C, *spatial)`` or unbatched ``(C, *spatial)`` input: max, average,
adaptive average/max and power-average (LP) pooling in 1, 2 and 3 dimensions, and the max
unpools, with PyTorch's arguments (dilation, ceil_mode, count_include_pad, divisor_override,
return_indices).

The computation is ``minigrad.functional``'s: each layer calls its ``F`` function
(``F.max_pool2d``, ``F.avg_pool3d``, ``F.lp_pool2d``, ``F.max_unpool1d``...) with its stored
arguments. The arguments are checked at construction too, so a bad layer fails where it is
built.
"""

from __future__ import annotations

from .. import functional as F
from ..functional.pooling import _ntuple
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


class _MaxPoolNd(Module):
    _ndim = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None or stride == [] else stride
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode
        name, n = type(self).__name__, self._ndim
        for what in ("kernel_size", "stride", "padding", "dilation"):
            _ntuple(name, what, getattr(self, what), n)

    def forward(self, x):
        fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[self._ndim - 1]
        return fn(x, self.kernel_size, self.stride, self.padding, self.dilation,
                  ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Maximum over windows of ``(N, C, L)`` input (stride defaults to the kernel size):
    ``F.max_pool1d`` with the layer's arguments; ``return_indices`` adds each maximum's
    position in its row."""

    _ndim = 1


class MaxPool2d(_MaxPoolNd):
    """Maximum over ``kernel_size`` windows of ``(N, C, H, W)`` input (stride defaults to the
    kernel size): ``F.max_pool2d`` with the layer's arguments; ``return_indices`` adds each
    maximum's flat position in its ``H*W`` plane."""


class MaxPool3d(_MaxPoolNd):
    """Maximum over windows of ``(N, C, D, H, W)`` input (stride defaults to the kernel
    size): ``F.max_pool3d`` with the layer's arguments; ``return_indices`` adds each
    maximum's flat position in its ``D*H*W`` volume."""

    _ndim = 3


class _AvgPoolNd(Module):
    _ndim = 2

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None or stride == [] else stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override
        name, n = type(self).__name__, self._ndim
        for what in ("kernel_size", "stride", "padding"):
            _ntuple(name, what, getattr(self, what), n)

    def forward(self, x):
        if self._ndim == 1:  # PyTorch's avg_pool1d has no divisor_override
            return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                self.count_include_pad)
        fn = F.avg_pool2d if self._ndim == 2 else F.avg_pool3d
        return fn(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                  self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mean over windows of ``(N, C, L)`` input (stride defaults to the kernel size):
    ``F.avg_pool1d`` with the layer's arguments (no ``divisor_override``, as PyTorch's)."""

    _ndim = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Mean over ``kernel_size`` windows of ``(N, C, H, W)`` input (stride defaults to the
    kernel size): ``F.avg_pool2d`` with the layer's arguments. ``count_include_pad``: the
    padded zeros count in the mean; ``divisor_override``: divide every window's sum by this
    instead."""


class AvgPool3d(_AvgPoolNd):
    """Mean over windows of ``(N, C, D, H, W)`` input (see :class:`AvgPool2d`)."""

    _ndim = 3


class _LPPoolNd(Module):
    _ndim = 2

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, x):
        fn = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[self._ndim - 1]
        return fn(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum over the window of x**p) ** (1/p)`` of ``(N, C, L)``
    input."""

    _ndim = 1


class LPPool2d(_LPPoolNd):
    """Power-average pooling ``(sum over the window of x**p) ** (1/p)`` of ``(N, C, H, W)``
    input."""


class LPPool3d(_LPPoolNd):
    """Power-average pooling of ``(N, C, D, H, W)`` input."""

    _ndim = 3


class _MaxUnpoolNd(Module):
    _ndim = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def forward(self, x, indices, output_size=None):
        """Place each value of ``x`` at its position ``indices`` (a max pool's
        ``return_indices``) in a zero output of the pool's input size (or ``output_size``)."""
        fn = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[self._ndim - 1]
        return fn(x, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool1d`: ``forward(x, indices, output_size=None)``."""

    _ndim = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool2d`: ``forward(x, indices, output_size=None)``
    puts each value at its index and zeros elsewhere."""


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool3d`: ``forward(x, indices, output_size=None)``."""

    _ndim = 3


class AdaptiveAvgPool2d(Module):
    """Average-pool to a fixed ``output_size`` (int or ``(h, w)``) whatever the input size."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(Module):
    """Average-pool ``(N, C, L)`` input to ``output_size`` with PyTorch's bins."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool1d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool3d(Module):
    """Average-pool ``(N, C, D, H, W)`` input to ``output_size`` (an int or a triple whose
    entries may be None) with PyTorch's bins: the mean over a box is the mean over its depth
    bin of the means over its (H, W) bin, so two 2-D adaptive pools compute it."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool3d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(Module):
    """Max-pool ``(N, C, L)`` input to ``output_size`` with PyTorch's bins; ``return_indices``
    adds each maximum's position."""

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, x):
        return F.adaptive_max_pool1d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """Max-pool ``(N, C, H, W)`` input to ``output_size`` with PyTorch's bins; ``return_indices``
    adds each maximum's flat position in its ``H*W`` plane."""

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool3d(Module):
    """Max-pool ``(N, C, D, H, W)`` input to ``output_size`` with PyTorch's bins: the maximum
    of a box is the maximum over its depth bin of the (H, W) bins' maxima (two 2-D adaptive
    pools; the first maximum in (d, h, w) order wins, as in PyTorch). ``return_indices`` adds
    each maximum's flat position in its ``D*H*W`` volume."""

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, x):
        return F.adaptive_max_pool3d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
