"""``mg.accelerator``: PyTorch's device-generic ``torch.accelerator`` (minigrad's one accelerator
is CUDA, through CuPy).

Example:
    >>> import minigrad as mg
    >>> device = mg.accelerator.current_accelerator(check_available=True) or mg.device("cpu")
    >>> mg.zeros(2, device=device).device == device
    True
"""

from __future__ import annotations

from ... import _backend as B
from ...core.device import Device
from .cuda import synchronize as _cuda_synchronize

__all__ = ["current_accelerator", "current_device_index", "device_count", "is_available",
           "set_device_index", "synchronize"]


def is_available() -> bool:
    """True when CuPy sees a GPU (never raises)."""
    return B.cuda_available()


def current_accelerator(check_available: bool = False):
    """``device("cuda")`` when minigrad can use GPUs (CuPy installed; with
    ``check_available=True`` only when it also sees one), else None."""
    if B.cupy is None or (check_available and not B.cuda_available()):
        return None
    return Device("cuda")


def device_count() -> int:
    """Number of visible GPUs (0 without CuPy or a GPU)."""
    return B.gpu_count()


def current_device_index() -> int:
    """The current CUDA device's index (0 without a GPU, as PyTorch reports)."""
    if not B.cuda_available():
        return 0
    return int(B.cupy.cuda.Device().id)


def set_device_index(device) -> None:
    """Make GPU ``device`` (an index, ``"cuda:N"`` or a device) current for CuPy."""
    index = device if isinstance(device, int) else Device(device).index or 0
    if not B.cuda_available():
        raise RuntimeError(f"accelerator.set_device_index({device!r}): CuPy sees no GPU")
    B.cupy.cuda.Device(index).use()


def synchronize(device=None) -> None:
    """Wait for all queued GPU work (no-op on the CPU)."""
    _cuda_synchronize()
