"""Pooling in 1, 2 and 3 dimensions with PyTorch's full arguments, over ``(N, C, *spatial)`` or
unbatched ``(C, *spatial)`` input: ``max_pool3d`` and ``avg_pool3d``, the power-average
``lp_pool1d/2d/3d``, ``adaptive_avg_pool1d/3d``, ``adaptive_max_pool1d/3d`` and the max unpools
``max_unpool1d/2d/3d``.

All are composites of other ops, each governed by its own policy row: the 3-D max and average
pools are ``functional.pooling``'s 2-D and 1-D pools (one geometry, one set of checks for the
whole family); LP pooling is an average pool of ``x**p`` (PyTorch's formula); the adaptive 1-D
and 3-D pools are 2-D adaptive pools (PyTorch's bins factor per axis); an unpool is an
``index_put`` into zeros.
"""

from __future__ import annotations

import math

import numpy as np

from .._backend import get_array_module
from ..core.tensor import Tensor
from ._utils import check_floating
from .activation import relu
from .elementwise import abs as _abs
from .elementwise import sign
from .pooling import (
    _avg_pool, _batched, _max_pool, _ntuple, adaptive_avg_pool2d, adaptive_max_pool2d,
)
from .sampling import index_put

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool3d", "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _const(array) -> Tensor:
    return Tensor._make(array, False, None, 0)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Maximum over windows of ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) input,
    floating or integer (as PyTorch's); stride defaults to the kernel size, padding is
    implicit ``-inf`` (at most half the kernel), ``ceil_mode`` rounds the output size up.
    ``return_indices`` adds each maximum's int64 flat position in its ``D*H*W`` volume (what
    ``max_unpool3d`` takes). Runs as ``max_pool2d`` over each depth's planes, then
    ``max_pool1d`` over depth (see ``functional.pooling``)."""
    return _max_pool("max_pool3d", input, 3, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override=None) -> Tensor:
    """Mean over windows of ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) input,
    floating or int64 (PyTorch's integer mean, truncated toward zero); stride defaults to the
    kernel size. ``count_include_pad``: the padded zeros count in the mean;
    ``divisor_override``: divide every window's sum by this instead. Runs as ``avg_pool1d``
    sums over depth, then ``avg_pool2d`` over each depth's planes (see
    ``functional.pooling``)."""
    return _avg_pool("avg_pool3d", input, 3, kernel_size, stride, padding,
                     ceil_mode, count_include_pad, divisor_override)


def _lp_pool(name, x, n, norm_type, kernel_size, stride, ceil_mode):
    # PyTorch's formula: the mean of x**p over each window (windows cut by ceil_mode divide by
    # their clipped size) times the full kernel size, to the power 1/p.
    kernel = _ntuple(name, "kernel_size", kernel_size, n)
    out = _avg_pool(name, x ** norm_type, n, kernel, stride, 0, ceil_mode, True, None)
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
    check_floating("adaptive_avg_pool1d", input)  # as PyTorch's CPU kernels
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
    check_floating(name, input)  # as PyTorch's CPU kernels
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
    check_floating("adaptive_max_pool1d", input)  # as PyTorch's CPU kernels
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
    check_floating(name, input)  # as PyTorch's CPU kernels
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
