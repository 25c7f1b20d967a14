"""Pooling over NCHW input: max_pool2d, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d;
max_pool1d and avg_pool1d over NCL input (run by the 2-D kernels).

Ops loop over the kh*kw kernel offsets only: offset (i, j) of all windows at once is one strided
slice of the padded input, so each step is a vectorised op over (N, C, OH, OW) and no window copy
is made (cheaper than im2col + argmax over a tiny trailing axis). Max pooling routes gradients
with flat-index scatters instead of masks: exact for inf/NaN, and NumPy's masked selects are
slow. Each forward has a dedicated backward op whose own backward is the forward again (the
two are adjoint), so double backward works.
Averages accumulate in float32 for float16/bfloat16 and round once (invariant 3).
"""

from __future__ import annotations

import numpy as np

from .._backend import casts, get_array_module, kernels
from .._backend.dtypes import float32, is_low_precision
from ..core.function import Function
from ..core.tensor import Tensor
from ._utils import check_floating, op_error
from .shape import GatherBackward

__all__ = ["adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d",
           "max_pool1d", "max_pool2d"]


def _acc_dtype(dtype):
    return float32 if is_low_precision(dtype) else dtype


def _pad2d(x, ph, pw, value):
    if not ph and not pw:
        return x
    xp = get_array_module(x)
    n, c, h, w = x.shape
    out = xp.full((n, c, h + 2 * ph, w + 2 * pw), value, dtype=x.dtype)
    out[:, :, ph:ph + h, pw:pw + w] = x
    return out


def _offsets(kernel, stride, out_hw):
    """For each kernel offset: its flat index and the slice of the padded input it covers."""
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            yield i * kernel[1] + j, (slice(None), slice(None),
                                      slice(i, i + stride[0] * (out_hw[0] - 1) + 1, stride[0]),
                                      slice(j, j + stride[1] * (out_hw[1] - 1) + 1, stride[1]))


def _crop(acc, in_hw, padding, dtype):
    ph, pw = padding
    xp = get_array_module(acc)
    return casts.to_dtype(xp.ascontiguousarray(acc[:, :, ph:ph + in_hw[0], pw:pw + in_hw[1]]),
                          dtype)


# ----------------------------------------------------------------------------- max pooling
class MaxPool2dFunction(Function):
    name = "max_pool2d"

    def forward(self, x, kernel, stride, padding, out_hw):
        # Comparisons and copies only: on the CPU float16/bfloat16 are pooled as integer keys
        # (NumPy's half-precision comparisons convert element by element).
        return kernels.selection(lambda v: self._pool(v, kernel, stride, padding, out_hw), x)

    def _pool(self, x, kernel, stride, padding, out_hw):
        xp = get_array_module(x)
        # (the integer's minimum is built from its size: np.iinfo costs ~5 us a call)
        lowest = -(1 << (8 * x.dtype.itemsize - 1)) if x.dtype.kind == "i" else (
            0 if x.dtype.kind in "ub" else -xp.inf)
        xpad = _pad2d(x, padding[0], padding[1], lowest)
        offsets = _offsets(kernel, stride, out_hw)
        _, sl = next(offsets)
        best = xpad[sl].copy()  # C-ordered, and updated in place below
        # Index of the window's maximum (kernel offset i*kw + j), small to keep memory low.
        idx = xp.zeros(best.shape, dtype=xp.int8 if kernel[0] * kernel[1] < 128 else xp.int32)
        for k, sl in offsets:
            v = kernels.ufunc_operand(xpad[sl])
            upd = v > best  # strict: the first maximum wins, as in PyTorch
            idx += upd * (k - idx)  # branch-free select (masked copies are slow in NumPy)
            xp.maximum(best, v, out=best)  # propagates NaN
        self.idx = idx
        self.cfg = {"kernel": kernel, "stride": stride, "padding": padding, "out_hw": out_hw}
        self.in_hw = x.shape[2:]
        return best

    def backward(self, gy):
        return MaxPool2dBackward.apply(gy, idx=self.idx, in_hw=self.in_hw, **self.cfg)


def _argmax_flat_index(idx, kernel, stride, padded_hw):
    """Flat index into the padded (N, C, Hp, Wp) input of every window's maximum."""
    xp = get_array_module(idx)
    n, c, oh, ow = idx.shape
    hp, wp = padded_hw
    # int32 halves the traffic of the index math and the scatter wherever it can address.
    itype = xp.int32 if n * c * hp * wp < 2 ** 31 else xp.int64
    # The maximum's offset inside its window, i*Wp + j = k + (k // kw) * (Wp - kw) for kernel
    # offset k = i*kw + j (arithmetic: a table lookup by int8 index, or an int8 remainder, is
    # several times slower in NumPy).
    lin = xp.multiply(idx // kernel[1], wp - kernel[1], dtype=itype)
    lin += idx
    # + the window's origin: plane p, output row r, column q start at p*Hp*Wp + r*sh*Wp + q*sw.
    lin += kernels.index_grid(idx, (n, c, oh, ow), (c * hp * wp, hp * wp, stride[0] * wp,
                                                     stride[1]), itype)
    return lin


class MaxPool2dBackward(Function):
    """Route each output gradient to the input element that was the window's maximum."""

    name = "max_pool2d_backward"

    def forward(self, gy, idx, kernel, stride, padding, out_hw, in_hw):
        xp = get_array_module(gy)
        self.idx, self.cfg = idx, {"kernel": kernel, "stride": stride, "padding": padding,
                                   "out_hw": out_hw}
        n, c = gy.shape[:2]
        hp, wp = in_hw[0] + 2 * padding[0], in_hw[1] + 2 * padding[1]
        lin = _argmax_flat_index(idx, kernel, stride, (hp, wp))
        # Windows whose output positions differ by ceil(k/s) rows or columns are disjoint, so
        # each such phase is a collision-free scatter. With one phase (windows do not overlap)
        # every target is written once, and a plain store is twice as fast as a scattered add;
        # nothing is summed then, so float16/bfloat16 are stored as they are.
        qh, qw = -(-kernel[0] // stride[0]), -(-kernel[1] // stride[1])
        acc = xp.zeros(n * c * hp * wp,
                       dtype=gy.dtype if qh == qw == 1 else _acc_dtype(gy.dtype))
        if qh == qw == 1:
            acc[lin] = gy
        else:
            for a in range(min(qh, out_hw[0])):
                for b in range(min(qw, out_hw[1])):
                    acc[lin[:, :, a::qh, b::qw]] += gy[:, :, a::qh, b::qw]
        return _crop(acc.reshape(n, c, hp, wp), in_hw, padding, gy.dtype)

    def backward(self, ggx):
        return MaxPool2dGather.apply(ggx, idx=self.idx, **self.cfg)


class MaxPool2dGather(Function):
    """Pick, per window, the element at the saved argmax (the adjoint of the backward)."""

    name = "max_pool2d_gather"

    def forward(self, x, idx, kernel, stride, padding, out_hw):
        self.idx, self.cfg = idx, {"kernel": kernel, "stride": stride, "padding": padding,
                                   "out_hw": out_hw}
        self.in_hw = x.shape[2:]
        xpad = _pad2d(x, padding[0], padding[1], 0)
        return xpad.reshape(-1)[_argmax_flat_index(idx, kernel, stride, xpad.shape[2:])]

    def backward(self, gy):
        return MaxPool2dBackward.apply(gy, idx=self.idx, in_hw=self.in_hw, **self.cfg)


# ----------------------------------------------------------------------------- average pooling
def _avg_forward(x, kernel, stride, padding, out_hw):
    xp = get_array_module(x)
    acc_dtype = _acc_dtype(x.dtype)
    xpad = _pad2d(casts.to_dtype(x, acc_dtype), padding[0], padding[1], 0)  # widened once
    acc = xp.zeros(x.shape[:2] + tuple(out_hw), dtype=acc_dtype)
    for _, sl in _offsets(kernel, stride, out_hw):
        acc += xpad[sl]
    acc /= kernel[0] * kernel[1]  # count_include_pad=True: padded zeros count
    return casts.to_dtype(acc, x.dtype)


def _avg_backward(gy, kernel, stride, padding, out_hw, in_hw):
    xp = get_array_module(gy)
    n, c = gy.shape[:2]
    acc = xp.zeros((n, c, in_hw[0] + 2 * padding[0], in_hw[1] + 2 * padding[1]),
                   dtype=_acc_dtype(gy.dtype))
    g = casts.to_dtype(gy, acc.dtype) / (kernel[0] * kernel[1])
    for _, sl in _offsets(kernel, stride, out_hw):
        acc[sl] += g
    return _crop(acc, in_hw, padding, gy.dtype)


class AvgPool2dFunction(Function):
    name = "avg_pool2d"

    def forward(self, x, kernel, stride, padding, out_hw):
        self.cfg = {"kernel": kernel, "stride": stride, "padding": padding, "out_hw": out_hw}
        self.in_hw = x.shape[2:]
        return _avg_forward(x, **self.cfg)

    def backward(self, gy):
        return AvgPool2dBackward.apply(gy, in_hw=self.in_hw, **self.cfg)


class AvgPool2dBackward(Function):
    name = "avg_pool2d_backward"

    def forward(self, gy, kernel, stride, padding, out_hw, in_hw):
        self.cfg = {"kernel": kernel, "stride": stride, "padding": padding, "out_hw": out_hw}
        return _avg_backward(gy, in_hw=in_hw, **self.cfg)

    def backward(self, ggx):
        return AvgPool2dFunction.apply(ggx, **self.cfg)


# ----------------------------------------------------------------------------- adaptive average
def _bin_matrix(xp, n_in, n_out, dtype):
    """(n_out, n_in) averaging matrix with PyTorch's bins [floor(i*n/m), ceil((i+1)*n/m))."""
    i = xp.arange(n_out)[:, None]
    start = (i * n_in) // n_out
    end = -((-(i + 1) * n_in) // n_out)
    j = xp.arange(n_in)[None, :]
    return ((j >= start) & (j < end)).astype(dtype) / (end - start).astype(dtype)


def _separable(x, a, b):
    """``a @ x @ b.T`` over the two trailing dims, as two large 2-D GEMMs."""
    xp = get_array_module(x)
    n, c, h, w = x.shape
    t = kernels.matmul(x.reshape(n * c * h, w), b.T)  # (N*C*H, b_rows)
    t = t.reshape(n * c, h, b.shape[0]).transpose(0, 2, 1).reshape(-1, h)
    y = kernels.matmul(t, a.T).reshape(n, c, b.shape[0], a.shape[0]).transpose(0, 1, 3, 2)
    return xp.ascontiguousarray(y)


def _adaptive(x, in_hw, out_hw, transpose):
    """Adaptive average pooling (or its adjoint when ``transpose``) from in_hw to out_hw."""
    kh, kw = in_hw[0] // out_hw[0], in_hw[1] // out_hw[1]
    if in_hw[0] == kh * out_hw[0] and in_hw[1] == kw * out_hw[1]:
        # Equal bins: plain average pooling with kernel == stride (reshape-sized windows).
        cfg = {"kernel": (kh, kw), "stride": (kh, kw), "padding": (0, 0), "out_hw": out_hw}
        return _avg_backward(x, in_hw=in_hw, **cfg) if transpose else _avg_forward(x, **cfg)
    xp = get_array_module(x)
    acc = _acc_dtype(x.dtype)
    if not transpose:  # each output reads only its bin: an inf or NaN reaches only its bins
        y = _bin_average(_bin_average(x.astype(acc, copy=False), 3, out_hw[1]), 2, out_hw[0])
        return y.astype(x.dtype, copy=False)
    # The adjoint (backward) spreads each output gradient over its bin, as one matrix product.
    a = _bin_matrix(xp, in_hw[0], out_hw[0], acc).T
    b = _bin_matrix(xp, in_hw[1], out_hw[1], acc).T
    return _separable(x.astype(acc, copy=False), a, b).astype(x.dtype, copy=False)


def _bin_average(x, axis, n_out):
    """Mean over PyTorch's adaptive bins along ``axis``, by gathering each bin's elements
    (a product with a bin matrix would spread an inf as inf * 0 = NaN to every output)."""
    xp = get_array_module(x)
    n_in = x.shape[axis]
    i = np.arange(n_out)
    start = (i * n_in) // n_out
    end = -((-(i + 1) * n_in) // n_out)
    length = end - start
    idx = start[:, None] + np.arange(int(length.max()))[None, :]   # (n_out, longest bin)
    valid = idx < end[:, None]
    taps = xp.moveaxis(x, axis, -1)[..., np.minimum(idx, n_in - 1)]
    summed = xp.where(xp.asarray(valid), taps, 0).sum(-1)
    return xp.moveaxis(summed / xp.asarray(length, dtype=x.dtype), -1, axis)


class AdaptiveAvgPool2dFunction(Function):
    name = "adaptive_avg_pool2d"

    def forward(self, x, out_hw):
        self.in_hw, self.out_hw = x.shape[2:], out_hw
        return _adaptive(x, self.in_hw, out_hw, transpose=False)

    def backward(self, gy):
        return AdaptiveAvgPool2dBackward.apply(gy, in_hw=self.in_hw, out_hw=self.out_hw)


class AdaptiveAvgPool2dBackward(Function):
    name = "adaptive_avg_pool2d_backward"

    def forward(self, gy, in_hw, out_hw):
        self.out_hw = out_hw
        return _adaptive(gy, in_hw, out_hw, transpose=True)

    def backward(self, ggx):
        return AdaptiveAvgPool2dFunction.apply(ggx, out_hw=self.out_hw)


# ----------------------------------------------------------------------------- public API
def _pair(v, op, what):
    t = (v, v) if isinstance(v, int) else tuple(v)
    if len(t) != 2 or not all(isinstance(i, int) for i in t):
        raise op_error(op, f"{what} must be an int or a pair of ints", **{what: v})
    return t


def _geometry(op, x, kernel_size, stride, padding):
    if x.ndim != 4:
        raise op_error(op, "expected input (N, C, H, W); add a batch dim with x.unsqueeze(0) "
                       "for a single image", input=x.shape)
    kernel = _pair(kernel_size, op, "kernel_size")
    stride = kernel if stride is None else _pair(stride, op, "stride")
    padding = _pair(padding, op, "padding")
    if min(kernel) < 1 or min(stride) < 1 or min(padding) < 0:
        raise op_error(op, "kernel_size and stride must be >= 1 and padding >= 0",
                       kernel_size=kernel, stride=stride, padding=padding)
    if padding[0] * 2 > kernel[0] or padding[1] * 2 > kernel[1]:
        raise op_error(op, "padding must be at most half the kernel size",
                       kernel_size=kernel, padding=padding)
    out_hw = tuple((i + 2 * p - k) // s + 1
                   for i, k, s, p in zip(x.shape[2:], kernel, stride, padding))
    if min(out_hw) < 1:
        raise op_error(op, f"output size {out_hw} is not positive: the kernel is larger than "
                       "the padded input; use a smaller kernel_size or more padding",
                       input=x.shape, kernel_size=kernel, padding=padding)
    return kernel, stride, padding, out_hw


def max_pool2d(x: Tensor, kernel_size, stride=None, padding=0) -> Tensor:
    """Max over sliding windows; the gradient goes to the (first) maximum of each window.

    Args:
        x: ``(N, C, H, W)``.
        kernel_size: an int or an ``(h, w)`` pair.
        stride: defaults to ``kernel_size``.
        padding: implicit ``-inf`` padding on both sides (at most half the kernel).

    Returns:
        ``(N, C, OH, OW)`` with ``OH = (H + 2*ph - kh) // sh + 1``.
    """
    if x.ndim == 3:  # unbatched (C, H, W), as PyTorch
        return max_pool2d(x.unsqueeze(0), kernel_size, stride, padding).squeeze(0)
    k, s, p, out_hw = _geometry("max_pool2d", x, kernel_size, stride, padding)
    return MaxPool2dFunction.apply(x, kernel=k, stride=s, padding=p, out_hw=out_hw)


def avg_pool2d(x: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows.

    Args:
        x: ``(N, C, H, W)``.
        kernel_size: an int or an ``(h, w)`` pair.
        stride: defaults to ``kernel_size``.
        padding: implicit zero padding on both sides (at most half the kernel).
        ceil_mode: PyTorch's rounding of the output size up; only False is supported.
        count_include_pad: the padded zeros count in the mean (PyTorch's default); False
            divides by the number of input elements in the window (MegEngine's default
            ``mode="average_count_exclude_padding"``).

    Returns:
        ``(N, C, OH, OW)``, accumulated in float32 for float16/bfloat16 input.
    """
    check_floating("avg_pool2d", x)  # a mean of integers is no integer (PyTorch refuses too)
    if x.ndim == 3:  # unbatched (C, H, W), as PyTorch
        return avg_pool2d(x.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                          count_include_pad).squeeze(0)
    if ceil_mode:
        raise op_error("avg_pool2d", "ceil_mode=True is not supported; pad the input instead")
    k, s, p, out_hw = _geometry("avg_pool2d", x, kernel_size, stride, padding)
    y = AvgPool2dFunction.apply(x, kernel=k, stride=s, padding=p, out_hw=out_hw)
    if count_include_pad or p == (0, 0):
        return y
    # The mean over the input elements only: the padded mean divided by the share of each
    # window that lies inside the input (the padded mean of ones), a constant.
    xp = get_array_module(x._data)
    ones = Tensor._make(xp.ones((1, 1) + x.shape[2:], dtype=y.dtype), False, None, 0)
    share = AvgPool2dFunction.apply(ones, kernel=k, stride=s, padding=p, out_hw=out_hw)
    return y / Tensor._make(share._data, False, None, 0)


def adaptive_avg_pool2d(x: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed output size, with PyTorch's bin boundaries.

    Output cell ``i`` averages input rows ``floor(i*H/OH)`` to ``ceil((i+1)*H/OH) - 1`` (and
    likewise for columns), so bins may overlap when ``H`` is not a multiple of ``OH``.

    Args:
        x: ``(N, C, H, W)``.
        output_size: an int, or an ``(OH, OW)`` pair whose entries may be None (keep that size).
    """
    if x.ndim == 3:  # unbatched (C, H, W), as PyTorch
        return adaptive_avg_pool2d(x.unsqueeze(0), output_size).squeeze(0)
    out_hw = _adaptive_output_size("adaptive_avg_pool2d", x, output_size)
    return AdaptiveAvgPool2dFunction.apply(x, out_hw=out_hw)


def _adaptive_output_size(op: str, x: Tensor, output_size) -> tuple:
    """The ``(OH, OW)`` an adaptive 2-D pool of ``x`` makes, checked."""
    check_floating(op, x)
    if x.ndim != 4:
        raise op_error(op, "expected input (N, C, H, W); add a batch dim with x.unsqueeze(0)",
                       input=x.shape)
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    if len(size) != 2:
        raise op_error(op, "output_size must be an int or a pair", output_size=output_size)
    out_hw = tuple(x.shape[2 + i] if s is None else int(s) for i, s in enumerate(size))
    if min(out_hw) < 1 or min(x.shape[2:]) < 1:
        raise op_error(op, "output and input sizes must be positive", input=x.shape,
                       output_size=output_size)
    return out_hw


# ----------------------------------------------------------------------------- 1-D pooling
# (N, C, L) pooled as (N, C, 1, L) by the 2-D kernels, under the 1-D ops' own names (their
# policy rows); the reshapes around them are differentiable views.
class MaxPool1dFunction(MaxPool2dFunction):
    name = "max_pool1d"


class AvgPool1dFunction(AvgPool2dFunction):
    name = "avg_pool1d"


def _single(v, op, what):
    t = (v,) if isinstance(v, int) else tuple(v)
    if len(t) != 1 or not isinstance(t[0], int) or isinstance(t[0], bool):
        raise op_error(op, f"{what} must be an int or a 1-tuple", **{what: v})
    return t[0]


def _geometry1d(op, x, kernel_size, stride, padding):
    if x.ndim != 3:
        raise op_error(op, "expected input (N, C, L); add a batch dim with x.unsqueeze(0) "
                       "for a single sequence", input=x.shape)
    k = _single(kernel_size, op, "kernel_size")
    s = k if stride is None else _single(stride, op, "stride")
    p = _single(padding, op, "padding")
    x4 = x.reshape(x.shape[:2] + (1, x.shape[2]))
    return x4, _geometry(op, x4, (1, k), (1, s), (0, p))


def max_pool1d(x: Tensor, kernel_size, stride=None, padding=0) -> Tensor:
    """Max over sliding windows of ``(N, C, L)`` input (floating, as PyTorch's); the gradient
    goes to the (first) maximum of each window.

    Args:
        kernel_size: an int. stride: defaults to ``kernel_size``. padding: implicit ``-inf``
            on both ends (at most half the kernel).

    Returns:
        ``(N, C, OL)`` with ``OL = (L + 2*padding - kernel_size) // stride + 1``.
    """
    check_floating("max_pool1d", x)
    if x.ndim == 2:  # unbatched (C, L), as PyTorch
        return max_pool1d(x.unsqueeze(0), kernel_size, stride, padding).squeeze(0)
    x4, (k, s, p, out_hw) = _geometry1d("max_pool1d", x, kernel_size, stride, padding)
    y = MaxPool1dFunction.apply(x4, kernel=k, stride=s, padding=p, out_hw=out_hw)
    return y.reshape(y.shape[:2] + (out_hw[1],))


def avg_pool1d(x: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of ``(N, C, L)`` input (floating only).

    Args:
        kernel_size: an int. stride: defaults to ``kernel_size``. padding: implicit zeros on
            both ends (at most half the kernel).
        ceil_mode: only False is supported.
        count_include_pad: the padded zeros count in the mean (PyTorch's default).
    """
    check_floating("avg_pool1d", x)
    if x.ndim == 2:  # unbatched (C, L), as PyTorch
        return avg_pool1d(x.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                          count_include_pad).squeeze(0)
    if ceil_mode:
        raise op_error("avg_pool1d", "ceil_mode=True is not supported; pad the input instead")
    x4, (k, s, p, out_hw) = _geometry1d("avg_pool1d", x, kernel_size, stride, padding)
    y = AvgPool1dFunction.apply(x4, kernel=k, stride=s, padding=p, out_hw=out_hw)
    if not count_include_pad and p != (0, 0):
        # divided by the share of each window inside the input (the padded mean of ones)
        ones = Tensor._make(get_array_module(x._data).ones((1, 1) + x4.shape[2:], dtype=y.dtype),
                            False, None, 0)
        share = AvgPool2dFunction.apply(ones, kernel=k, stride=s, padding=p, out_hw=out_hw)
        y = y / Tensor._make(share._data, False, None, 0)
    return y.reshape(y.shape[:2] + (out_hw[1],))


# ----------------------------------------------------------------------------- adaptive max
def _adaptive_argmax(xp, x, out_hw):
    """Flat (h * W + w) position of each adaptive bin's maximum, (N, C, OH, OW) int64: the
    first maximum, or the last NaN of a bin holding NaN (PyTorch's)."""
    n, c, h, w = x.shape
    oh, ow = out_hw
    if x.dtype.kind == "V" or x.dtype.itemsize < 4:
        x = x.astype(float32)  # float16/bfloat16 compare exactly in float32
    idx = xp.zeros((n, c, oh, ow), dtype=np.int64)
    for i in range(oh):
        h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            win = x[:, :, h0:h1, w0:w1].reshape(n, c, (h1 - h0) * (w1 - w0))
            nan = xp.isnan(win)
            size = win.shape[-1]
            last_nan = size - 1 - xp.argmax(nan[..., ::-1], axis=-1)
            best = xp.where(nan.any(-1), last_nan, xp.argmax(win, axis=-1))
            bw = w1 - w0
            idx[:, :, i, j] = (h0 + best // bw) * w + w0 + best % bw
    return idx


class AdaptiveMaxPool2dFunction(Function):
    name = "adaptive_max_pool2d"

    def forward(self, x, out_hw):
        xp = get_array_module(x)
        n, c = x.shape[:2]
        # sizes spelled out: NumPy cannot infer -1 beside a 0 (an empty batch)
        idx = _adaptive_argmax(xp, x, out_hw).reshape(n, c, out_hw[0] * out_hw[1])
        self.idx, self.hw, self.in_shape = idx, x.shape[2:], (n, c, x.shape[2] * x.shape[3])
        out = xp.take_along_axis(x.reshape(self.in_shape), idx, axis=2)
        return out.reshape((n, c) + tuple(out_hw)), idx.reshape((n, c) + tuple(out_hw))

    def backward(self, gy, gidx=None):
        if gy is None:
            return None
        n, c = gy.shape[:2]
        g = GatherBackward.apply(gy.reshape((n, c, self.idx.shape[2])),
                                 Tensor._make(self.idx, False, None, 0),
                                 axis=2, shape=self.in_shape)
        return g.reshape(self.in_shape[:2] + self.hw)


def adaptive_max_pool2d(x: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a fixed output size, with PyTorch's bins (as :func:`adaptive_avg_pool2d`:
    rows ``floor(i*H/OH)`` to ``ceil((i+1)*H/OH) - 1``); the gradient goes to each bin's
    (first) maximum. Floating input only, as PyTorch's.

    Args:
        x: ``(N, C, H, W)``.
        output_size: an int, or an ``(OH, OW)`` pair whose entries may be None (keep that size).
        return_indices: also return the int64 position of each maximum in its ``H*W`` plane.
    """
    if x.ndim == 3:  # unbatched (C, H, W), as PyTorch
        out = adaptive_max_pool2d(x.unsqueeze(0), output_size, return_indices)
        return tuple(o.squeeze(0) for o in out) if return_indices else out.squeeze(0)
    out_hw = _adaptive_output_size("adaptive_max_pool2d", x, output_size)
    out, idx = AdaptiveMaxPool2dFunction.apply(x, out_hw=out_hw)
    return (out, idx) if return_indices else out
