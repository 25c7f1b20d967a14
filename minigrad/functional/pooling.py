"""Max and average pooling over ``(N, C, *spatial)`` input with PyTorch's full arguments
(dilation, ceil_mode, return_indices, count_include_pad, divisor_override): ``max_pool1d/2d``,
``avg_pool1d/2d`` and what ``pooling_nd``'s ``max_pool3d``/``avg_pool3d`` run (the 2-D and
1-D kernels composed: one geometry and one set of checks for the family); and
``adaptive_avg_pool2d``/``adaptive_max_pool2d``.

Ops loop over the kernel offsets only: offset ``o`` of all windows at once is one strided slice
of the padded input, so each step is a vectorised op over ``(N, C, *out)`` and no window copy
is made (cheaper than im2col + argmax over a tiny trailing axis). ``ceil_mode``'s extra last
window is extra padding after the input (PyTorch clips that window: the padding never wins a
maximum, and the average divides by the clipped size). Max pooling routes gradients with
flat-index scatters instead of masks: exact for inf/NaN, and NumPy's masked selects are slow.
Each forward has a dedicated backward op whose own backward is the forward again (the two are
adjoint), so double backward works.
Averages accumulate in float32 for float16/bfloat16 and round once (invariant 3); int64 input
is averaged as PyTorch's CPU kernels do: an exact int64 sum, divided with C's integer division
(truncated toward zero).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .._backend import casts, get_array_module, kernels, pool_cpu
from .._backend.dtypes import float32, int64, is_floating, is_low_precision
from ..core.function import Function
from ..core.tensor import Tensor
from ._utils import check_floating, op_error, to_dtype
from .shape import GatherBackward

__all__ = ["adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d",
           "max_pool1d", "max_pool2d"]


def _acc_dtype(dtype):
    return float32 if is_low_precision(dtype) else dtype


# ----------------------------------------------------------------------------- geometry
class _Window:
    """The checked geometry of one pooling call, per spatial axis, with what every kernel
    derives from it computed once (geometries are cached per call signature: immutable)."""

    __slots__ = ("kernel", "stride", "dilation", "pads", "out", "size", "padded", "volume",
                 "steps", "window_steps", "has_pad", "inside", "offsets", "phases", "planar")

    def __init__(self, kernel, stride, dilation, pads, out, size):
        self.kernel, self.stride, self.dilation = kernel, stride, dilation
        self.pads, self.out, self.size = pads, out, size  # pads: (before, after) per axis;
        # after > before where ceil_mode adds a last window
        self.padded = tuple(i + a + b for i, (a, b) in zip(size, pads))
        self.volume = math.prod(self.padded)
        # the flat step of each padded axis, and of each axis of the window grid
        self.steps = tuple(math.prod(self.padded[a + 1:]) for a in range(len(size)))
        self.window_steps = tuple(s * step for s, step in zip(stride, self.steps))
        self.has_pad = any(a or b for a, b in pads)  # the common pool has none: no copy
        whole = (slice(None), slice(None))
        # the input's part of the padded array
        self.inside = whole + tuple(slice(a, a + i) for i, (a, _) in zip(size, pads))
        # per kernel offset (numbered in C order), the slice of the padded input holding that
        # offset of every window
        axes = [[slice(o * d, o * d + s * (m - 1) + 1, s) for o in range(k)]
                for k, d, s, m in zip(kernel, dilation, stride, out)]
        self.offsets = tuple(whole + sl for sl in itertools.product(*axes))
        # Windows whose output positions differ by q = ceil(span / stride) along every axis
        # never overlap: the slices of the output grid that hold such windows (max pooling's
        # gradient scatters each without collisions), one slice when no windows overlap.
        qs = [-(-(d * (k - 1) + 1) // s) for k, s, d in zip(kernel, stride, dilation)]
        self.phases = tuple(whole + tuple(slice(a, None, q) for a, q in zip(first, qs))
                            for first in itertools.product(*[range(min(q, o)) for q, o in
                                                             zip(qs, out)]))
        # (Hp, Wp, OH, OW, kh, kw, sh, sw, dh, dw) of the 2-D window the CPU kernels take (a
        # 1-D pool is a 2-D one of height 1); None for 3 axes, which never come here
        unit = (1,) * (2 - len(size))
        self.planar = (None if len(size) > 2 else
                       tuple(unit + self.padded) + tuple(unit + out) + tuple(unit + kernel)
                       + tuple(unit + stride) + tuple(unit + dilation))


_LAYOUTS = {1: ("(N, C, L)", "(C, L)"), 2: ("(N, C, H, W)", "(C, H, W)"),
            3: ("(N, C, D, H, W)", "(C, D, H, W)")}


def _ntuple(op: str, what: str, v, n: int) -> tuple:
    """``v`` (an int, or a sequence of ``n`` ints or of one) as an ``n``-tuple of ints."""
    if type(v) is int:
        return (v,) * n
    t = tuple(v) if isinstance(v, (tuple, list, np.ndarray)) else (v,)
    if len(t) == 1:
        t *= n
    if len(t) != n or not all(hasattr(i, "__index__") and not isinstance(i, bool) for i in t):
        raise op_error(op, f"{what} must be an int or a tuple of {n} ints", **{what: v})
    return tuple(int(i) for i in t)


def _batched(op: str, x: Tensor, n: int):
    """``x`` as ``(N, C, *spatial)`` and whether it came unbatched ``(C, *spatial)``."""
    if x.ndim == n + 2:
        return x, False
    if x.ndim == n + 1:
        return x.unsqueeze(0), True
    batched, single = _LAYOUTS[n]
    raise op_error(op, f"expected input {batched} ({n + 2}-D), or {single} ({n + 1}-D) "
                   "unbatched; reshape the input or use the op of its dimensionality",
                   input=x.shape)


def _window(op, x, n, kernel_size, stride, padding, dilation, ceil_mode) -> _Window:
    """PyTorch's geometry of pooling ``x`` ``(N, C, *spatial)`` over its ``n`` trailing axes,
    with PyTorch's refusals (each a ValueError naming the op, the sizes and the fix)."""
    try:  # the same call again (every step of a training loop): a dict lookup
        return _cached_geometry(op, x.shape, n, kernel_size, stride, padding, dilation,
                                ceil_mode)
    except TypeError:  # a list argument (unhashable); a real TypeError is raised again here
        return _geometry(op, x.shape, n, kernel_size, stride, padding, dilation, ceil_mode)


def _geometry(op, shape, n, kernel_size, stride, padding, dilation, ceil_mode) -> _Window:
    kernel = _ntuple(op, "kernel_size", kernel_size, n)
    if stride is None or (isinstance(stride, (tuple, list)) and not stride):
        stride = kernel  # PyTorch's default (None or [])
    else:
        stride = _ntuple(op, "stride", stride, n)
    padding = _ntuple(op, "padding", padding, n)
    dilation = _ntuple(op, "dilation", dilation, n)
    if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise op_error(op, "kernel_size and stride must be >= 1, dilation >= 1 and padding "
                       ">= 0", kernel_size=kernel, stride=stride, padding=padding,
                       dilation=dilation)
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise op_error(op, "padding must be at most half the kernel size (PyTorch: 'pad "
                       "should be at most half of effective kernel size'); use padding <= "
                       "kernel_size // 2, or pad the input with F.pad first", input=shape,
                       kernel_size=kernel, padding=padding)
    if 0 in shape[1:]:
        raise op_error(op, "channel and spatial sizes must be positive (only the batch may be "
                       "empty, as in PyTorch); skip the call for an empty input, or pad it",
                       input=shape)
    out, pads = [], []
    for i, k, s, p, d in zip(shape[2:], kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        num = i + 2 * p - span
        o = (-(-num // s) if ceil_mode else num // s) + 1
        if ceil_mode and (o - 1) * s >= i + p:
            o -= 1  # PyTorch's: a last window starts in the input or its left padding
        out.append(o)
        pads.append((p, max(p, (o - 1) * s + span - i - p)))
    if min(out) < 1:
        raise op_error(op, f"output size {tuple(out)} is not positive: the (dilated) kernel is "
                       "larger than the padded input; use a smaller kernel_size or dilation, "
                       "or more padding", input=shape, kernel_size=kernel, padding=padding,
                       dilation=dilation)
    return _Window(kernel, stride, dilation, tuple(pads), tuple(out), tuple(shape[2:]))


_cached_geometry = functools.lru_cache(maxsize=512)(_geometry)


def _pad(x, geo: _Window, value):
    """``x`` with ``geo``'s padding around its spatial axes, filled with ``value``."""
    if not geo.has_pad:
        return x
    out = get_array_module(x).full(x.shape[:2] + geo.padded, value, dtype=x.dtype)
    out[geo.inside] = x
    return out


def _crop(acc, geo: _Window, dtype):
    """The input's part of the padded ``acc``, C-ordered, in ``dtype``."""
    return casts.to_dtype(get_array_module(acc).ascontiguousarray(acc[geo.inside]), dtype)


def _axis_grid(xp, geo: _Window, axis: int):
    """Padded coordinate of each window's first element along spatial ``axis``, shaped to
    broadcast against ``(N, C, *out)``."""
    shape = [1] * (len(geo.out) + 2)
    shape[2 + axis] = geo.out[axis]
    return (xp.arange(geo.out[axis], dtype=np.int64) * geo.stride[axis]).reshape(shape)


def _kernel_coord(idx, geo: _Window, axis: int):
    """The coordinate along ``axis`` of kernel offset number ``idx`` (int64)."""
    inner = math.prod(geo.kernel[axis + 1:])
    return (idx.astype(np.int64) // inner) % geo.kernel[axis]


# ----------------------------------------------------------------------------- max pooling
def _lowest(dtype):
    """The padding of a max pool: the dtype's lowest value (-inf for floats)."""
    # (the integer's minimum is built from its size: np.iinfo costs ~5 us a call)
    if dtype.kind == "i":
        return -(1 << (8 * dtype.itemsize - 1))
    return 0 if dtype.kind in "ub" else -np.inf


class MaxPool2dFunction(Function):
    """Max pooling over the trailing axes of ``(N, C, *spatial)`` input (``max_pool1d`` is a
    subclass under its own policy name; 3-D pools compose the two). With ``indices`` the
    output is ``(values, int64 flat position of each maximum in its input plane)``."""

    name = "max_pool2d"

    def forward(self, x, geo, indices=False):
        self.geo = geo
        best = self._pool_cpu(x, geo)
        if best is None:  # the NumPy twin (and the GPU). Comparisons and copies only: on the
            # CPU float16/bfloat16 are pooled as integer keys (NumPy's half-precision
            # comparisons convert element by element).
            best = kernels.selection(lambda v: self._pool(v, geo, indices), x)
        if indices:
            return best, _input_positions(self.idx, geo)
        return best

    def _pool_cpu(self, x, geo):
        """The pool through the CPU's C kernel (``pool_cpu``), or None where it does not run."""
        if geo.planar is None or not pool_cpu.scans(x):
            return None
        n, c = x.shape[:2]
        lowest = _lowest(x.dtype)
        found = pool_cpu.scan(_pad(x, geo, lowest), (n * c,) + geo.planar)
        if found is None:
            return None
        best, self.idx = found[0].reshape((n, c) + geo.out), found[1].reshape((n, c) + geo.out)
        if geo.has_pad and (best == lowest).any():
            self.idx = _skip_padding(self.idx, geo)
        return best

    def _pool(self, x, geo, indices):
        xp = get_array_module(x)
        lowest = _lowest(x.dtype)
        xpad = _pad(x, geo, lowest)
        # PyTorch's indices (and gradient) point at the last NaN of a window holding NaN,
        # which costs two more passes per offset. The GPU always takes them (a check would
        # read the device); the CPU where indices are returned, else only when a NaN reached
        # the output (one look at it, the pool's speed being LeNet's step time).
        floats = x.dtype.kind == "f"  # (integer keys hold no NaN)
        exact = floats and (indices or xp is not np)
        best, idx = _scan(xp, xpad, geo, exact)
        if floats and not exact and xp.isnan(best).any():
            best, idx = _scan(xp, xpad, geo, True)
        if geo.has_pad and (best == lowest).any():
            idx = _skip_padding(idx, geo)
        self.idx = idx
        return best

    def backward(self, gy, gidx=None):
        return MaxPool2dBackward.apply(gy, idx=self.idx, geo=self.geo)


def _scan(xp, xpad, geo: _Window, exact_nan: bool):
    """``(window maxima, kernel offset of each maximum)`` over the padded input: the first
    maximum wins, as in PyTorch, and with ``exact_nan`` a window's last NaN."""
    offsets = geo.offsets
    best = xpad[offsets[0]].copy()  # C-ordered, and updated in place below
    # The kernel offset of the window's maximum, small to keep memory low.
    idx = xp.zeros(best.shape, dtype=xp.int8 if math.prod(geo.kernel) < 128 else xp.int32)
    for k in range(1, len(offsets)):
        v = kernels.ufunc_operand(xpad[offsets[k]])
        upd = v > best  # strict: the first maximum wins
        if exact_nan:
            upd |= v != v
        idx += upd * (k - idx)  # branch-free select (masked copies are slow in NumPy)
        # propagates NaN; best second, so a tie keeps it (the sign of a first zero, as PyTorch)
        xp.maximum(v, best, out=best)
    return best, idx


class MaxPool1dFunction(MaxPool2dFunction):
    name = "max_pool1d"


def _skip_padding(idx, geo: _Window):
    """``idx`` with every window whose maximum lies in the padding moved to its first offset
    inside the input. The padding holds the dtype's lowest value, so it wins (by coming first)
    only where every input element of the window equals that value (-inf, an integer's
    minimum); PyTorch's loop starts at the first input element and keeps it then."""
    xp = get_array_module(idx)
    inside, first = True, 0
    for axis, (d, (lo, _), size) in enumerate(zip(geo.dilation, geo.pads, geo.size)):
        start = _axis_grid(xp, geo, axis)
        pos = start + _kernel_coord(idx, geo, axis) * d
        inside = inside & (pos >= lo) & (pos < lo + size)
        # the first offset along this axis that reaches the input: ceil((lo - start) / d)
        first = first + xp.maximum(0, -((start - lo) // d)) * math.prod(geo.kernel[axis + 1:])
    return xp.where(inside, idx, first).astype(idx.dtype)


def _input_positions(idx, geo: _Window):
    """The flat position, in its unpadded plane or volume, of each window's maximum: PyTorch's
    ``return_indices`` (int64)."""
    xp = get_array_module(idx)
    flat = 0
    for axis, (d, (lo, _), size) in enumerate(zip(geo.dilation, geo.pads, geo.size)):
        pos = _axis_grid(xp, geo, axis) - lo + _kernel_coord(idx, geo, axis) * d
        flat = flat * size + pos
    return xp.ascontiguousarray(xp.broadcast_to(flat, idx.shape), dtype=np.int64)


def _argmax_flat_index(idx, geo: _Window):
    """Flat index into the padded ``(N, C, *padded)`` input of every window's maximum."""
    xp = get_array_module(idx)
    n, c = idx.shape[:2]
    vol = geo.volume
    # int32 halves the traffic of the index math and the scatter wherever it can address.
    itype = xp.int32 if n * c * vol < 2 ** 31 else xp.int64
    kernel = geo.kernel
    if len(kernel) == 2 and geo.dilation == (1, 1):
        # The maximum's offset inside its window, i*Wp + j = k + (k // kw) * (Wp - kw) for
        # kernel offset k = i*kw + j (arithmetic: a table lookup by int8 index, or an int8
        # remainder, is several times slower in NumPy).
        lin = xp.multiply(idx // kernel[1], geo.padded[1] - kernel[1], dtype=itype)
        lin += idx
    else:  # the offset's coordinate along each axis, times its padded step
        lin = None
        for a, k in enumerate(kernel):
            inner = math.prod(kernel[a + 1:])
            coord = idx // inner if inner > 1 else idx
            if a:
                coord = coord % k
            term = xp.multiply(coord, geo.dilation[a] * geo.steps[a], dtype=itype)
            if lin is None:
                lin = term
            else:
                lin += term
    # + the window's origin: plane p, output position (r, q) start at p*vol + r*sh*Wp + q*sw.
    lin += kernels.index_grid(idx, idx.shape, (c * vol, vol) + geo.window_steps, itype)
    return lin


class MaxPool2dBackward(Function):
    """Route each output gradient to the input element that was the window's maximum."""

    name = "max_pool2d_backward"

    def forward(self, gy, idx, geo):
        xp = get_array_module(gy)
        self.idx, self.geo = idx, geo
        n, c = gy.shape[:2]
        acc_dtype = gy.dtype if len(geo.phases) == 1 else _acc_dtype(gy.dtype)
        acc = (None if geo.planar is None else
               pool_cpu.scatter(gy, idx, (n * c,) + geo.planar, acc_dtype, len(geo.phases) > 1))
        if acc is not None:
            return _crop(acc.reshape((n, c) + geo.padded), geo, gy.dtype)
        lin = _argmax_flat_index(idx, geo)
        # Windows whose output positions differ by ceil(span/s) along every axis (a phase)
        # are disjoint, so each phase is a collision-free scatter. With one phase (windows do
        # not overlap) every target is written once, and a plain store is twice as fast as a
        # scattered add; nothing is summed then, so float16/bfloat16 are stored as they are.
        phases = geo.phases
        acc = xp.zeros(n * c * geo.volume, dtype=acc_dtype)
        if len(phases) == 1:
            acc[lin] = gy
        else:
            for sl in phases:
                acc[lin[sl]] += gy[sl]
        return _crop(acc.reshape((n, c) + geo.padded), geo, gy.dtype)

    def backward(self, ggx):
        return MaxPool2dGather.apply(ggx, idx=self.idx, geo=self.geo)


class MaxPool2dGather(Function):
    """Pick, per window, the element at the saved argmax (the adjoint of the backward)."""

    name = "max_pool2d_gather"

    def forward(self, x, idx, geo):
        self.idx, self.geo = idx, geo
        return _pad(x, geo, 0).reshape(-1)[_argmax_flat_index(idx, geo)]

    def backward(self, gy):
        return MaxPool2dBackward.apply(gy, idx=self.idx, geo=self.geo)


# ----------------------------------------------------------------------------- average pooling
def _divisor(geo: _Window, count_include_pad: bool, divisor_override):
    """PyTorch's divisor of each window's sum: an int where every window shares it, else an
    int64 array of the output's spatial shape. A window is counted over the padded input
    (``count_include_pad``) or the input alone, clipped either way where ceil_mode's last
    window runs past the padding."""
    if divisor_override is not None:
        return int(divisor_override)
    clipped = any(b > a for a, b in geo.pads)
    if not clipped and (count_include_pad or not geo.has_pad):
        return math.prod(geo.kernel)
    div = np.ones(geo.out, dtype=np.int64)
    for axis, (k, s, (p, _), size, o) in enumerate(zip(geo.kernel, geo.stride, geo.pads,
                                                       geo.size, geo.out)):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, size + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, size)
        shape = [1] * len(geo.out)
        shape[axis] = o
        div = div * (end - start).reshape(shape)
    return div


def _operand(like, divisor):
    """``divisor`` as an operand of ``like``'s arrays: an int, or an array of its dtype."""
    if isinstance(divisor, int):
        return divisor
    return get_array_module(like).asarray(divisor, dtype=like.dtype)


def _divide(acc, divisor):
    """``acc / divisor`` (in place for floats); integers as PyTorch's CPU kernels divide them,
    with C's integer division (truncated toward zero: -7 / 2 = -3)."""
    if type(divisor) is int and divisor == 1:  # a plain sum (the 3-D pools' first pass)
        return acc
    divisor = _operand(acc, divisor)
    if acc.dtype.kind in "iu":
        xp = get_array_module(acc)
        q = xp.abs(acc) // abs(divisor)
        return xp.where((acc < 0) != (divisor < 0), -q, q)
    acc /= divisor
    return acc


def _avg_forward(x, geo: _Window, divisor):
    xp = get_array_module(x)
    acc_dtype = _acc_dtype(x.dtype)
    xpad = _pad(casts.to_dtype(x, acc_dtype), geo, 0)  # widened once
    acc = xp.zeros(x.shape[:2] + geo.out, dtype=acc_dtype)
    for sl in geo.offsets:
        acc += xpad[sl]
    return casts.to_dtype(_divide(acc, divisor), x.dtype)


def _avg_backward(gy, geo: _Window, divisor):
    xp = get_array_module(gy)
    acc = xp.zeros(gy.shape[:2] + geo.padded, dtype=_acc_dtype(gy.dtype))
    g = casts.to_dtype(gy, acc.dtype) / _operand(acc, divisor)
    for sl in geo.offsets:
        acc[sl] += g
    return _crop(acc, geo, gy.dtype)


class AvgPool2dFunction(Function):
    """Average pooling over the trailing axes of ``(N, C, *spatial)`` input, each window's sum
    divided by ``divisor`` (an int, or an array broadcasting against the output: see
    :func:`_divisor`); ``avg_pool1d`` is a subclass under its own policy name, 3-D pools
    compose the two."""

    name = "avg_pool2d"

    def forward(self, x, geo, divisor):
        self.geo, self.divisor = geo, divisor
        return _avg_forward(x, geo, divisor)

    def backward(self, gy):
        return AvgPool2dBackward.apply(gy, geo=self.geo, divisor=self.divisor, op=type(self))


class AvgPool1dFunction(AvgPool2dFunction):
    name = "avg_pool1d"


class AvgPool2dBackward(Function):
    name = "avg_pool2d_backward"

    def forward(self, gy, geo, divisor, op):
        self.geo, self.divisor, self.op = geo, divisor, op
        return _avg_backward(gy, geo, divisor)

    def backward(self, ggx):
        return self.op.apply(ggx, geo=self.geo, divisor=self.divisor)


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
        geo = _Window((kh, kw), (kh, kw), (1, 1), ((0, 0), (0, 0)), tuple(out_hw),
                      tuple(in_hw))
        return _avg_backward(x, geo, kh * kw) if transpose else _avg_forward(x, geo, kh * kw)
    xp = get_array_module(x)
    acc = _acc_dtype(x.dtype)
    if not transpose:  # each output reads only its bin: an inf or NaN reaches only its bins
        y = _bin_average(_bin_average(to_dtype(x, acc), 3, out_hw[1]), 2, out_hw[0])
        return to_dtype(y, x.dtype)
    # The adjoint (backward) spreads each output gradient over its bin, as one matrix product.
    a = _bin_matrix(xp, in_hw[0], out_hw[0], acc).T
    b = _bin_matrix(xp, in_hw[1], out_hw[1], acc).T
    return to_dtype(_separable(to_dtype(x, acc), a, b), x.dtype)


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


# ----------------------------------------------------------------------------- 3-D pools
# A 3-D window is a depth window of (H, W) windows, so the 3-D pools compose the 2-D and 1-D
# kernels (and run under their policy rows): the maximum of a box is the maximum over its
# depth window of the (H, W) windows' maxima, a sum the sum of sums. The first maximum in
# (d, h, w) order, the last NaN and the first element inside the input (PyTorch's index rules)
# compose the same way.
def _part(geo: _Window, axes) -> _Window:
    """``geo`` restricted to some of its spatial axes."""
    return _Window(*[tuple(v[a] for a in axes) for v in (
        geo.kernel, geo.stride, geo.dilation, geo.pads, geo.out, geo.size)])


def _max_pool3d(x: Tensor, geo: _Window, indices: bool):
    n, c, d, h, w = x.shape
    od, oh, ow = geo.out
    planes = MaxPool2dFunction.apply(x.reshape(n, c * d, h, w), geo=_part(geo, (1, 2)),
                                     indices=indices)
    y, plane_idx = planes if indices else (planes, None)
    y = y.reshape(n, c, d, oh * ow).transpose(0, 1, 3, 2).reshape(n, c * oh * ow, d)
    depths = MaxPool1dFunction.apply(y, geo=_part(geo, (0,)), indices=indices)
    y, depth = depths if indices else (depths, None)
    y = y.reshape(n, c, oh, ow, od).transpose(0, 1, 4, 2, 3)
    if not indices:
        return y
    # the volume position: the maximum's depth, and its position in that depth's plane
    xp = get_array_module(depth._data)
    depth = depth._data.reshape(n, c, oh * ow, od).transpose(0, 1, 3, 2)
    plane = xp.take_along_axis(plane_idx._data.reshape(n, c, d, oh * ow), depth, axis=2)
    idx = (depth * (h * w) + plane).reshape(n, c, od, oh, ow)
    return y, Tensor._make(xp.ascontiguousarray(idx), False, None, 0)


def _avg_pool3d(x: Tensor, geo: _Window, divisor):
    n, c, d, h, w = x.shape
    od, oh, ow = geo.out
    low = is_low_precision(x.dtype)
    xs = x.astype(float32) if low else x  # rounded once, at the end (invariant 3)
    # the depth windows' sums, then the (H, W) windows' sums over the whole window's divisor
    y = xs.transpose(0, 1, 3, 4, 2).reshape(n, c * h * w, d)
    y = AvgPool1dFunction.apply(y, geo=_part(geo, (0,)), divisor=1)
    y = y.reshape(n, c, h, w, od).transpose(0, 1, 4, 2, 3).reshape(n, c * od, h, w)
    if not isinstance(divisor, int):
        divisor = np.tile(divisor, (c, 1, 1))  # (od, oh, ow) per channel
    y = AvgPool2dFunction.apply(y, geo=_part(geo, (1, 2)), divisor=divisor)
    y = y.reshape(n, c, od, oh, ow)
    return y.astype(x.dtype) if low else y


_MAX_POOLS = (MaxPool1dFunction.apply, MaxPool2dFunction.apply, _max_pool3d)
_AVG_POOLS = (AvgPool1dFunction.apply, AvgPool2dFunction.apply, _avg_pool3d)


# ----------------------------------------------------------------------------- public API
def _check_max_dtype(op: str, x: Tensor, return_indices: bool) -> None:
    """PyTorch's CPU max pools take integers, not bool (max_pool2d's bool is a documented
    deviation), and ``max_pool1d`` integers only with ``return_indices`` (its values-only
    kernel is floating-only)."""
    kind = x.dtype.kind
    if kind == "b" and op != "max_pool2d":
        raise op_error(op, "bool input is not supported (as in PyTorch); cast it first, e.g. "
                       "x.astype('float32')", shape=x.shape, dtype=x.dtype)
    if kind in "iu" and op == "max_pool1d" and not return_indices:
        raise op_error(op, "expects a floating tensor (PyTorch's max_pool1d takes integers "
                       "only with return_indices=True); cast it first, e.g. "
                       "x.astype('float32')", shape=x.shape, dtype=x.dtype)


def _max_pool(op, x, n, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """The max pool ``op`` of ``x`` over its ``n`` trailing axes (1, 2 or 3)."""
    x, unbatched = _batched(op, x, n)
    _check_max_dtype(op, x, return_indices)
    geo = _window(op, x, n, kernel_size, stride, padding, dilation, ceil_mode)
    out = _MAX_POOLS[n - 1](x, geo=geo, indices=bool(return_indices))
    if unbatched:
        return tuple(o.squeeze(0) for o in out) if return_indices else out.squeeze(0)
    return out


def _avg_pool(op, x, n, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    """The average pool ``op`` of ``x`` over its ``n`` trailing axes (1, 2 or 3)."""
    x, unbatched = _batched(op, x, n)
    if not is_floating(x.dtype) and x.dtype != int64:
        raise op_error(op, "expects a floating tensor (or int64, which PyTorch's CPU kernels "
                       "average with the mean truncated toward zero); cast it first, e.g. "
                       "x.astype('float32')", shape=x.shape, dtype=x.dtype)
    if divisor_override is not None and (
            not hasattr(divisor_override, "__index__") or isinstance(divisor_override, bool)
            or divisor_override == 0):
        raise op_error(op, "divisor_override must be a non-zero int, or None to divide by the "
                       "window size", divisor_override=divisor_override)
    geo = _window(op, x, n, kernel_size, stride, padding, 1, ceil_mode)
    if n == 3 and any(k > i for k, i in zip(geo.kernel, geo.size)):
        # PyTorch's avg_pool3d alone refuses this (its 1-D/2-D pools compute it)
        raise op_error(op, "the kernel must fit in the unpadded input (PyTorch's avg_pool3d "
                       "refuses a larger one, padding and ceil_mode notwithstanding); use a "
                       "smaller kernel_size", input=x.shape, kernel_size=geo.kernel)
    y = _AVG_POOLS[n - 1](x, geo=geo, divisor=_divisor(geo, count_include_pad,
                                                       divisor_override))
    return y.squeeze(0) if unbatched else y


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over sliding windows of ``(N, C, L)`` (or unbatched ``(C, L)``) input; the gradient
    goes to the (first) maximum of each window. Floating input, as PyTorch's; integers too
    with ``return_indices`` (PyTorch's rule).

    Args:
        kernel_size, stride, padding, dilation: ints (or 1-tuples); stride defaults to
            ``kernel_size``; padding is implicit ``-inf`` on both ends, at most half the
            kernel; dilation spaces the window's elements.
        ceil_mode: round the output size up (a last, clipped window), as PyTorch.
        return_indices: also return the int64 position of each maximum in its ``L`` row
            (what ``max_unpool1d`` takes).

    Returns:
        ``(N, C, OL)`` with ``OL = (L + 2*padding - dilation*(kernel_size-1) - 1) // stride
        + 1`` (rounded up with ``ceil_mode``), or ``(values, indices)``.
    """
    return _max_pool("max_pool1d", input, 1, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over sliding windows; the gradient goes to the (first) maximum of each window.

    Args:
        input: ``(N, C, H, W)`` or unbatched ``(C, H, W)``; floating or integer (bool too, a
            documented deviation: PyTorch refuses it).
        kernel_size: an int or an ``(h, w)`` pair.
        stride: defaults to ``kernel_size``.
        padding: implicit ``-inf`` padding on both sides (at most half the kernel).
        dilation: spacing between a window's elements.
        ceil_mode: round the output size up (a last, clipped window), as PyTorch.
        return_indices: also return the int64 flat position of each maximum in its ``H*W``
            plane (what ``max_unpool2d`` takes).

    Returns:
        ``(N, C, OH, OW)`` with ``OH = (H + 2*ph - dh*(kh-1) - 1) // sh + 1`` (rounded up with
        ``ceil_mode``), or ``(values, indices)``.
    """
    return _max_pool("max_pool2d", input, 2, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of ``(N, C, L)`` (or unbatched ``(C, L)``) input, floating or
    int64 (PyTorch's integer mean: truncated toward zero).

    Args:
        kernel_size, stride, padding: ints (or 1-tuples); stride defaults to ``kernel_size``;
            padding is implicit zeros on both ends, at most half the kernel.
        ceil_mode: round the output size up (a last window, divided by its clipped size).
        count_include_pad: the padded zeros count in the mean (PyTorch's default).
    """
    return _avg_pool("avg_pool1d", input, 1, kernel_size, stride, padding,
                     ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override=None) -> Tensor:
    """Mean over sliding windows.

    Args:
        input: ``(N, C, H, W)`` or unbatched ``(C, H, W)``; floating or int64 (PyTorch's
            integer mean: the exact sum divided with truncation toward zero).
        kernel_size: an int or an ``(h, w)`` pair.
        stride: defaults to ``kernel_size``.
        padding: implicit zero padding on both sides (at most half the kernel).
        ceil_mode: round the output size up, as PyTorch (a last window, divided by its size
            clipped to the padded input).
        count_include_pad: the padded zeros count in the mean (PyTorch's default); False
            divides by the number of input elements in the window (MegEngine's default
            ``mode="average_count_exclude_padding"``).
        divisor_override: a non-zero int to divide every window's sum by instead.

    Returns:
        ``(N, C, OH, OW)``, accumulated in float32 for float16/bfloat16 input.
    """
    return _avg_pool("avg_pool2d", input, 2, kernel_size, stride, padding,
                     ceil_mode, count_include_pad, divisor_override)


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


# ----------------------------------------------------------------------------- adaptive max
def _adaptive_argmax(xp, x, out_hw):
    """Flat (h * W + w) position of each adaptive bin's maximum, (N, C, OH, OW) int64: the
    first maximum, or the last NaN of a bin holding NaN (PyTorch's)."""
    n, c, h, w = x.shape
    oh, ow = out_hw
    if x.dtype.kind == "V" or x.dtype.itemsize < 4:
        x = to_dtype(x, float32)  # float16/bfloat16 compare exactly in float32
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
