"""Convolutions: conv1d, conv2d, conv_transpose2d (NCHW, PyTorch weight layouts).

Each convolution is im2col + ONE GEMM. The im2col matrix is a strided view of the padded input
laid out as (C, kh, kw, OH, OW, N), and the GEMM ``weight (O, C*kh*kw) @ cols (C*kh*kw,
OH*OW*N)`` is 2-D (batched over groups only): that is the shape cuBLAS runs with Tensor Cores for
fp16/bf16, and one large BLAS call on the CPU.

Gradients are three mutually adjoint ops, each the backward of the others, so double backward
works with no other ops:

- ``conv2d(x, w)``                  -> y
- ``conv2d_backward_data(gy, w)``   -> data gradient: a transposed conv (GEMM, then col2im as
                                       one strided add per kernel offset)
- ``conv2d_backward_filter(x, gy)`` -> weight gradient (one GEMM)

Low precision (invariant 4): GEMMs go through ``_backend.kernels.matmul`` (fp32 accumulation,
rounded output); col2im sums overlapping windows in fp32 and rounds once.
"""

from __future__ import annotations

from .._backend import cudnn_conv, get_array_module, kernels
from .._backend.dtypes import float32, is_low_precision, widest_float
from ..autodiff.function import Function
from ..tensor import Tensor
from ._utils import op_error

__all__ = ["conv1d", "conv2d", "conv_transpose2d"]


# ----------------------------------------------------------------------------- array kernels
# Internally images are "CHWN" (batch innermost): every kernel-offset slice of a CHWN array is
# then a run of OW*N contiguous elements, so the im2col copy and the col2im adds stream through
# memory instead of stepping through rows of OW elements (2x faster on LeNet's 10x10 maps).
def _to_chwn(x, ph, pw):
    """One copy: NCHW -> zero-padded CHWN."""
    xp = get_array_module(x)
    n, c, h, w = x.shape
    out = xp.zeros((c, h + 2 * ph, w + 2 * pw, n), dtype=x.dtype)
    out[:, ph:ph + h, pw:pw + w] = x.transpose(1, 2, 3, 0)
    return out


def _cols(x, kh, kw, out_hw, stride, padding, dilation):
    """im2col as a strided view (C, kh, kw, OH, OW, N) of the padded CHWN input (no copy)."""
    xp = get_array_module(x)
    xt = _to_chwn(x, *padding)
    s_c, s_h, s_w, s_n = xt.strides
    return xp.lib.stride_tricks.as_strided(
        xt, (xt.shape[0], kh, kw) + tuple(out_hw) + (xt.shape[3],),
        (s_c, s_h * dilation[0], s_w * dilation[1], s_h * stride[0], s_w * stride[1], s_n))


def _lowp_operands(a, b):
    """Upcast fp16/bf16 operands early where ``kernels.matmul`` would upcast them anyway.

    On the CPU ``kernels.matmul`` emulates Tensor Cores by converting its operands to fp32.
    Converting *before* im2col is numerically identical and converts kh*kw times fewer elements
    (NumPy's fp16->fp32 conversion otherwise dominates a LeNet conv). On the GPU the operands
    stay narrow so cuBLAS runs them on Tensor Cores. Returns the operands and the output dtype.
    """
    out_dtype = a.dtype if a.dtype == b.dtype else widest_float((a.dtype, b.dtype))
    if is_low_precision(out_dtype):
        # _backend decides whether fp16/bf16 GEMMs are emulated for this array's backend.
        if kernels.emulates_low_precision(a):
            return a.astype(float32), b.astype(float32), out_dtype
    return a, b, out_dtype


def _gemm(a, b, groups):
    # One 2-D GEMM when ungrouped (the Tensor Core path for fp16), one batched GEMM otherwise.
    return kernels.matmul(a[0], b[0])[None] if groups == 1 else kernels.matmul(a, b)


def _gy_matrix(gy, groups):
    """Output gradient NCHW -> (groups, O/groups, OH*OW*N), the GEMM layout of the output."""
    n, o, oh, ow = gy.shape
    return gy.transpose(1, 2, 3, 0).reshape(groups, o // groups, oh * ow * n)


def _add_bias(y, b):
    """Add a per-channel bias to an NCHW result of the cuDNN path (in place, y's dtype)."""
    if b is not None:
        y += b.reshape(1, -1, 1, 1).astype(y.dtype, copy=False)
    return y


def _conv_forward(x, w, b, out_hw, stride, padding, dilation, groups):
    # --- cuDNN (GPU fp16/bf16 with nvidia-cudnn-frontend); None: use im2col below ---
    y = cudnn_conv.forward(x, w, stride, padding, dilation, groups)
    if y is not None:
        return _add_bias(y, b)
    # --- end cuDNN dispatch ---
    x, w, out_dtype = _lowp_operands(x, w)
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    k = cg * kh * kw
    cols = _cols(x, kh, kw, out_hw, stride, padding, dilation)
    cols = cols.reshape(groups, k, out_hw[0] * out_hw[1] * n)  # the one im2col copy
    y = _gemm(w.reshape(groups, o // groups, k), cols, groups)  # (g, O/g, OH*OW*N)
    y = y.reshape((o,) + tuple(out_hw) + (n,)).transpose(3, 0, 1, 2)
    y = get_array_module(y).ascontiguousarray(y)
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y.astype(out_dtype, copy=False)


def _conv_data_grad(gy, w, b, in_hw, stride, padding, dilation, groups):
    """Transposed convolution: GEMM to columns, then col2im by adding one slice per offset."""
    # --- cuDNN (GPU fp16/bf16 with nvidia-cudnn-frontend); None: use im2col below ---
    gx = cudnn_conv.data_grad(gy, w, in_hw, stride, padding, dilation, groups)
    if gx is not None:
        return _add_bias(gx, b)
    # --- end cuDNN dispatch ---
    gy, w, out_dtype = _lowp_operands(gy, w)
    xp = get_array_module(gy)
    n, o, oh, ow = gy.shape
    cg, kh, kw = w.shape[1:]
    c = cg * groups
    w_t = w.reshape(groups, o // groups, cg * kh * kw).transpose(0, 2, 1)
    dcols = _gemm(w_t, _gy_matrix(gy, groups), groups).reshape(c, kh, kw, oh, ow, n)
    ph, pw = padding
    sh, sw = stride
    dh, dw = dilation
    # Overlapping windows are summed in fp32 for fp16/bf16 and rounded once at the end.
    acc_dtype = float32 if is_low_precision(dcols.dtype) else dcols.dtype
    acc = xp.zeros((c, in_hw[0] + 2 * ph, in_hw[1] + 2 * pw, n), dtype=acc_dtype)
    for i in range(kh):
        for j in range(kw):
            acc[:, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                j * dw:j * dw + sw * (ow - 1) + 1:sw] += dcols[:, i, j]
    gx = xp.ascontiguousarray(acc[:, ph:ph + in_hw[0], pw:pw + in_hw[1]].transpose(3, 0, 1, 2))
    if b is not None:
        gx += b.reshape(1, -1, 1, 1)
    return gx.astype(out_dtype, copy=False)


def _conv_weight_grad(x, gy, w_shape, stride, padding, dilation, groups):
    # --- cuDNN (GPU fp16/bf16 with nvidia-cudnn-frontend); None: use im2col below ---
    gw = cudnn_conv.weight_grad(x, gy, w_shape, stride, padding, dilation, groups)
    if gw is not None:
        return gw
    # --- end cuDNN dispatch ---
    x, gy, out_dtype = _lowp_operands(x, gy)
    n, _, oh, ow = gy.shape
    cg, kh, kw = w_shape[1:]
    cols = _cols(x, kh, kw, (oh, ow), stride, padding, dilation)
    cols = cols.reshape(groups, cg * kh * kw, oh * ow * n)
    gw = _gemm(_gy_matrix(gy, groups), cols.transpose(0, 2, 1), groups).reshape(w_shape)
    return gw.astype(out_dtype, copy=False)


# ----------------------------------------------------------------------------- Functions
class Conv2d(Function):
    name = "conv2d"

    def forward(self, x, w, b, stride, padding, dilation, groups, out_hw):
        self.save_for_backward(x, w)
        self.cfg = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        return _conv_forward(x, w, b, out_hw, **self.cfg)

    def backward(self, gy):
        x, w = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        gx = (Conv2dBackwardData.apply(gy, w, None, out_hw=x.shape[2:], **self.cfg)
              if need_x else None)
        gw = (Conv2dBackwardFilter.apply(x, gy, w_shape=w.shape, **self.cfg)
              if need_w else None)
        gb = gy.sum((0, 2, 3)) if need_b else None
        return gx, gw, gb


class ConvTranspose2d(Function):
    """Transposed convolution; also the data gradient of ``Conv2d``."""

    name = "conv_transpose2d"

    def forward(self, x, w, b, stride, padding, dilation, groups, out_hw):
        self.save_for_backward(x, w)
        self.cfg = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        return _conv_data_grad(x, w, b, out_hw, **self.cfg)

    def backward(self, gy):
        x, w = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        gx = (Conv2d.apply(gy, w, None, out_hw=x.shape[2:], **self.cfg) if need_x else None)
        gw = (Conv2dBackwardFilter.apply(gy, x, w_shape=w.shape, **self.cfg)
              if need_w else None)
        gb = gy.sum((0, 2, 3)) if need_b else None
        return gx, gw, gb


class Conv2dBackwardData(ConvTranspose2d):
    """The data gradient of ``Conv2d``: a transposed convolution under its own op name."""

    name = "conv2d_backward_data"


class Conv2dBackwardFilter(Function):
    """Weight gradient of ``conv2d(x, w)`` given its output gradient ``gy`` (one GEMM)."""

    name = "conv2d_backward_filter"

    def forward(self, x, gy, w_shape, stride, padding, dilation, groups):
        self.save_for_backward(x, gy)
        self.cfg = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        return _conv_weight_grad(x, gy, w_shape, **self.cfg)

    def backward(self, ggw):
        x, gy = self.saved_tensors
        need_x, need_gy = self.needs_input_grad
        gx = (Conv2dBackwardData.apply(gy, ggw, None, out_hw=x.shape[2:], **self.cfg)
              if need_x else None)
        ggy = Conv2d.apply(x, ggw, None, out_hw=gy.shape[2:], **self.cfg) if need_gy else None
        return gx, ggy


class Conv1d(Function):
    """conv1d as conv2d over a unit height (its own op, so the AMP policy can name it)."""

    name = "conv1d"

    def forward(self, x, w, b, stride, padding, dilation, groups, out_hw):
        self.save_for_backward(x, w)
        self.cfg = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        return _conv_forward(x[:, :, None], w[:, :, None], b, out_hw, **self.cfg)[:, :, 0]

    def backward(self, gy):
        x, w = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        n, o, length = gy.shape
        gy4 = gy.reshape((n, o, 1, length))
        w4 = w.reshape(w.shape[:2] + (1,) + w.shape[2:])
        gx = gw = gb = None
        if need_x:
            gx = Conv2dBackwardData.apply(gy4, w4, None, out_hw=(1, x.shape[2]), **self.cfg)
            gx = gx.reshape(x.shape)
        if need_w:
            x4 = x.reshape(x.shape[:2] + (1,) + x.shape[2:])
            gw = Conv2dBackwardFilter.apply(x4, gy4, w_shape=w4.shape, **self.cfg)
            gw = gw.reshape(w.shape)
        if need_b:
            gb = gy.sum((0, 2))
        return gx, gw, gb


# ----------------------------------------------------------------------------- public API
def _tuple(v, n, op, what):
    t = (int(v),) * n if isinstance(v, int) else tuple(int(i) for i in v)
    if len(t) != n:
        raise op_error(op, f"{what} must be an int or a {n}-tuple", **{what: v})
    return t


def _check(op, x, w, b, groups, rank, transposed=False):
    if x.ndim != rank + 2 or w.ndim != rank + 2:
        layout = "(N, C, L)" if rank == 1 else "(N, C, H, W)"
        raise op_error(op, f"expected input {layout} and a {rank + 2}-D weight; add a batch dim "
                       "with x.unsqueeze(0) for a single sample", input=x.shape, weight=w.shape)
    if groups < 1:
        raise op_error(op, "groups must be >= 1", groups=groups)
    c_in = x.shape[1]
    if transposed:
        ok = w.shape[0] == c_in and c_in % groups == 0
        out_channels = w.shape[1] * groups
        need = ("weight (C_in, C_out/groups, kh, kw) with C_in == input channels, divisible "
                "by groups")
    else:
        ok = w.shape[1] * groups == c_in and w.shape[0] % groups == 0
        out_channels = w.shape[0]
        need = ("weight (C_out, C_in/groups, ...) with weight.shape[1] * groups == input "
                "channels and C_out divisible by groups")
    if not ok:
        raise op_error(op, f"channel mismatch: expected {need}", input=x.shape,
                       weight=w.shape, groups=groups)
    if b is not None and b.shape != (out_channels,):
        raise op_error(op, f"bias must have shape ({out_channels},)", bias=b.shape,
                       weight=w.shape)


def _out_size(op, in_hw, k, stride, padding, dilation):
    out = tuple((i + 2 * p - d * (kk - 1) - 1) // s + 1
                for i, kk, s, p, d in zip(in_hw, k, stride, padding, dilation))
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise op_error(op, "stride and dilation must be >= 1 and padding >= 0",
                       stride=stride, padding=padding, dilation=dilation)
    if min(out) < 1:
        raise op_error(op, f"output size {out} is not positive: the (dilated) kernel is larger "
                       "than the padded input; use a smaller kernel/dilation or more padding",
                       input_size=tuple(in_hw), kernel=tuple(k), padding=padding,
                       dilation=dilation)
    return out


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation, like PyTorch) over NCHW input.

    Args:
        x: ``(N, C, H, W)``.
        weight: ``(O, C / groups, kh, kw)``.
        bias: optional ``(O,)``.
        stride, padding, dilation: an int or an ``(h, w)`` pair; padding is zeros.
        groups: split channels into this many independent convolutions.

    Returns:
        ``(N, O, OH, OW)`` with ``OH = (H + 2*ph - dh*(kh-1) - 1) // sh + 1``.
    """
    op = "conv2d"
    _check(op, x, weight, bias, groups, 2)
    stride, padding, dilation = (_tuple(v, 2, op, n) for v, n in
                                 ((stride, "stride"), (padding, "padding"),
                                  (dilation, "dilation")))
    out_hw = _out_size(op, x.shape[2:], weight.shape[2:], stride, padding, dilation)
    return Conv2d.apply(x, weight, bias, stride=stride, padding=padding, dilation=dilation,
                        groups=groups, out_hw=out_hw)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D convolution over ``(N, C, L)`` input with weight ``(O, C / groups, k)``.

    Same semantics as :func:`conv2d` with a unit height; int (or 1-tuple) arguments.
    """
    op = "conv1d"
    _check(op, x, weight, bias, groups, 1)
    (s,), (p,), (d,) = (_tuple(v, 1, op, n) for v, n in
                        ((stride, "stride"), (padding, "padding"), (dilation, "dilation")))
    out_hw = _out_size(op, (1, x.shape[2]), (1, weight.shape[2]), (1, s), (0, p), (1, d))
    return Conv1d.apply(x, weight, bias, stride=(1, s), padding=(0, p), dilation=(1, d),
                        groups=groups, out_hw=out_hw)


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-D transposed convolution (the gradient of conv2d with respect to its input).

    Args:
        x: ``(N, C_in, H, W)``.
        weight: ``(C_in, C_out / groups, kh, kw)`` (PyTorch layout).
        bias: optional ``(C_out,)``.
        stride, padding, output_padding, dilation: an int or an ``(h, w)`` pair.
        groups: number of channel groups.

    Returns:
        ``(N, C_out, OH, OW)`` with
        ``OH = (H - 1)*sh - 2*ph + dh*(kh - 1) + output_padding_h + 1``.
    """
    op = "conv_transpose2d"
    _check(op, x, weight, bias, groups, 2, transposed=True)
    stride, padding, out_pad, dilation = (
        _tuple(v, 2, op, n) for v, n in ((stride, "stride"), (padding, "padding"),
                                         (output_padding, "output_padding"),
                                         (dilation, "dilation")))
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0 or min(out_pad) < 0:
        raise op_error(op, "stride and dilation must be >= 1, padding and output_padding >= 0",
                       stride=stride, padding=padding, output_padding=out_pad)
    if any(op_ >= max(s, d) for op_, s, d in zip(out_pad, stride, dilation)):
        raise op_error(op, "output_padding must be smaller than stride or dilation",
                       output_padding=out_pad, stride=stride, dilation=dilation)
    out_hw = tuple((i - 1) * s - 2 * p + d * (k - 1) + q + 1 for i, s, p, d, k, q in
                   zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], out_pad))
    if min(out_hw) < 1:
        raise op_error(op, f"output size {out_hw} is not positive; reduce padding",
                       input=x.shape, weight=weight.shape, padding=padding)
    return ConvTranspose2d.apply(x, weight, bias, stride=stride, padding=padding,
                                 dilation=dilation, groups=groups, out_hw=out_hw)
