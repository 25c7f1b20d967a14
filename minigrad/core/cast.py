"""Casts, copies and device moves: differentiable, the gradient goes back to the source
dtype/device.

``cast`` is what autocast inserts in front of ops (``Function.apply``); it is never itself cast.
The ``Cast`` primitive lives beside the dispatch point (``function.py``), which needs it for
dtype promotion.
"""

from __future__ import annotations

from .._backend import device_of, get_array_module, normalize_device
from .._backend import to_device as _to_device_array
from .._backend.dtypes import normalize_dtype
from .function import Cast, Function
from .tensor import Tensor

__all__ = ["cast", "clone", "detach", "to_device"]


class ToDevice(Function):
    name = "to_device"

    def forward(self, x, device):
        self.src_device = device_of(x)
        return _to_device_array(x, device)

    def backward(self, gy):
        return to_device(gy, self.src_device)


class Clone(Function):
    name = "clone"

    def forward(self, x):
        return get_array_module(x).array(x, copy=True)

    def backward(self, gy):
        return gy


def cast(x: Tensor, dtype) -> Tensor:
    """``x`` in ``dtype`` (returns ``x`` itself when it already has that dtype)."""
    dtype = normalize_dtype(dtype)
    if x.dtype == dtype:
        return x
    return Cast.apply(x, dtype=dtype)


def to_device(x: Tensor, device) -> Tensor:
    """``x`` copied to ``device`` (``"cpu"``, ``"cuda:N"``), differentiably."""
    device = normalize_device(device)
    if x.device == device:
        return x
    return ToDevice.apply(x, device=device)


def _check_tensor(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}; make one with "
                        "mg.tensor(...)")


def clone(x: Tensor) -> Tensor:
    """A copy of ``x`` that stays in the graph."""
    _check_tensor(x, "clone")
    return Clone.apply(x)


def detach(x: Tensor) -> Tensor:
    """``x.detach()``: the same data, cut from the graph."""
    _check_tensor(x, "detach")
    return x.detach()
