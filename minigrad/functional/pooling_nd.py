"""Pooling in 1, 2 and 3 dimensions with PyTorch's full arguments, over ``(N, C, *spatial)`` or
unbatched ``(C, *spatial)`` input: ``max_pool3d``, ``avg_pool3d``, the power-average
``lp_pool1d/2d/3d``, ``adaptive_avg_pool1d/3d``, ``adaptive_max_pool1d/3d`` and the max unpools
``max_unpool1d/2d/3d``.

All are composites of other ops (each governed by its own policy row): the common 1-D/2-D cases
run ``max_pool*``/``avg_pool*``; the rest (3-D, dilation, a ``ceil_mode`` that adds a window,
indices, divisor overrides) loop over the kernel offsets: offset ``o`` of every window at once
is one strided slice of the padded input, so a max pool is a max over the stacked slices (its
gradient goes to the first maximum, as PyTorch's) and an average a sum of them (in float32 for
float16/bfloat16) over PyTorch's per-window divisor. The adaptive 3-D pools are two 2-D
adaptive pools (PyTorch's bins factor per axis).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._backend import get_array_module
from .._backend.dtypes import float32, is_floating, is_low_precision
from ..core.tensor import Tensor
from ._utils import check_floating
from .activation import relu
from .elementwise import abs as _abs
from .elementwise import sign
from .pooling import (
    adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d,
)
from .reduction import max as _max
from .sampling import index_put
from .shape import pad, stack

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool3d", "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


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
        y = (max_pool1d if n == 1 else max_pool2d)(x, kernel if n == 2 else kernel[0],
                                                        stride if n == 2 else stride[0],
                                                        padding if n == 2 else padding[0])
        return y.squeeze(0) if unbatched else y
    if any(a or b for a, b in pads):
        x_p = pad(x, [(0, 0), (0, 0)] + pads, value=float("-inf"))
    else:
        x_p = x
    stacked = stack(list(_windows(x_p, n, kernel, stride, dilation, out)), axis=-1)
    y, arg = _max(stacked, axis=-1, return_indices=True)
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
        y = (avg_pool1d if n == 1 else avg_pool2d)(
            x, kernel if n == 2 else kernel[0], stride if n == 2 else stride[0],
            padding if n == 2 else padding[0], count_include_pad=count_include_pad)
        return y.squeeze(0) if unbatched else y
    dtype = x.dtype
    xf = x.astype(float32) if is_low_precision(dtype) else x
    if any(a or b for a, b in pads):
        xf = pad(xf, [(0, 0), (0, 0)] + pads)
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


def _stride(name, stride, kernel, n):
    return kernel if stride is None or stride == [] else _ntuple(name, "stride", stride, n)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Maximum over windows of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input; stride
    defaults to the kernel size. ``return_indices`` adds each maximum's flat position in its
    ``D*H*W`` volume."""
    name, n = "max_pool3d", 3
    kernel = _ntuple(name, "kernel_size", kernel_size, n)
    return _max_pool(name, input, n, kernel, _stride(name, stride, kernel, n),
                     _ntuple(name, "padding", padding, n), _ntuple(name, "dilation", dilation, n),
                     ceil_mode, return_indices)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override=None) -> Tensor:
    """Mean over windows of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input; stride defaults
    to the kernel size. ``count_include_pad``: the padded zeros count in the mean;
    ``divisor_override``: divide every window's sum by this instead."""
    name, n = "avg_pool3d", 3
    kernel = _ntuple(name, "kernel_size", kernel_size, n)
    return _avg_pool(name, input, n, kernel, _stride(name, stride, kernel, n),
                     _ntuple(name, "padding", padding, n), ceil_mode, count_include_pad,
                     divisor_override)


def _lp_pool(name, x, n, norm_type, kernel_size, stride, ceil_mode):
    # PyTorch's formula: the mean of x**p over each window (windows cut by ceil_mode divide by
    # their clipped size) times the full kernel size, to the power 1/p.
    kernel = _ntuple(name, "kernel_size", kernel_size, n)
    stride = kernel if stride is None else _ntuple(name, "stride", stride, n)
    out = _avg_pool(name, x ** norm_type, n, kernel, stride, (0,) * n, ceil_mode, True, None)
    return ((sign(out) * relu(_abs(out))) * math.prod(kernel)) ** (1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling ``(sum over the window of x**p) ** (1/p)`` of ``(N, C, L)``
    input."""
    return _lp_pool("lp_pool1d", input, 1, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling ``(sum over the window of x**p) ** (1/p)`` of ``(N, C, H, W)``
    input."""
    return _lp_pool("lp_pool2d", input, 2, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of ``(N, C, D, H, W)`` input."""
    return _lp_pool("lp_pool3d", input, 3, norm_type, kernel_size, stride, ceil_mode)


def _max_unpool(name, x, n, indices, kernel_size, stride, padding, output_size):
    check_floating(name, x)  # as PyTorch's CPU kernels
    kernel = _ntuple(name, "kernel_size", kernel_size, n)
    stride = kernel if stride is None or stride == [] else _ntuple(name, "stride", stride, n)
    padding = _ntuple(name, "padding", padding, n)
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
    y = index_put(zeros, rows, x.reshape(nb, c, -1))
    y = y.reshape((nb, c) + tuple(size))
    return y.squeeze(0) if unbatched else y


def max_unpool1d(input: Tensor, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool1d``: each value of ``input`` at its position
    ``indices`` (the pool's ``return_indices``) in a zero output of the pool's input size (or
    ``output_size``)."""
    return _max_unpool("max_unpool1d", input, 1, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input: Tensor, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool2d`` (see :func:`max_unpool1d`)."""
    return _max_unpool("max_unpool2d", input, 2, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input: Tensor, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool3d`` (see :func:`max_unpool1d`)."""
    return _max_unpool("max_unpool3d", input, 3, indices, kernel_size, stride, padding,
                       output_size)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Average-pool ``(N, C, L)`` (or ``(C, L)``) input to ``output_size`` with PyTorch's
    bins."""
    size = _ntuple("adaptive_avg_pool1d", "output_size", output_size, 1)
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size[0])).squeeze(-2)


def _sizes3(name, x, output_size):
    size = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * 3
    if len(size) != 3:
        raise ValueError(f"{name}: output_size must be an int or a triple, got {output_size!r}")
    return tuple(x.shape[2 + i] if s is None else int(s) for i, s in enumerate(size))


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Average-pool ``(N, C, D, H, W)`` input to ``output_size`` (an int or a triple whose
    entries may be None) with PyTorch's bins: the mean over a box is the mean over its depth
    bin of the means over its (H, W) bin, so two 2-D adaptive pools compute it."""
    name = "adaptive_avg_pool3d"
    x, unbatched = _batched(name, input, 3)
    n, c, d, h, w = x.shape
    od, oh, ow = _sizes3(name, x, output_size)
    y = adaptive_avg_pool2d(x.reshape(n, c * d, h, w), (oh, ow))
    y = y.reshape(n, c, d, oh * ow).transpose(0, 1, 3, 2)
    y = adaptive_avg_pool2d(y, (oh * ow, od))  # identity bins over the oh*ow rows
    y = y.reshape(n, c, oh, ow, od).transpose(0, 1, 4, 2, 3)
    return y.squeeze(0) if unbatched else y


def adaptive_max_pool1d(input: Tensor, output_size,  # noqa: A002
                        return_indices: bool = False):
    """Max-pool ``(N, C, L)`` input to ``output_size`` with PyTorch's bins; ``return_indices``
    adds each maximum's position."""
    size = _ntuple("adaptive_max_pool1d", "output_size", output_size, 1)
    out = adaptive_max_pool2d(input.unsqueeze(-2), (1, size[0]), return_indices)
    if return_indices:
        return tuple(o.squeeze(-2) for o in out)
    return out.squeeze(-2)


def adaptive_max_pool3d(input: Tensor, output_size,  # noqa: A002
                        return_indices: bool = False):
    """Max-pool ``(N, C, D, H, W)`` input to ``output_size`` with PyTorch's bins: the maximum
    of a box is the maximum over its depth bin of the (H, W) bins' maxima (two 2-D adaptive
    pools; the first maximum in (d, h, w) order wins, as in PyTorch). ``return_indices`` adds
    each maximum's flat position in its ``D*H*W`` volume."""
    name = "adaptive_max_pool3d"
    x, unbatched = _batched(name, input, 3)
    n, c, d, h, w = x.shape
    od, oh, ow = _sizes3(name, x, output_size)
    y1, i1 = adaptive_max_pool2d(x.reshape(n, c * d, h, w), (oh, ow), True)
    y = y1.reshape(n, c, d, oh * ow).transpose(0, 1, 3, 2)
    y, i2 = adaptive_max_pool2d(y, (oh * ow, od), True)
    y = y.reshape(n, c, oh, ow, od).transpose(0, 1, 4, 2, 3)
    if unbatched:
        y = y.squeeze(0)
    if not return_indices:
        return y
    xp = get_array_module(i1._data)
    depth = (i2._data % d).transpose(0, 1, 3, 2)            # (N, C, od, oh*ow)
    plane = xp.take_along_axis(i1._data.reshape(n, c, d, oh * ow), depth, axis=2)
    idx = (depth * (h * w) + plane).reshape(n, c, od, oh, ow)
    return y, _const(idx[0] if unbatched else idx)
