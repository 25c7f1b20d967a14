"""More convolutions: conv3d, conv_transpose1d, conv_transpose3d and the generic
``convolution`` dispatcher, built on the 2-D kernels.

Each is a composite (see ``_composite``) and a "lower" row of the AMP policy, so under autocast
the whole op runs in float16/bfloat16 with the 2-D kernels' float32 accumulation (invariant 4).
The volumetric ops fold the depth axis into the batch: a 3-D convolution is the sum over the
kernel's depth taps of 2-D convolutions of strided depth slices; a 3-D transposed convolution
places each tap's 2-D transposed convolution at its (strided, dilated) depth offsets.
"""

from __future__ import annotations

from ..core.tensor import Tensor
from ._composite import composite
from ._utils import op_error
from .conv import _check, _out_size, _tuple, conv1d, conv2d, conv_transpose2d, string_padding
from .shape import pad

__all__ = ["conv3d", "conv_transpose1d", "conv_transpose3d", "convolution"]


def _conv3d_impl(x, w, b, stride, padding, dilation, groups):
    n, c, d = x.shape[:3]
    kd = w.shape[2]
    sd, pd, dd = stride[0], padding[0], dilation[0]
    if pd:
        x = pad(x, ((0, 0), (0, 0), (pd, pd), (0, 0), (0, 0)))
    d_out = (d + 2 * pd - dd * (kd - 1) - 1) // sd + 1
    out = None
    for k in range(kd):
        xs = x[:, :, k * dd:k * dd + (d_out - 1) * sd + 1:sd]  # (N, C, Dout, H, W)
        xs = xs.permute((0, 2, 1, 3, 4)).reshape((n * d_out, c) + tuple(x.shape[3:]))
        y = conv2d(xs, w[:, :, k], None, stride[1:], padding[1:], dilation[1:], groups)
        out = y if out is None else out + y
    out = out.reshape((n, d_out) + tuple(out.shape[1:])).permute((0, 2, 1, 3, 4))
    return out if b is None else out + b.reshape((1, -1, 1, 1, 1))


_Conv3d = composite("conv3d", _conv3d_impl)


def _triple(op, stride, padding, dilation):
    return tuple(_tuple(v, 3, op, name) for v, name in
                 ((stride, "stride"), (padding, "padding"), (dilation, "dilation")))


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-D convolution (cross-correlation) over ``(N, C, D, H, W)`` input.

    Args:
        x: ``(N, C, D, H, W)``.
        weight: ``(O, C / groups, kd, kh, kw)``; bias: optional ``(O,)``.
        stride, padding, dilation: an int or a ``(d, h, w)`` triple; padding is zeros.
        groups: independent channel groups.
    """
    op = "conv3d"
    if x.ndim == 4 and weight.ndim == 5:  # unbatched (C, D, H, W), as PyTorch
        return conv3d(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    if x.ndim != 5 or weight.ndim != 5:
        raise op_error(op, "expected input (N, C, D, H, W) and a 5-D weight", input=x.shape,
                       weight=weight.shape)
    _check(op, x, weight, bias, groups, 3)  # the caller's 5-D shapes in any message
    x, padding = string_padding(op, x, weight, padding, stride, dilation, 3)
    stride, padding, dilation = _triple(op, stride, padding, dilation)
    _out_size(op, x.shape[2:], weight.shape[2:], stride, padding, dilation)
    return _Conv3d.apply(x, weight, bias, kw={"stride": stride, "padding": padding,
                                              "dilation": dilation, "groups": groups})


def _convt1d_impl(x, w, b, stride, padding, output_padding, groups, dilation):
    y = conv_transpose2d(x.unsqueeze(2), w.unsqueeze(2), b, (1, stride), (0, padding),
                         (0, output_padding), groups, (1, dilation))
    return y.squeeze(2)


_ConvT1d = composite("conv_transpose1d", _convt1d_impl)


def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-D transposed convolution: ``(N, C_in, L)`` with weight ``(C_in, C_out / groups, k)``.

    Output length ``(L - 1)*stride - 2*padding + dilation*(k - 1) + output_padding + 1``.
    """
    op = "conv_transpose1d"
    if x.ndim == 2 and weight.ndim == 3:  # unbatched (C, L), as PyTorch
        return conv_transpose1d(x.unsqueeze(0), weight, bias, stride, padding, output_padding,
                                groups, dilation).squeeze(0)
    _check(op, x, weight, bias, groups, 1, transposed=True)
    (s,), (p,), (q,), (d,) = (_tuple(v, 1, op, n) for v, n in (
        (stride, "stride"), (padding, "padding"), (output_padding, "output_padding"),
        (dilation, "dilation")))
    return _ConvT1d.apply(x, weight, bias, kw={"stride": s, "padding": p, "output_padding": q,
                                               "groups": groups, "dilation": d})


def _convt3d_impl(x, w, b, stride, padding, output_padding, groups, dilation):
    n, c, d = x.shape[:3]
    kd = w.shape[2]
    sd, pd, qd, dd = stride[0], padding[0], output_padding[0], dilation[0]
    full = (d - 1) * sd + dd * (kd - 1) + qd + 1
    xs = x.permute((0, 2, 1, 3, 4)).reshape((n * d, c) + tuple(x.shape[3:]))
    out = None
    for k in range(kd):
        y = conv_transpose2d(xs, w[:, :, k], None, stride[1:], padding[1:], output_padding[1:],
                             groups, dilation[1:])
        y = y.reshape((n, d) + tuple(y.shape[1:]))  # (N, D, Co, Ho, Wo)
        if sd > 1:  # interleave sd - 1 zero planes after every input plane
            z = pad(y.unsqueeze(2), ((0, 0), (0, 0), (0, sd - 1), (0, 0), (0, 0), (0, 0)))
            y = z.reshape((n, d * sd) + tuple(y.shape[2:]))[:, :(d - 1) * sd + 1]
        span = (d - 1) * sd + 1
        y = pad(y, ((0, 0), (k * dd, full - span - k * dd), (0, 0), (0, 0), (0, 0)))
        out = y if out is None else out + y
    out = out[:, pd:full - pd].permute((0, 2, 1, 3, 4))
    return out if b is None else out + b.reshape((1, -1, 1, 1, 1))


_ConvT3d = composite("conv_transpose3d", _convt3d_impl)


def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-D transposed convolution: ``(N, C_in, D, H, W)`` with weight
    ``(C_in, C_out / groups, kd, kh, kw)``; int or ``(d, h, w)`` arguments."""
    op = "conv_transpose3d"
    if x.ndim == 4 and weight.ndim == 5:  # unbatched (C, D, H, W), as PyTorch
        return conv_transpose3d(x.unsqueeze(0), weight, bias, stride, padding, output_padding,
                                groups, dilation).squeeze(0)
    if x.ndim != 5 or weight.ndim != 5:
        raise op_error(op, "expected input (N, C_in, D, H, W) and a 5-D weight",
                       input=x.shape, weight=weight.shape)
    _check(op, x, weight, bias, groups, 3, transposed=True)
    stride, padding, dilation = _triple(op, stride, padding, dilation)
    out_pad = _tuple(output_padding, 3, op, "output_padding")
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0 or min(out_pad) < 0 or any(
            q >= max(s, d) for q, s, d in zip(out_pad, stride, dilation)):
        raise op_error(op, "need stride, dilation >= 1, padding >= 0 and 0 <= output_padding "
                       "< max(stride, dilation)", stride=stride, padding=padding,
                       output_padding=out_pad, dilation=dilation)
    full = (x.shape[2] - 1) * stride[0] + dilation[0] * (weight.shape[2] - 1) + out_pad[0] + 1
    if full - 2 * padding[0] < 1:
        raise op_error(op, "output depth is not positive; reduce padding", input=x.shape,
                       padding=padding)
    return _ConvT3d.apply(x, weight, bias, kw={"stride": stride, "padding": padding,
                                               "output_padding": out_pad, "groups": groups,
                                               "dilation": dilation})


def _convolution_impl(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    rank = x.ndim - 2
    if transposed:
        fn = {1: _convt1d_impl, 2: conv_transpose2d, 3: _convt3d_impl}[rank]
        if rank == 1:
            return fn(x, w, b, stride[0], padding[0], output_padding[0], groups, dilation[0])
        return fn(x, w, b, stride, padding, output_padding, groups, dilation)
    if rank == 3:
        return _conv3d_impl(x, w, b, stride, padding, dilation, groups)
    return (conv1d if rank == 1 else conv2d)(x, w, b, stride, padding, dilation, groups)


_Convolution = composite("convolution", _convolution_impl)


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding,
                dilation, transposed: bool, output_padding, groups: int) -> Tensor:
    """``torch.convolution``: 1-D/2-D/3-D convolution or transposed convolution chosen by the
    input's rank and ``transposed``; every argument as in the specific functions."""
    op = "convolution"
    rank = input.ndim - 2
    if rank not in (1, 2, 3):
        raise op_error(op, "expected a 3-D, 4-D or 5-D input (N, C, *spatial)",
                       input=input.shape)
    args = [_tuple(v, rank, op, n) for v, n in ((stride, "stride"), (padding, "padding"),
                                                 (dilation, "dilation"),
                                                 (output_padding, "output_padding"))]
    # Validated here, so a bad call is explained as convolution with the caller's shapes, not as
    # the conv1d/conv2d it is delegated to (on folded shapes for 3-D).
    if weight.ndim != input.ndim:
        raise op_error(op, f"expected a {input.ndim}-D weight for {input.ndim}-D input",
                       input=input.shape, weight=weight.shape)
    _check(op, input, weight, bias, groups, rank, transposed=bool(transposed))
    if not transposed:
        _out_size(op, input.shape[2:], weight.shape[2:], *args[:3])
    return _Convolution.apply(input, weight, bias, kw={
        "stride": args[0], "padding": args[1], "dilation": args[2],
        "transposed": bool(transposed), "output_padding": args[3], "groups": groups})
