"""``mg.cuda``: GPU availability and memory statistics (all safe to call without a GPU)."""

from __future__ import annotations

from . import _backend as B
from ._backend.memory import max_memory_allocated, memory_allocated, reset_peak_memory_stats

__all__ = ["is_available", "device_count", "synchronize", "memory_allocated",
           "max_memory_allocated", "reset_peak_memory_stats"]


def is_available() -> bool:
    """True when CuPy is installed and sees a GPU; never raises."""
    return B.cuda_available()


def device_count() -> int:
    """Number of visible GPUs (0 without CuPy or a GPU)."""
    if not B.cuda_available():
        return 0
    return B.cupy.cuda.runtime.getDeviceCount()


def synchronize() -> None:
    """Wait for all queued GPU work (no-op on the CPU)."""
    if B.cuda_available():
        B.cupy.cuda.Device().synchronize()
