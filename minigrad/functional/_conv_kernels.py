"""Array kernels of the convolutions: im2col + ONE GEMM, in two column layouts.

Every convolution here is the 2-D GEMM ``weight (O, C*kh*kw) @ cols (C*kh*kw, M)`` (batched
over groups only): the shape cuBLAS runs on Tensor Cores for fp16/bf16, and one large BLAS call
on the CPU. The data gradient is the transposed GEMM followed by col2im; the weight gradient is
``gy (O, M) @ cols.T``. What differs is how the M columns are laid out, and each layout wins in
its own regime (both measured on LeNet-5, see benchmarks/cpu_training.py):

- ``_FullWidth`` (stride 1 only): M = N*OH*Wp. Output rows are computed over the whole padded
  width Wp and the ``Wp - OW`` columns past the output are thrown away. In exchange, every
  (channel, kernel offset, image) block of the columns is ONE contiguous run of OH*Wp input
  elements, so im2col and col2im move long runs, and outputs and input gradients come out
  NCHW-ordered with no transpose. Used when the wasted GEMM work ``Wp/OW - 1`` is small.
- ``_BatchInner``: M = OH*OW*N, images innermost ("CHWN"), so each kernel-offset slice is a run
  of OW*N elements. No wasted work, but NCHW <-> CHWN transposes on the way in and out. Used for
  strided convolutions and small feature maps.

Low precision (invariant 4): GEMMs go through ``_backend.kernels.matmul`` (fp32 accumulation,
rounded output); col2im sums overlapping windows in fp32 and rounds once. cuDNN, when the
backend has it, takes fp16/bf16/fp32 convolutions on the GPU before any of this runs (each entry
point asks ``cudnn_conv`` first and falls through on None).
"""

from __future__ import annotations

from .._backend import casts, col2im_cpu, cudnn_conv, get_array_module, kernels
from .._backend.dtypes import float32, is_low_precision, widest_float

__all__ = ["conv_forward", "conv_data_grad", "conv_weight_grad", "conv_bias_grad"]

# Wasted GEMM work (Wp/OW - 1) up to which the full-width layout beats the batch-inner one.
# LeNet-5 on 2 CPU cores: 32/28 (14% waste) is faster full-width, 14/10 (40%) batch-inner.
_FULL_WIDTH_MAX_WASTE = 0.25


class _Geometry:
    """Shapes of one convolution: input (N, C, H, W), weight (O, C/g, kh, kw), output OHxOW."""

    def __init__(self, x_shape, w_shape, out_hw, stride, padding, dilation, groups):
        self.n, self.c, self.h, self.w = x_shape
        self.o, self.cg, self.kh, self.kw = w_shape
        self.oh, self.ow = out_hw
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.hp, self.wp = self.h + 2 * padding[0], self.w + 2 * padding[1]
        self.k = self.cg * self.kh * self.kw

    def layout(self):
        full_width = (self.stride == (1, 1)
                      and self.wp <= (1 + _FULL_WIDTH_MAX_WASTE) * self.ow)
        return (_FullWidth if full_width else _BatchInner)(self)


def _copy_add_bias(view, b):
    """A C-ordered copy of an NCHW view (of a buffer the caller owns), plus a per-channel bias.

    The bias is added after the copy, to contiguous rows: NumPy adds a broadcast bias to the
    short strided rows of a transposing view at half the speed of a plain copy. A 16-bit bias
    meeting a float32 accumulator is converted first, once (NumPy's mixed-dtype loop would
    convert it for every row: 4x the conv's time on LeNet's conv1).
    """
    xp = get_array_module(view)
    y = xp.ascontiguousarray(view)
    if b is not None and b.dtype != y.dtype:
        b = casts.astype(b, y.dtype)
    if b is not None:
        n, c, h, w = y.shape
        y.reshape(n, c, h * w)[...] += b.reshape(c, 1)
    return y


def _flat_view(xp, flat, shape, strides, offset=0):
    """A strided view of a 1-D array (strides in elements)."""
    size = flat.itemsize
    return xp.lib.stride_tricks.as_strided(flat[offset:], shape, [s * size for s in strides])


class _FullWidth:
    """Columns (C, kh, kw, N, OH*Wp): each block a contiguous run of the padded NCHW input."""

    def __init__(self, g: _Geometry):
        self.g = g
        # Rows are read whole, so the last kernel column reads dw*(kw-1) elements past the last
        # image plane: the padded buffer carries that many trailing zeros.
        self.tail = g.dilation[1] * (g.kw - 1)
        self.plane = g.hp * g.wp
        self.m = g.n * g.oh * g.wp

    def _padded_flat(self, x):
        g, xp = self.g, get_array_module(x)
        buf = xp.zeros(g.n * g.c * self.plane + self.tail, dtype=x.dtype)
        ph, pw = g.padding
        buf[:g.n * g.c * self.plane].reshape(g.n, g.c, g.hp, g.wp)[
            :, :, ph:ph + g.h, pw:pw + g.w] = x
        return buf

    def _blocks(self, flat, i, j):
        """The (C, N, OH*Wp) view of a padded flat buffer at kernel offset (i, j)."""
        g = self.g
        offset = i * g.dilation[0] * g.wp + j * g.dilation[1]
        return _flat_view(get_array_module(flat), flat, (g.c, g.n, g.oh * g.wp),
                          (self.plane, g.c * self.plane, 1), offset)

    def cols(self, x):
        g, xp = self.g, get_array_module(x)
        buf = self._padded_flat(x)
        view = _flat_view(xp, buf, (g.c, g.kh, g.kw, g.n, g.oh * g.wp),
                          (self.plane, g.dilation[0] * g.wp, g.dilation[1], g.c * self.plane, 1))
        return view.reshape(g.groups, g.k, self.m)  # the one im2col copy

    def to_nchw(self, y, b):
        g = self.g
        y = y.reshape(g.o, g.n, g.oh, g.wp)[:, :, :, :g.ow]
        return _copy_add_bias(y.transpose(1, 0, 2, 3), b)

    def gy_matrix(self, gy):
        # Zeros in the thrown-away columns make them contribute nothing to either gradient
        # (but 0 * inf: a non-finite weight or input may turn an inf gradient entry into NaN).
        g, xp = self.g, get_array_module(gy)
        out = xp.empty((g.o, g.n, g.oh, g.wp), dtype=gy.dtype)
        out[:, :, :, :g.ow] = gy.transpose(1, 0, 2, 3)
        out[:, :, :, g.ow:] = 0
        return out.reshape(g.groups, g.o // g.groups, self.m)

    def col2im(self, dcols, acc_dtype):
        g, xp = self.g, get_array_module(dcols)
        dcols = dcols.reshape(g.c, g.kh, g.kw, g.n, g.oh * g.wp)
        acc = xp.zeros(g.n * g.c * self.plane + self.tail, dtype=acc_dtype)
        with kernels.ufunc_rows(g.oh * g.wp):  # each block is one run of OH*Wp elements
            for i in range(g.kh):
                for j in range(g.kw):
                    self._blocks(acc, i, j)[...] += dcols[:, i, j]
        ph, pw = g.padding
        acc = acc[:g.n * g.c * self.plane].reshape(g.n, g.c, g.hp, g.wp)
        return acc[:, :, ph:ph + g.h, pw:pw + g.w]


class _BatchInner:
    """Columns (C, kh, kw, OH, OW, N) of the zero-padded input transposed to CHWN."""

    def __init__(self, g: _Geometry):
        self.g = g
        self.m = g.oh * g.ow * g.n

    def _window_view(self, chwn):
        """(C, kh, kw, OH, OW, N) strided view of a padded CHWN array (strides of kernel
        offsets are dilations, of output positions strides)."""
        g, xp = self.g, get_array_module(chwn)
        s_c, s_h, s_w, s_n = chwn.strides
        (sh, sw), (dh, dw) = g.stride, g.dilation
        return xp.lib.stride_tricks.as_strided(
            chwn, (g.c, g.kh, g.kw, g.oh, g.ow, g.n),
            (s_c, s_h * dh, s_w * dw, s_h * sh, s_w * sw, s_n))

    def cols(self, x):
        g, xp = self.g, get_array_module(x)
        ph, pw = g.padding
        chwn = xp.zeros((g.c, g.hp, g.wp, g.n), dtype=x.dtype)
        chwn[:, ph:ph + g.h, pw:pw + g.w] = x.transpose(1, 2, 3, 0)
        return self._window_view(chwn).reshape(g.groups, g.k, self.m)  # the one im2col copy

    def to_nchw(self, y, b):
        g = self.g
        # Explicit sizes, never -1: NumPy cannot infer -1 beside a 0 (an empty batch).
        return _copy_add_bias(kernels.transposed(y.reshape(g.o * g.oh * g.ow, g.n)).reshape(
            g.n, g.o, g.oh, g.ow), b)

    def gy_matrix(self, gy):
        g = self.g
        return gy.transpose(1, 2, 3, 0).reshape(g.groups, g.o // g.groups, self.m)

    def col2im(self, dcols, acc_dtype):
        g, xp = self.g, get_array_module(dcols)
        if dcols.dtype == acc_dtype:  # the C kernel: the same sums, row by row (col2im_cpu)
            gx = col2im_cpu.col2im(dcols, (g.n, g.c, g.h, g.w, g.kh, g.kw, g.oh, g.ow)
                                   + g.stride + g.padding + g.dilation)
            if gx is not None:
                return gx
        dcols = dcols.reshape(g.c, g.kh, g.kw, g.oh, g.ow, g.n)
        acc = xp.zeros((g.c, g.hp, g.wp, g.n), dtype=acc_dtype)
        windows = self._window_view(acc)  # adding through it is safe: one offset at a time
        # Window rows are runs of OW*N elements at stride 1 (else of N).
        with kernels.ufunc_rows(g.n * (g.ow if g.stride[1] == 1 else 1)):
            for i in range(g.kh):
                for j in range(g.kw):
                    windows[:, i, j] += dcols[:, i, j]
        ph, pw = g.padding
        # Crop (a fast copy of long runs when padded), then transpose CHWN -> NCHW.
        chwn = xp.ascontiguousarray(acc[:, ph:ph + g.h, pw:pw + g.w])
        return kernels.transposed(chwn.reshape(g.c * g.h * g.w, g.n)).reshape(
            g.n, g.c, g.h, g.w)


# ----------------------------------------------------------------------------- entry points
def _lowp_operands(a, b, upcast_a=True, shared=None):
    """Upcast fp16/bf16 operands early where ``kernels.matmul`` would upcast them anyway.

    On the CPU ``kernels.matmul`` emulates Tensor Cores by converting its operands to fp32.
    Converting *before* im2col is numerically identical and converts kh*kw times fewer elements
    (the conversion otherwise dominates a LeNet conv). On the GPU, and for bfloat16 on a CPU
    with AVX512_BF16 (``bf16_cpu_gemm``), the operands stay narrow: the GEMM takes them as
    they are, and im2col moves half the bytes. ``upcast_a=False`` leaves ``a`` alone when it
    is not read again. The output gradient, the ``a`` of the data gradient and the ``b`` of the
    weight gradient, is converted once per backward (``shared``, see ``_gy_matrix``). Returns the
    operands and the output dtype.
    """
    out_dtype = a.dtype if a.dtype == b.dtype else widest_float((a.dtype, b.dtype))
    if is_low_precision(out_dtype) and kernels.emulates_low_precision(b):
        return ((_widened(a, shared) if upcast_a else a), _widened(b, shared), out_dtype)
    return a, b, out_dtype


def _widened(a, shared):
    """``a`` in float32, converted once per ``shared`` dict (which holds ``a``, so its id
    stays its own while the entry lives)."""
    if shared is None:
        return casts.to_dtype(a, float32)
    hit = shared.get(id(a))
    if hit is None:
        hit = shared[id(a)] = (a, casts.to_dtype(a, float32))
    return hit[1]


def _gemm(a, b, groups):
    # One 2-D GEMM when ungrouped (the Tensor Core path for fp16), one batched GEMM otherwise.
    # The CPU's bfloat16 product (bf16_cpu_gemm) comes back as its float32 accumulator, as the
    # products of operands converted early do: the bias, col2im and one rounding follow.
    return (kernels.matmul_accumulator(a[0], b[0])[None] if groups == 1
            else kernels.matmul_accumulator(a, b))


def _add_bias(y, b):
    """Add a per-channel bias to an NCHW result of the cuDNN path (in place, y's dtype)."""
    if b is not None:
        y += b.reshape(1, -1, 1, 1).astype(y.dtype, copy=False)
    return y


def conv_forward(x, w, b, out_hw, stride, padding, dilation, groups, keep_cols=False):
    """``conv2d`` on arrays. Returns ``(y, cols)``; cols is the im2col matrix when
    ``keep_cols`` (the weight gradient reuses it) and the path built one, else None."""
    y = cudnn_conv.forward(x, w, stride, padding, dilation, groups)
    if y is not None:
        return _add_bias(y, b), None
    x, w, out_dtype = _lowp_operands(x, w)
    geo = _Geometry(x.shape, w.shape, out_hw, stride, padding, dilation, groups)
    layout = geo.layout()
    cols = layout.cols(x)
    y = layout.to_nchw(_gemm(w.reshape(groups, geo.o // groups, geo.k), cols, groups), b)
    # The CPU keeps the float32 columns of a float16/bfloat16 conv too (twice the bytes of
    # float16 columns, within the same byte limit): the input is converted once, in forward,
    # and the weight gradient neither converts nor copies it again (as in float32). bfloat16
    # columns stay bfloat16 where bf16_cpu_gemm multiplies them.
    keep = (keep_cols and cols.nbytes <= kernels.im2col_keep_bytes(cols)
            and (cols.dtype == out_dtype or kernels.emulates_low_precision(cols)))
    return casts.to_dtype(y, out_dtype), (cols if keep else None)


def _gy_matrix(layout, gy, shared):
    """``layout.gy_matrix(gy)``, built once when the data and weight gradients share ``shared``
    (a dict that lives for one backward call)."""
    if shared is None:
        return layout.gy_matrix(gy)
    key = (type(layout), gy.dtype)
    if key not in shared:
        shared[key] = layout.gy_matrix(gy)
    return shared[key]


def conv_data_grad(gy, w, b, in_hw, stride, padding, dilation, groups, shared=None):
    """Transposed convolution (the data gradient of conv2d): GEMM to columns, then col2im.
    ``shared``: see ``_gy_matrix``."""
    gx = cudnn_conv.data_grad(gy, w, in_hw, stride, padding, dilation, groups)
    if gx is not None:
        return _add_bias(gx, b)
    gy, w, out_dtype = _lowp_operands(gy, w, shared=shared)
    n, o = gy.shape[:2]
    cg = w.shape[1]
    geo = _Geometry((n, cg * groups) + tuple(in_hw), w.shape, gy.shape[2:], stride, padding,
                    dilation, groups)
    layout = geo.layout()
    w_t = w.reshape(groups, o // groups, geo.k).transpose(0, 2, 1)
    dcols = _gemm(w_t, _gy_matrix(layout, gy, shared), groups)
    # Overlapping windows are summed in fp32 for fp16/bf16 and rounded once at the end.
    acc_dtype = float32 if is_low_precision(dcols.dtype) else dcols.dtype
    return casts.to_dtype(_copy_add_bias(layout.col2im(dcols, acc_dtype), b), out_dtype)


def conv_weight_grad(x, gy, w_shape, stride, padding, dilation, groups, cols=None, shared=None):
    """Weight gradient of conv2d (one GEMM); ``cols`` is the forward's im2col matrix, if kept.
    ``shared``: see ``_gy_matrix``."""
    gw = cudnn_conv.weight_grad(x, gy, w_shape, stride, padding, dilation, groups)
    if gw is not None:
        return gw
    # Kept columns were built from the forward's (already upcast) input: x is not read again.
    x, gy, out_dtype = _lowp_operands(x, gy, upcast_a=cols is None, shared=shared)
    geo = _Geometry(x.shape, w_shape, gy.shape[2:], stride, padding, dilation, groups)
    layout = geo.layout()
    if cols is None:
        cols = layout.cols(x)
    gw = _gemm(_gy_matrix(layout, gy, shared), cols.transpose(0, 2, 1), groups).reshape(w_shape)
    return casts.to_dtype(gw, out_dtype)


def conv_bias_grad(gy, shared=None):
    """``gy.sum((0, 2, 3))`` of an (N, O, H, W) gradient (float32 accumulation for fp16/bf16).

    float32/float64 take one GEMV per image against ones, then a sum over the batch: BLAS runs
    these long reductions 2-4x faster than NumPy's multi-axis sum (LeNet's conv1: 49 -> 21 us).
    So does float16/bfloat16 on the CPU, on the float32 copy of ``gy`` that the other gradients
    of the backward (``shared``) made, rounded once.
    """
    xp = get_array_module(gy)
    if is_low_precision(gy.dtype):
        if kernels.on_cpu(gy):
            return casts.to_dtype(conv_bias_grad(_widened(gy, shared)), gy.dtype)
        return kernels.sum_fp32(gy, axis=(0, 2, 3)).astype(gy.dtype)
    n, o, h, w = gy.shape
    per_image = gy.reshape(n, o, h * w)
    per_image = kernels.matmul(per_image, xp.ones(per_image.shape[2], dtype=gy.dtype))
    return per_image.sum(0)
