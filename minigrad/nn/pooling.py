"""Pooling layers over ``(N, C, *spatial)`` or unbatched ``(C, *spatial)`` input: max, average,
adaptive average/max and power-average (LP) pooling in 1, 2 and 3 dimensions, and the max
unpools, with PyTorch's arguments (dilation, ceil_mode, count_include_pad, divisor_override,
return_indices).

The common 1-D/2-D cases run ``F.max_pool*``/``F.avg_pool*``; the rest (3-D, dilation, a
``ceil_mode`` that adds a window, indices, divisor overrides) loop over the kernel offsets: offset
``o`` of every window at once is one strided slice of the padded input, so a max pool is a max
over the stacked slices (its gradient goes to the first maximum, as PyTorch's) and an average a
sum of them (in float32 for float16/bfloat16) over PyTorch's per-window divisor.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import functional as F
from .._backend import get_array_module
from .._backend.dtypes import float32, is_floating, is_low_precision
from ..core.tensor import Tensor
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


def _ntuple(name, what, v, n):
    t = tuple(v) if isinstance(v, (tuple, list)) else (v,) * n
    if len(t) != n or not all(hasattr(i, "__index__") and not isinstance(i, bool) for i in t):
        raise ValueError(f"{name}: {what} must be an int or a {n}-tuple of ints, got {v!r}")
    return tuple(int(i) for i in t)


def _const(array) -> Tensor:
    return Tensor._make(array, False, None, 0)


def _batched(name, x, n):
    """``x`` as ``(N, C, *spatial)`` and whether it came unbatched."""
    if x.ndim == n + 1:
        return x.unsqueeze(0), True
    if x.ndim != n + 2:
        raise ValueError(f"{name}: expected a {n + 1}-D (unbatched) or {n + 2}-D (batched) "
                         f"input, got shape {tuple(x.shape)}")
    return x, False


def _geometry(name, x, n, kernel, stride, padding, dilation, ceil_mode, max_pad):
    """Output sizes and the (left, right) padding of every spatial axis that makes room for
    every window (PyTorch's sizes: with ``ceil_mode`` a last window may start in the input or
    the left padding, never in the right padding)."""
    out, pads = [], []
    for size, k, s, p, d, m in zip(x.shape[2:], kernel, stride, padding, dilation, max_pad):
        if k < 1 or s < 1 or d < 1 or p < 0:
            raise ValueError(f"{name}: kernel_size, stride and dilation must be >= 1 and padding "
                             f">= 0, got {kernel}, {stride}, {dilation}, {padding}")
        if p > m:
            raise ValueError(f"{name}: padding should be at most half of the (effective) kernel "
                             f"size, got padding={padding} for kernel_size={kernel}")
        span = d * (k - 1) + 1
        num = size + 2 * p - span
        o = (-(-num // s) if ceil_mode else num // s) + 1
        if ceil_mode and (o - 1) * s >= size + p:
            o -= 1
        if o < 1 or num < 0:
            raise ValueError(f"{name}: output size is too small: input {tuple(x.shape)}, "
                             f"kernel_size={kernel}, padding={padding}, dilation={dilation}")
        out.append(o)
        pads.append((p, max(p, (o - 1) * s + span - size - p)))
    return tuple(out), pads


def _windows(xp_, n, kernel, stride, dilation, out):
    """Per kernel offset, the strided slice of the padded input holding that offset of every
    window (``(N, C, *out)``)."""
    for offs in itertools.product(*(range(k) for k in kernel)):
        idx = (slice(None), slice(None)) + tuple(
            slice(o * d, o * d + (m - 1) * s + 1, s)
            for o, d, s, m in zip(offs, dilation, stride, out))
        yield xp_[idx]


def _max_pool(name, x, n, kernel, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = _batched(name, x, n)
    if not is_floating(x.dtype):
        raise TypeError(f"{name}: expected floating input, got {x.dtype}")
    max_pad = [(d * (k - 1) + 1) // 2 for k, d in zip(kernel, dilation)]
    out, pads = _geometry(name, x, n, kernel, stride, padding, dilation, ceil_mode, max_pad)
    plain = all(d == 1 for d in dilation) and all(b == a for a, b in pads)
    if plain and not return_indices and n in (1, 2):
        y = (F.max_pool1d if n == 1 else F.max_pool2d)(x, kernel if n == 2 else kernel[0],
                                                        stride if n == 2 else stride[0],
                                                        padding if n == 2 else padding[0])
        return y.squeeze(0) if unbatched else y
    if any(a or b for a, b in pads):
        x_p = F.pad(x, [(0, 0), (0, 0)] + pads, value=float("-inf"))
    else:
        x_p = x
    stacked = F.stack(list(_windows(x_p, n, kernel, stride, dilation, out)), axis=-1)
    y, arg = F.max(stacked, axis=-1, return_indices=True)
    if unbatched:
        y = y.squeeze(0)
    if not return_indices:
        return y
    # the flat input position (within the unpadded spatial volume) of each window's maximum
    xp = get_array_module(arg._data)
    flat = np.zeros(out + (math.prod(kernel),), dtype=np.int64)
    size = x.shape[2:]
    for j, offs in enumerate(itertools.product(*(range(k) for k in kernel))):
        pos = 0
        for axis in range(n):
            coord = np.arange(out[axis]) * stride[axis] + offs[axis] * dilation[axis] \
                - padding[axis]
            shape = [1] * n
            shape[axis] = out[axis]
            pos = pos * size[axis] + coord.reshape(shape)
        flat[..., j] = pos
    table = xp.asarray(flat)
    idx = xp.take_along_axis(xp.broadcast_to(table, arg.shape + (table.shape[-1],)),
                             arg._data[..., None], axis=-1)[..., 0]
    idx = _const(idx[0] if unbatched else idx)
    return y, idx


def _avg_pool(name, x, n, kernel, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    x, unbatched = _batched(name, x, n)
    if not is_floating(x.dtype):
        raise TypeError(f"{name}: expected floating input, got {x.dtype}")
    out, pads = _geometry(name, x, n, kernel, stride, padding, (1,) * n, ceil_mode,
                          [k // 2 for k in kernel])
    if divisor_override is not None and divisor_override == 0:
        raise ValueError(f"{name}: divisor_override must be non-zero")
    if n in (1, 2) and divisor_override is None and all(b == a for a, b in pads):
        y = (F.avg_pool1d if n == 1 else F.avg_pool2d)(
            x, kernel if n == 2 else kernel[0], stride if n == 2 else stride[0],
            padding if n == 2 else padding[0], count_include_pad=count_include_pad)
        return y.squeeze(0) if unbatched else y
    dtype = x.dtype
    xf = x.astype(float32) if is_low_precision(dtype) else x
    if any(a or b for a, b in pads):
        xf = F.pad(xf, [(0, 0), (0, 0)] + pads)
    total = None
    for w in _windows(xf, n, kernel, stride, (1,) * n, out):
        total = w if total is None else total + w
    if divisor_override is not None:
        divisor = np.full(out, float(divisor_override))
    else:  # PyTorch's: the window clipped to the padded input, or to the input itself
        divisor = np.ones(out)
        for axis in range(n):
            start = np.arange(out[axis]) * stride[axis] - padding[axis]
            end = np.minimum(start + kernel[axis], x.shape[2 + axis] + padding[axis])
            if not count_include_pad:
                start, end = np.maximum(start, 0), np.minimum(end, x.shape[2 + axis])
            shape = [1] * n
            shape[axis] = out[axis]
            divisor = divisor * (end - start).reshape(shape)
    xp = get_array_module(total._data)
    y = (total / _const(xp.asarray(divisor, dtype=total.dtype))).astype(dtype)
    return y.squeeze(0) if unbatched else y


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
        name, n = type(self).__name__, self._ndim
        return _max_pool(name, x, n, *(_ntuple(name, w, getattr(self, w), n) for w in (
            "kernel_size", "stride", "padding", "dilation")), self.ceil_mode,
            self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Maximum over windows of ``(N, C, L)`` input (stride defaults to the kernel size)."""

    _ndim = 1


class MaxPool2d(_MaxPoolNd):
    """Maximum over ``kernel_size`` windows of ``(N, C, H, W)`` input (stride defaults to the
    kernel size); ``return_indices`` adds each maximum's flat position in its ``H*W`` plane."""


class MaxPool3d(_MaxPoolNd):
    """Maximum over windows of ``(N, C, D, H, W)`` input (stride defaults to the kernel
    size)."""

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
        name, n = type(self).__name__, self._ndim
        return _avg_pool(name, x, n, *(_ntuple(name, w, getattr(self, w), n) for w in (
            "kernel_size", "stride", "padding")), self.ceil_mode, self.count_include_pad,
            self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mean over windows of ``(N, C, L)`` input (stride defaults to the kernel size)."""

    _ndim = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Mean over ``kernel_size`` windows of ``(N, C, H, W)`` input (stride defaults to the
    kernel size). ``count_include_pad``: the padded zeros count in the mean;
    ``divisor_override``: divide every window's sum by this instead."""


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
        # PyTorch's formula: the mean of x**p over each window (windows cut by ceil_mode
        # divide by their clipped size) times the full kernel size, to the power 1/p.
        name, n = type(self).__name__, self._ndim
        kernel = _ntuple(name, "kernel_size", self.kernel_size, n)
        stride = kernel if self.stride is None else _ntuple(name, "stride", self.stride, n)
        out = _avg_pool(name, x ** self.norm_type, n, kernel, stride, (0,) * n,
                        self.ceil_mode, True, None)
        return ((F.sign(out) * F.relu(F.abs(out))) * math.prod(kernel)) ** (1.0 / self.norm_type)

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
        name, n = type(self).__name__, self._ndim
        kernel, stride, padding = (_ntuple(name, w, getattr(self, w), n) for w in (
            "kernel_size", "stride", "padding"))
        shape = tuple(x.shape)
        x, unbatched = _batched(name, x, n)
        if tuple(indices.shape) != shape:
            raise ValueError(f"{name}: indices {tuple(indices.shape)} must have the input's "
                             f"shape {shape}")
        default = [(i - 1) * s - 2 * p + k for i, s, p, k in
                   zip(x.shape[2:], stride, padding, kernel)]
        if output_size is None:
            size = default
        else:
            size = [int(v) for v in output_size]
            size = size[len(size) - n:] if len(size) in (n + 1, n + 2) else size
            if len(size) != n or any(not d - s < o < d + s for o, d, s in
                                     zip(size, default, stride)):
                raise ValueError(f"{name}: output_size {tuple(output_size)} must be within a "
                                 f"stride of the default size {tuple(default)}")
        nb, c = x.shape[:2]
        xp = get_array_module(x._data)
        idx = indices._data if isinstance(indices, Tensor) else xp.asarray(indices)
        idx = idx.reshape(nb, c, -1).astype(np.int64)
        vol = math.prod(size)
        if idx.size and (idx.min() < 0 or idx.max() >= vol):
            raise ValueError(f"{name}: found an index outside the output volume of size "
                             f"{tuple(size)}")
        zeros = _const(xp.zeros((nb, c, vol), dtype=x.dtype))
        # written, not added: where windows overlap, one index may come twice and the last
        # write wins; every input still gets the output gradient at its index (PyTorch's)
        rows = (xp.arange(nb).reshape(-1, 1, 1), xp.arange(c).reshape(1, -1, 1), idx)
        y = F.index_put(zeros, rows, x.reshape(nb, c, -1))
        y = y.reshape((nb, c) + tuple(size))
        return y.squeeze(0) if unbatched else y

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
        size = _ntuple(type(self).__name__, "output_size", self.output_size, 1)
        return F.adaptive_avg_pool2d(x.unsqueeze(-2), (1, size[0])).squeeze(-2)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


def _sizes3(name, x, output_size):
    size = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * 3
    if len(size) != 3:
        raise ValueError(f"{name}: output_size must be an int or a triple, got {output_size!r}")
    return tuple(x.shape[2 + i] if s is None else int(s) for i, s in enumerate(size))


class AdaptiveAvgPool3d(Module):
    """Average-pool ``(N, C, D, H, W)`` input to ``output_size`` (an int or a triple whose
    entries may be None) with PyTorch's bins: the mean over a box is the mean over its depth
    bin of the means over its (H, W) bin, so two 2-D adaptive pools compute it."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        name = type(self).__name__
        x, unbatched = _batched(name, x, 3)
        n, c, d, h, w = x.shape
        od, oh, ow = _sizes3(name, x, self.output_size)
        y = F.adaptive_avg_pool2d(x.reshape(n, c * d, h, w), (oh, ow))
        y = y.reshape(n, c, d, oh * ow).transpose(0, 1, 3, 2)
        y = F.adaptive_avg_pool2d(y, (oh * ow, od))  # identity bins over the oh*ow rows
        y = y.reshape(n, c, oh, ow, od).transpose(0, 1, 4, 2, 3)
        return y.squeeze(0) if unbatched else y

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
        size = _ntuple(type(self).__name__, "output_size", self.output_size, 1)
        out = F.adaptive_max_pool2d(x.unsqueeze(-2), (1, size[0]), self.return_indices)
        if self.return_indices:
            return tuple(o.squeeze(-2) for o in out)
        return out.squeeze(-2)

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
        name = type(self).__name__
        x, unbatched = _batched(name, x, 3)
        n, c, d, h, w = x.shape
        od, oh, ow = _sizes3(name, x, self.output_size)
        y1, i1 = F.adaptive_max_pool2d(x.reshape(n, c * d, h, w), (oh, ow), True)
        y = y1.reshape(n, c, d, oh * ow).transpose(0, 1, 3, 2)
        y, i2 = F.adaptive_max_pool2d(y, (oh * ow, od), True)
        y = y.reshape(n, c, oh, ow, od).transpose(0, 1, 4, 2, 3)
        if unbatched:
            y = y.squeeze(0)
        if not self.return_indices:
            return y
        xp = get_array_module(i1._data)
        depth = (i2._data % d).transpose(0, 1, 3, 2)            # (N, C, od, oh*ow)
        plane = xp.take_along_axis(i1._data.reshape(n, c, d, oh * ow), depth, axis=2)
        idx = (depth * (h * w) + plane).reshape(n, c, od, oh, ow)
        return y, _const(idx[0] if unbatched else idx)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
