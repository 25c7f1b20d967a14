"""MegEngine's NHWC helpers: ``amp.convert_tensor_format`` and ``amp.convert_module_format``.

MegEngine converts NCHW tensors to its ``"nhwc"`` format for faster low-precision convolutions:
the logical shape stays NCHW, the memory becomes channels-last. minigrad does the same on every
backend: the data is re-laid out to channels-last strides (a real layout change; the shape and
the values stay those of NCHW), and the tensor is tagged, so
``amp.tensor_format(x)`` says ``"nhwc"`` (MegEngine's ``x.format``; minigrad's ``Tensor`` has no
such attribute). A converted module keeps its convolution, BatchNorm and pooling outputs
channels-last (a forward hook re-lays them out; elementwise ops keep their input's layout), so
activations stay NHWC from layer to layer, as MegEngine's format propagation does. Results equal
NCHW's up to float32 rounding (reductions add in another order). On the CPU this is layout
parity, not a speed-up: the im2col kernels gather windows from any strides.
"""

from __future__ import annotations

import copy
import weakref

from ..._backend import get_array_module
from ...nn.conv import Conv2d
from ...nn.module import Module
from ...nn.norm import BatchNorm2d
from ...nn.pooling import AvgPool2d, MaxPool2d
from ...core.tensor import Tensor

__all__ = ["convert_module_format", "convert_tensor_format", "tensor_format"]

_tagged: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> tagged tensor
_KEEP_NHWC = (Conv2d, BatchNorm2d, MaxPool2d, AvgPool2d)


def _perms(ndim):
    to_last = (0,) + tuple(range(2, ndim)) + (1,)
    back = (0, ndim - 1) + tuple(range(1, ndim - 1))
    return to_last, back


def _channels_last(a):
    """The same values with channels-last memory (NCHW shape, NHWC strides)."""
    to_last, back = _perms(a.ndim)
    return get_array_module(a).ascontiguousarray(a.transpose(to_last)).transpose(back)


def _is_channels_last(a) -> bool:
    return a.transpose(_perms(a.ndim)[0]).flags.c_contiguous


def tensor_format(x: Tensor) -> str:
    """MegEngine's ``x.format``: ``"nhwc"`` for a 4-D/5-D tensor whose data is channels-last
    (so an elementwise op's output, which keeps its input's layout, is NHWC too), else
    ``"default"``. Where both layouts coincide (a size-1 channel or spatial dims) only a
    converted tensor says ``"nhwc"``."""
    if x.ndim not in (4, 5) or not _is_channels_last(x._data):
        return "default"
    if not x._data.flags.c_contiguous:
        return "nhwc"
    return "nhwc" if _tagged.get(id(x)) is x else "default"


def convert_tensor_format(x: Tensor, inplace: bool = True) -> Tensor:
    """Convert a 4-D/5-D NCHW tensor to NHWC memory (MegEngine ``amp.convert_tensor_format``).

    Args:
        x: the tensor; one that is not 4-D/5-D is returned unchanged.
        inplace: re-lay out ``x`` itself (the object is kept); False returns a new tensor.

    Returns:
        The converted tensor: same shape and values, channels-last strides, format "nhwc".
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"convert_tensor_format: expected a Tensor, got {type(x).__name__}")
    if x.ndim not in (4, 5) or tensor_format(x) == "nhwc":
        return x
    data = _channels_last(x._data)
    if not inplace:
        x = x.detach()
    # Same values, new strides: no version bump, so nothing that saved x sees a change.
    x._data = data
    _tagged[id(x)] = x
    return x


def _keep_nhwc(module, args, out):
    if isinstance(out, Tensor) and out.ndim == 4:
        convert_tensor_format(out)
    return None


def convert_module_format(module: Module, inplace: bool = True) -> Module:
    """Convert a module's 4-D/5-D parameters and buffers to NHWC and keep its convolution,
    BatchNorm and pooling outputs NHWC (MegEngine ``amp.convert_module_format``).

    Args:
        module: the model.
        inplace: convert ``module`` itself; False converts a deep copy.

    Returns:
        The converted module.
    """
    if not isinstance(module, Module):
        raise TypeError(f"convert_module_format: expected an nn.Module, got "
                        f"{type(module).__name__}")
    if not inplace:
        module = copy.deepcopy(module)
    for m in module.modules():
        for reg in (m._parameters, m._buffers):
            for t in reg.values():
                if t is not None:
                    convert_tensor_format(t)
        if isinstance(m, _KEEP_NHWC) and not getattr(m, "_nhwc_hook", None):
            object.__setattr__(m, "_nhwc_hook", m.register_forward_hook(_keep_nhwc))
    return module
