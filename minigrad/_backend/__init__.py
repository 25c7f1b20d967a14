"""Array backends: NumPy for ``cpu``, CuPy for ``cuda`` / ``cuda:N``.

Everything that differs between NumPy and CuPy lives in this package (invariant 8): ops call
:func:`get_array_module` and write one body of code for both.
"""

from __future__ import annotations

import contextlib

import numpy as np

from .sync_debug import host_read
from .dtypes import (
    bfloat16, bool_, float16, float32, float64, int8, int16, int32, int64, uint8,
    finfo, is_floating, is_low_precision, normalize_dtype, widest_float,
)

__all__ = [
    "np", "get_array_module", "cupy", "cuda_available", "gpu_count", "is_shared_memory",
    "device_of", "device_scope",
    "normalize_device",
    "DeviceMismatch", "device_mismatch",
    "to_device", "asarray", "from_dlpack", "bfloat16", "bool_", "float16", "float32", "float64",
    "int8", "int16", "int32", "int64", "uint8", "finfo", "is_floating", "is_low_precision",
    "normalize_dtype", "widest_float",
]

try:  # importing minigrad must never require CuPy
    import cupy  # type: ignore
except Exception:  # pragma: no cover - depends on the machine
    cupy = None

_cuda_available: bool | None = None


def cuda_available() -> bool:
    """True when CuPy is importable and sees at least one GPU (never raises)."""
    global _cuda_available
    if _cuda_available is None:
        try:
            _cuda_available = bool(cupy is not None and cupy.cuda.is_available())
        except Exception:  # pragma: no cover
            _cuda_available = False
    return _cuda_available


def is_shared_memory(a) -> bool:
    """Whether writing into array ``a`` is unsafe: read-only memory, or a broadcast view whose
    elements share memory (a zero stride over more than one element)."""
    return not getattr(a.flags, "writeable", True) or any(
        st == 0 and n > 1 for st, n in zip(a.strides, a.shape))


def gpu_count() -> int:
    """Number of visible GPUs (0 without CuPy or a GPU)."""
    return cupy.cuda.runtime.getDeviceCount() if cuda_available() else 0


_ndarray = np.ndarray


def get_array_module(x):
    """Return ``numpy`` or ``cupy``, whichever owns the array ``x``."""
    if type(x) is _ndarray or cupy is None:
        return np
    return cupy.get_array_module(x)


def is_array(x) -> bool:
    """Whether ``x`` is a NumPy or CuPy array."""
    return isinstance(x, _ndarray) or (cupy is not None and isinstance(x, cupy.ndarray))


# The device None stands for in creation functions; a one-item list so mg.set_default_device
# can change it without rebinding a module global.
default_device = ["cpu"]


def normalize_device(device) -> str:
    """Spell a device as ``"cpu"`` or ``"cuda:N"``; raise a clear error for anything else.

    None means the default device (``"cpu"`` unless ``mg.set_default_device`` changed it); an
    int ``N`` means ``"cuda:N"``, as in PyTorch.
    """
    if device is None:
        return default_device[0]
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return f"cuda:{device}"  # PyTorch: an integer device is that GPU
    if not isinstance(device, str):
        device = str(device)
    if device == "cpu":
        return "cpu"
    if device == "cuda" or device == "gpu":
        return "cuda:0"
    if device.startswith(("cuda:", "gpu:")) and device[device.index(":") + 1:].isdigit():
        return "cuda:" + device[device.index(":") + 1:]
    raise ValueError(f"unknown device {device!r}: use 'cpu', 'cuda' or 'cuda:N'")


def device_of(array) -> str:
    """The device string of a NumPy or CuPy array."""
    if type(array) is _ndarray or cupy is None or not isinstance(array, cupy.ndarray):
        return "cpu"
    return f"cuda:{array.device.id}"


def device_scope(array):
    """A context that makes ``array``'s GPU current (CuPy allocates on the current device);
    a no-op for NumPy arrays."""
    if type(array) is _ndarray or cupy is None or not isinstance(array, cupy.ndarray):
        return contextlib.nullcontext()
    return array.device


class DeviceMismatch(RuntimeError, ValueError):
    """Tensors of one op live on different devices (a ``RuntimeError`` as in PyTorch)."""


def device_mismatch(op: str, devices) -> DeviceMismatch | None:
    """The error for an op whose input ``devices`` (strings) differ, or None when they agree.

    A pure function of the device strings, so the message is testable without a GPU; the
    dispatcher calls it only after an op has already failed (no cost per op).
    """
    seen = list(dict.fromkeys(devices))
    if len(seen) < 2:
        return None
    a, b = seen[0], seen[1]
    return DeviceMismatch(
        f"{op}: expected all tensors on one device, but found {a} and {b}; move them to one "
        f"device first, e.g. x.to({b!r}) (or build the tensors with device={b!r})")


def _require_cuda(device: str):
    if not cuda_available():
        raise RuntimeError(
            f"device {device!r} requested but CuPy sees no GPU: install the 'gpu' (CUDA 12) or "
            "'cuda13' extra on a machine with an NVIDIA GPU, or use device='cpu'")


def asarray(data, dtype=None, device: str = "cpu"):
    """Make a backend array on ``device`` from lists, scalars, NumPy or CuPy arrays."""
    if device == "cpu":
        if cupy is not None and isinstance(data, cupy.ndarray):
            data = host_read(data, "a copy to the CPU")
        return np.asarray(data, dtype=dtype)
    _require_cuda(device)
    with cupy.cuda.Device(int(device.split(":")[1])):
        return cupy.asarray(data, dtype=dtype)


def to_device(array, device: str):
    """Copy ``array`` to ``device`` (a no-op when it is already there)."""
    if device_of(array) == device:
        return array
    return asarray(array, device=device)


def from_dlpack(obj):
    """Wrap any object exporting ``__dlpack__`` without copying (CPU or CUDA)."""
    dev_type = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else 1
    if dev_type == 1:  # kDLCPU
        return np.from_dlpack(obj)
    _require_cuda("cuda")
    return cupy.from_dlpack(obj)
