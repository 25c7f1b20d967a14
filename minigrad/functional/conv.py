"""Convolutions: conv1d, conv2d, conv_transpose2d (NCHW, PyTorch weight layouts), and the
sliding-block rearrangements unfold (im2col) and fold (col2im), each the other's adjoint.

Each convolution is im2col + ONE GEMM (the array kernels live in ``_conv_kernels``). Gradients
are three mutually adjoint ops, each the backward of the others, so double backward works with
no other ops:

- ``conv2d(x, w)``                  -> y
- ``conv2d_backward_data(gy, w)``   -> data gradient: a transposed conv (GEMM, then col2im as
                                       one strided add per kernel offset)
- ``conv2d_backward_filter(x, gy)`` -> weight gradient (one GEMM)

When the weight needs a gradient, ``conv2d`` may keep its im2col matrix for
``conv2d_backward_filter`` (on the CPU, where rebuilding it costs as much as the GEMM; the
backend sets the size limit); it is freed with the rest of the graph.
"""

from __future__ import annotations

from .._backend import casts, get_array_module
from .._backend.dtypes import int64
from ..core.function import Function
from ..core.modes import grad_enabled
from ..core.tensor import Tensor
from ._conv_kernels import conv_bias_grad, conv_data_grad, conv_forward, conv_weight_grad
from ._utils import acc_dtype, const, fast_backward, op_error, refuse_bool_product
from .shape import pad

__all__ = ["conv1d", "conv2d", "conv_transpose2d", "fold", "unfold"]


# ----------------------------------------------------------------------------- Functions
def _bias_grad(gy, shared=None):
    # A fused array reduction unless the backward is itself recorded (create_graph=True).
    return const(conv_bias_grad(gy._data, shared)) if fast_backward() else gy.sum((0, 2, 3))


class Conv2dFunction(Function):
    name = "conv2d"
    promote = "same"  # PyTorch refuses mixed dtypes (outside autocast)

    def forward(self, x, w, b, stride, padding, dilation, groups, out_hw, keep_cols=False):
        self.cfg = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        y, cols = conv_forward(x, w, b, out_hw, keep_cols=keep_cols, **self.cfg)
        self.save_for_backward(*((x, w) if cols is None else (x, w, cols)))
        return y

    def backward(self, gy):
        saved = self.saved_tensors
        x, w = saved[:2]
        cols = saved[2]._data if len(saved) > 2 else None
        need_x, need_w, need_b = self.needs_input_grad
        # The gradients read gy in the same layout (and, for float16/bfloat16 on the CPU, in
        # float32): build it once.
        shared = {} if need_x + need_w + need_b > 1 else None
        gx = (Conv2dBackwardData.apply(gy, w, None, out_hw=x.shape[2:], shared=shared,
                                       **self.cfg) if need_x else None)
        gw = (Conv2dBackwardFilter.apply(x, gy, w_shape=w.shape, cols=cols, shared=shared,
                                         **self.cfg) if need_w else None)
        return gx, gw, _bias_grad(gy, shared) if need_b else None


class ConvTranspose2dFunction(Function):
    """Transposed convolution; also the data gradient of ``Conv2dFunction``."""

    name = "conv_transpose2d"
    promote = "same"  # PyTorch refuses mixed dtypes (outside autocast)

    def forward(self, x, w, b, stride, padding, dilation, groups, out_hw, shared=None):
        self.save_for_backward(x, w)
        self.cfg = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        return conv_data_grad(x, w, b, out_hw, shared=shared, **self.cfg)

    def backward(self, gy):
        x, w = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        gx = (Conv2dFunction.apply(gy, w, None, out_hw=x.shape[2:], **self.cfg) if need_x else None)
        gw = (Conv2dBackwardFilter.apply(gy, x, w_shape=w.shape, **self.cfg)
              if need_w else None)
        return gx, gw, _bias_grad(gy) if need_b else None


class Conv2dBackwardData(ConvTranspose2dFunction):
    """The data gradient of ``Conv2dFunction``: a transposed convolution under its own op name."""

    name = "conv2d_backward_data"
    promote = None  # an internal gradient op: its dtypes already agree


class Conv2dBackwardFilter(Function):
    """Weight gradient of ``conv2d(x, w)`` given its output gradient ``gy`` (one GEMM)."""

    name = "conv2d_backward_filter"

    def forward(self, x, gy, w_shape, stride, padding, dilation, groups, cols=None, shared=None):
        self.save_for_backward(x, gy)
        self.cfg = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        return conv_weight_grad(x, gy, w_shape, cols=cols, shared=shared, **self.cfg)

    def backward(self, ggw):
        x, gy = self.saved_tensors
        need_x, need_gy = self.needs_input_grad
        gx = (Conv2dBackwardData.apply(gy, ggw, None, out_hw=x.shape[2:], **self.cfg)
              if need_x else None)
        ggy = (Conv2dFunction.apply(x, ggw, None, out_hw=gy.shape[2:], **self.cfg)
               if need_gy else None)
        return gx, ggy


class Conv1dFunction(Function):
    """conv1d as conv2d over a unit height (its own op, so the AMP policy can name it)."""

    name = "conv1d"
    promote = "same"  # PyTorch refuses mixed dtypes (outside autocast)

    def forward(self, x, w, b, stride, padding, dilation, groups, out_hw):
        self.save_for_backward(x, w)
        self.cfg = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        return conv_forward(x[:, :, None], w[:, :, None], b, out_hw, **self.cfg)[0][:, :, 0]

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
def string_padding(op, x, weight, padding, stride, dilation, rank):
    """PyTorch's ``padding="valid"`` (none) and ``"same"`` (output size = input size, stride 1;
    an odd total pads one more zero after, as PyTorch does) as ``(x, numeric padding)``: an
    asymmetric "same" pads ``x`` itself and convolves with padding 0."""
    if not isinstance(padding, str):
        return x, padding
    if padding == "valid":
        return x, 0
    if padding != "same":
        raise op_error(op, f"padding must be an int, a tuple, 'valid' or 'same', got {padding!r}")
    if any(s != 1 for s in _tuple(stride, rank, op, "stride")):
        raise op_error(op, "padding='same' is not supported for strided convolutions (as in "
                       "PyTorch); compute the padding for your stride", stride=stride)
    totals = [d * (k - 1) for d, k in zip(_tuple(dilation, rank, op, "dilation"),
                                          weight.shape[2:])]
    if all(t % 2 == 0 for t in totals):
        return x, tuple(t // 2 for t in totals)
    return pad(x, [(0, 0), (0, 0)] + [(t // 2, t - t // 2) for t in totals]), 0


def _tuple(v, n, op, what):
    t = (int(v),) * n if isinstance(v, int) else tuple(int(i) for i in v)
    if len(t) != n:
        raise op_error(op, f"{what} must be an int or a {n}-tuple", **{what: v})
    return t


def _check(op, x, w, b, groups, rank, transposed=False):
    refuse_bool_product(op, x, w, b)
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
    # Checked before the division below (stride 0 would be a ZeroDivisionError).
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise op_error(op, "stride and dilation must be >= 1 and padding >= 0",
                       stride=stride, padding=padding, dilation=dilation)
    if min(k) < 1:
        raise op_error(op, "the weight's kernel size must be >= 1", kernel=tuple(k))
    out = tuple((i + 2 * p - d * (kk - 1) - 1) // s + 1
                for i, kk, s, p, d in zip(in_hw, k, stride, padding, dilation))
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
        stride, padding, dilation: an int or an ``(h, w)`` pair; padding is zeros (or
            ``"valid"``/``"same"``, as in PyTorch).
        groups: split channels into this many independent convolutions.

    Returns:
        ``(N, O, OH, OW)`` with ``OH = (H + 2*ph - dh*(kh-1) - 1) // sh + 1``.
    """
    op = "conv2d"
    if x.ndim == 3 and weight.ndim == 4:  # unbatched (C, H, W), as PyTorch
        return conv2d(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    _check(op, x, weight, bias, groups, 2)
    x, padding = string_padding(op, x, weight, padding, stride, dilation, 2)
    stride, padding, dilation = (_tuple(v, 2, op, n) for v, n in
                                 ((stride, "stride"), (padding, "padding"),
                                  (dilation, "dilation")))
    out_hw = _out_size(op, x.shape[2:], weight.shape[2:], stride, padding, dilation)
    return Conv2dFunction.apply(x, weight, bias, stride=stride, padding=padding, dilation=dilation,
                        groups=groups, out_hw=out_hw,
                        keep_cols=weight.requires_grad and grad_enabled.get())


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D convolution over ``(N, C, L)`` input with weight ``(O, C / groups, k)``.

    Same semantics as :func:`conv2d` with a unit height; int (or 1-tuple) arguments.
    """
    op = "conv1d"
    if x.ndim == 2 and weight.ndim == 3:  # unbatched (C, L), as PyTorch
        return conv1d(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    _check(op, x, weight, bias, groups, 1)
    x, padding = string_padding(op, x, weight, padding, stride, dilation, 1)
    (s,), (p,), (d,) = (_tuple(v, 1, op, n) for v, n in
                        ((stride, "stride"), (padding, "padding"), (dilation, "dilation")))
    out_hw = _out_size(op, (1, x.shape[2]), (1, weight.shape[2]), (1, s), (0, p), (1, d))
    return Conv1dFunction.apply(x, weight, bias, stride=(1, s), padding=(0, p), dilation=(1, d),
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
    if x.ndim == 3 and weight.ndim == 4:  # unbatched (C, H, W), as PyTorch
        return conv_transpose2d(x.unsqueeze(0), weight, bias, stride, padding, output_padding,
                                groups, dilation).squeeze(0)
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
    return ConvTranspose2dFunction.apply(x, weight, bias, stride=stride, padding=padding,
                                 dilation=dilation, groups=groups, out_hw=out_hw)


# ----------------------------------------------------------------------------- unfold / fold
def _window_slices(geo):
    """Per kernel offset (i, j): the slice of the padded (N, C, Hp, Wp) input it covers."""
    (kh, kw), (dh, dw), (sh, sw), (oh, ow) = geo["kernel"], geo["dilation"], geo["stride"], \
        geo["out_hw"]
    for i in range(kh):
        for j in range(kw):
            yield (slice(None), slice(None), slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                   slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))


class UnfoldFunction(Function):
    """im2col: ``(N, C, H, W) -> (N, C*kh*kw, OH*OW)``, row ``c*kh*kw + i*kw + j``."""

    name = "unfold"

    def forward(self, x, geo):
        self.geo = geo
        xp = get_array_module(x)
        n, c, h, w = x.shape
        (ph, pw), (kh, kw), (oh, ow) = geo["padding"], geo["kernel"], geo["out_hw"]
        xpad = x
        if ph or pw:
            xpad = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=x.dtype)
            xpad[:, :, ph:ph + h, pw:pw + w] = x
        cols = xp.empty((n, c, kh * kw, oh, ow), dtype=x.dtype)
        for k, sl in enumerate(_window_slices(geo)):
            cols[:, :, k] = xpad[sl]
        return cols.reshape(n, c * kh * kw, oh * ow)

    def backward(self, gy):
        return FoldFunction.apply(gy, geo=self.geo)


class FoldFunction(Function):
    """col2im, the adjoint of :class:`UnfoldFunction`: overlapping entries are summed (in
    float32 for float16/bfloat16, rounded once)."""

    name = "fold"

    def forward(self, cols, geo):
        self.geo = geo
        xp = get_array_module(cols)
        (h, w), (ph, pw), (kh, kw), (oh, ow) = geo["in_hw"], geo["padding"], geo["kernel"], \
            geo["out_hw"]
        n = cols.shape[0]
        c = cols.shape[1] // (kh * kw)
        acc = int64 if cols.dtype.kind in "biu" else acc_dtype(cols.dtype)
        blocks = casts.to_dtype(cols, acc).reshape(n, c, kh * kw, oh, ow)
        out = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=acc)
        for k, sl in enumerate(_window_slices(geo)):
            out[sl] += blocks[:, :, k]
        out = out[:, :, ph:ph + h, pw:pw + w]
        if cols.dtype.kind == "b":
            return out != 0
        return casts.to_dtype(xp.ascontiguousarray(out), cols.dtype)

    def backward(self, gy):
        return UnfoldFunction.apply(gy, geo=self.geo)


def _fold_geometry(op, in_hw, kernel_size, dilation, padding, stride):
    geo = {"in_hw": tuple(in_hw)}
    for key, v, low in (("kernel", kernel_size, 1), ("dilation", dilation, 1),
                        ("padding", padding, 0), ("stride", stride, 1)):
        t = _tuple(v, 2, op, key if key != "kernel" else "kernel_size")
        if min(t) < low:
            raise op_error(op, f"{key} must be >= {low}", **{key: v})
        geo[key] = t
    geo["out_hw"] = tuple(
        (i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, d, p, s in zip(
            in_hw, geo["kernel"], geo["dilation"], geo["padding"], geo["stride"]))
    if min(geo["out_hw"]) < 1:
        raise op_error(op, f"the sliding blocks do not fit: {geo['out_hw']} blocks per axis "
                       "(the dilated kernel is larger than the padded input)",
                       size=tuple(in_hw), kernel_size=geo["kernel"], padding=geo["padding"])
    return geo


def unfold(x: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding blocks (``F.unfold``, im2col): ``(N, C, H, W)`` (or unbatched
    ``(C, H, W)``) to ``(N, C*kh*kw, L)``, one column per block position (``L = OH*OW``).
    Each of ``kernel_size``, ``dilation``, ``padding`` (zeros) and ``stride`` is an int or a
    pair. The gradient is :func:`fold` of the output gradient."""
    if x.ndim not in (3, 4):
        raise op_error("unfold", "expects (N, C, H, W) or unbatched (C, H, W) input",
                       shape=x.shape)
    if x.ndim == 3:
        y = unfold(x.reshape((1,) + x.shape), kernel_size, dilation, padding, stride)
        return y.reshape(y.shape[1:])
    geo = _fold_geometry("unfold", x.shape[2:], kernel_size, dilation, padding, stride)
    return UnfoldFunction.apply(x, geo=geo)


def fold(x: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Combine sliding blocks into a tensor (``F.fold``, col2im), the adjoint of
    :func:`unfold`: ``(N, C*kh*kw, L)`` (or unbatched ``(C*kh*kw, L)``) to
    ``(N, C, *output_size)``, summing where blocks overlap. ``L`` must be the number of
    blocks that fit in ``output_size`` with the given geometry."""
    if x.ndim not in (2, 3):
        raise op_error("fold", "expects (N, C*kh*kw, L) or unbatched (C*kh*kw, L) input",
                       shape=x.shape)
    if x.ndim == 2:
        return fold(x.reshape((1,) + x.shape), output_size, kernel_size, dilation, padding,
                    stride).reshape((x.shape[0] // _kernel_area(kernel_size),)
                                    + _tuple(output_size, 2, "fold", "output_size"))
    size = _tuple(output_size, 2, "fold", "output_size")
    geo = _fold_geometry("fold", size, kernel_size, dilation, padding, stride)
    area = geo["kernel"][0] * geo["kernel"][1]
    blocks = geo["out_hw"][0] * geo["out_hw"][1]
    if x.shape[1] % area or x.shape[2] != blocks:
        raise op_error("fold", f"expects (N, C*{area}, {blocks}) input: C*kh*kw rows and one "
                       "column per block that fits in output_size", shape=x.shape,
                       output_size=size, kernel_size=geo["kernel"])
    return FoldFunction.apply(x, geo=geo)


def _kernel_area(kernel_size):
    k = _tuple(kernel_size, 2, "fold", "kernel_size")
    return k[0] * k[1]
