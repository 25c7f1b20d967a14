"""Convolutions: ``Conv1d``/``Conv2d``/``Conv3d`` and ``ConvTranspose1d``/``2d``/``3d`` over
``F.conv*``, with PyTorch's padding modes."""

from __future__ import annotations

import math

from .. import functional as F
from . import init
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _pad_mode(name, pad_mode, padding):
    """MindSpore's ``pad_mode`` ("valid", "same", or "pad" with ``padding``) as ``padding``."""
    if pad_mode is None or pad_mode == "pad":
        return padding
    if pad_mode not in ("valid", "same"):
        raise ValueError(f"{name}: pad_mode must be 'valid', 'same' or 'pad', got {pad_mode!r}")
    if padding not in (0, (0, 0), (0,)):
        raise ValueError(f"{name}: padding={padding!r} needs pad_mode='pad' (MindSpore's rule)")
    return pad_mode


def _bias(name, bias, pad_mode, has_bias):
    """``bias``, PyTorch's keyword, or MindSpore's ``has_bias``. A call spelled the MindSpore
    way (with ``pad_mode``) gets MindSpore's default, no bias; otherwise PyTorch's, a bias."""
    if has_bias is not None:
        if bias is not None:
            raise TypeError(f"{name}: got both bias and has_bias; they are one argument "
                            "(has_bias is MindSpore's spelling)")
        return bool(has_bias)
    if bias is None:
        return pad_mode is None
    return bool(bias)


def _check_sizes(name, what, values, n, minimum):
    """``values`` must be ``n`` ints, each >= ``minimum`` (a clear error at construction, not
    a ZeroDivisionError at the first forward)."""
    shown = values[0] if len(values) == 1 else values
    if len(values) != n or not all(hasattr(v, "__index__") and not isinstance(v, bool)
                                   for v in values):
        raise ValueError(f"{name}: {what} must be an int or a {n}-tuple of ints, got {shown}")
    if min(values) < minimum:
        raise ValueError(f"{name}: {what} must be >= {minimum}, got {shown}")


class _ConvNd(Module):
    _ndim = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                 bias, output_padding=0, device=None, dtype=None, padding_mode="zeros"):
        super().__init__()
        name = type(self).__name__
        n = self._ndim
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got "
                             f"{padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f'{name}: only "zeros" padding mode is supported (as in PyTorch)')
        _check_sizes(name, "in_channels/out_channels", (in_channels, out_channels), 2, 0)
        _check_sizes(name, "groups", (groups,), 1, 1)
        _check_sizes(name, "kernel_size", _tuple(kernel_size, n), n, 1)
        _check_sizes(name, "stride", _tuple(stride, n), n, 1)
        _check_sizes(name, "dilation", _tuple(dilation, n), n, 1)
        _check_sizes(name, "output_padding", _tuple(output_padding, n), n, 0)
        if not isinstance(padding, str):
            _check_sizes(name, "padding", _tuple(padding, n), n, 0)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must both be divisible by groups ({groups})")
        if isinstance(padding, str):
            self._check_string_padding(padding, stride)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        # "valid"/"same" stay strings: F.conv*d computes them (an asymmetric "same" included)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.output_padding = _tuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = init._empty_param(shape, device, dtype)
        if bias:
            self.bias = init._empty_param((out_channels,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _check_string_padding(self, padding, stride):
        name = type(self).__name__
        if self._transposed or padding not in ("valid", "same"):
            raise ValueError(f"{name}: padding={padding!r}: only 'valid' and 'same' are "
                             "accepted, and not by transposed convolutions (as in PyTorch)")
        if padding == "same" and any(s != 1 for s in _tuple(stride, self._ndim)):
            raise ValueError(f"{name}: padding='same' is not supported for strided "
                             "convolutions (as in PyTorch); give explicit padding")

    def reset_parameters(self) -> None:
        # PyTorch's default: kaiming_uniform(a=sqrt(5)) == U(+-1/sqrt(fan_in)), fan_in from the
        # weight's dim 1 (so for transposed convs it is out_channels/groups * kernel area).
        if self.weight.size == 0:  # zero channels: nothing to draw (and fan_in would be 0)
            if self.bias is not None:
                init.zeros_(self.bias)
            return
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if any(self.padding):
            s += f", padding={self.padding}"
        if any(d != 1 for d in self.dilation):
            s += f", dilation={self.dilation}"
        if any(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode!r}"
        return s

    def _padded(self, x):
        """``x`` padded by ``padding_mode`` and the padding left for the convolution: PyTorch's
        non-zero modes pad explicitly ("same" puts the odd element on the right)."""
        if self.padding_mode == "zeros":
            return x, self.padding
        if self.padding == "same":
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pads = [(t // 2, t - t // 2) for t in total]
        elif self.padding == "valid":
            pads = [(0, 0)] * self._ndim
        else:
            pads = [(p, p) for p in self.padding]
        if any(a or b for a, b in pads):
            x = F.pad(x, [(0, 0)] * (x.ndim - self._ndim) + pads, mode=self.padding_mode)
        return x, (0,) * self._ndim

    def _output_padding(self, x, output_size):
        """The output_padding that makes ``forward(x, output_size)`` that size (PyTorch's)."""
        if output_size is None:
            return self.output_padding
        n = self._ndim
        size = [int(v) for v in output_size]
        if len(size) > n:
            size = size[len(size) - n:] if len(size) == x.ndim else size
        if len(size) != n:
            raise ValueError(f"{type(self).__name__}: output_size must have {n} or {n + 2} "
                             f"elements, got {tuple(output_size)}")
        res = []
        for d in range(n):
            least = ((x.shape[x.ndim - n + d] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            if not least <= size[d] < least + self.stride[d]:
                raise ValueError(f"{type(self).__name__}: requested an output size of "
                                 f"{tuple(size)}, but valid sizes along dim {d} range from "
                                 f"{least} to {least + self.stride[d] - 1} for input "
                                 f"{tuple(x.shape)}")
            res.append(size[d] - least)
        return tuple(res)


class _Conv(_ConvNd):
    """The constructor of Conv1d/2d/3d (PyTorch's arguments, plus MindSpore's ``pad_mode`` and
    ``has_bias``); each public class derives from it alone, as in PyTorch."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool | None = None,
                 padding_mode: str = "zeros", device=None, dtype=None, pad_mode=None,
                 has_bias=None):
        name = type(self).__name__
        bias = _bias(name, bias, pad_mode, has_bias)
        padding = _pad_mode(name, pad_mode, padding)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, device=device, dtype=dtype, padding_mode=padding_mode)


class Conv1d(_Conv):
    """1-D convolution over ``(N, C_in, L)``; weight ``(C_out, C_in/groups, k)``."""

    _ndim = 1

    def forward(self, x):
        x, p = self._padded(x)
        p = p if isinstance(p, str) else p[0]
        return F.conv1d(x, self.weight, self.bias, self.stride[0], p, self.dilation[0],
                        self.groups)


class Conv2d(_Conv):
    """2-D convolution over ``(N, C_in, H, W)``; weight ``(C_out, C_in/groups, kh, kw)``.

    Args:
        in_channels, out_channels: channel counts.
        kernel_size, stride, padding, dilation: an int or an ``(h, w)`` pair.
        groups: split channels into this many independent groups.
        bias: learn a per-output-channel bias (default: yes, PyTorch's; no when ``pad_mode``
            is given, MindSpore's ``has_bias=False``).
        padding_mode: what the padding holds: "zeros", or (padded explicitly before the
            convolution) "reflect", "replicate" or "circular", as in PyTorch.
        pad_mode: MindSpore's spelling: ``"valid"`` (no padding), ``"same"`` or ``"pad"`` (use
            ``padding``). Unlike MindSpore the default is PyTorch's (``padding=0``).
        has_bias: MindSpore's spelling of ``bias``.
    """

    def forward(self, x):
        x, p = self._padded(x)
        return F.conv2d(x, self.weight, self.bias, self.stride, p, self.dilation, self.groups)


class Conv3d(_Conv):
    """3-D convolution over ``(N, C_in, D, H, W)``; weight ``(C_out, C_in/groups, kd, kh, kw)``
    (arguments as :class:`Conv2d`'s, with ``(d, h, w)`` triples)."""

    _ndim = 3

    def forward(self, x):
        x, p = self._padded(x)
        return F.conv3d(x, self.weight, self.bias, self.stride, p, self.dilation, self.groups)


class _ConvTranspose(_ConvNd):
    """The constructor of ConvTranspose1d/2d/3d; each public class derives from it alone, as
    in PyTorch."""

    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, output_padding=output_padding, device=device, dtype=dtype,
                         padding_mode=padding_mode)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution; weight ``(C_in, C_out/groups, kh, kw)`` as in PyTorch."""

    def forward(self, x, output_size=None):
        """``output_size`` (optional): the spatial output size (with or without the leading
        dims), which picks ``output_padding`` as PyTorch does."""
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups,
                                  self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution; weight ``(C_in, C_out/groups, k)`` as in PyTorch."""

    _ndim = 1

    def forward(self, x, output_size=None):
        return F.conv_transpose1d(x, self.weight, self.bias, self.stride[0], self.padding[0],
                                  self._output_padding(x, output_size)[0], self.groups,
                                  self.dilation[0])


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution; weight ``(C_in, C_out/groups, kd, kh, kw)`` as in PyTorch."""

    _ndim = 3

    def forward(self, x, output_size=None):
        return F.conv_transpose3d(x, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups,
                                  self.dilation)
