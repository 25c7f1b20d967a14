"""``mg.cuda``: GPU availability and memory statistics (all safe to call without a GPU)."""

from __future__ import annotations

import sys
import types

from . import _backend as B
from ._backend.memory import max_memory_allocated, memory_allocated, reset_peak_memory_stats

__all__ = ["is_available", "device_count", "synchronize", "memory_allocated",
           "max_memory_allocated", "reset_peak_memory_stats", "reset_max_memory_allocated",
           "empty_cache"]


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


# ----------------------------------------------------------------- PyTorch spellings
reset_max_memory_allocated = reset_peak_memory_stats  # torch.cuda's older name


def empty_cache() -> None:
    """Return the unused blocks of CuPy's memory pools to the driver (no-op on the CPU)."""
    if B.cuda_available():
        B.cupy.get_default_memory_pool().free_all_blocks()
        B.cupy.get_default_pinned_memory_pool().free_all_blocks()


def _install_amp_namespace():
    """``mg.cuda.amp``: PyTorch's old ``torch.cuda.amp`` namespace over ``minigrad.amp``.

    Called by ``minigrad/__init__`` once ``minigrad.amp`` exists (amp imports more than this
    module may at import time). Registered in ``sys.modules`` so ``from minigrad.cuda.amp
    import GradScaler`` works.
    """
    from . import amp as _amp

    class autocast(_amp.autocast):
        """``torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)``: the
        region of ``mg.autocast("cuda", ...)``."""

        def __init__(self, enabled=True, dtype=B.float16, cache_enabled=True):
            super().__init__("cuda", dtype, enabled, cache_enabled)

    mod = types.ModuleType(__name__ + ".amp", _install_amp_namespace.__doc__)
    mod.autocast = autocast
    mod.GradScaler = _amp.GradScaler
    mod.custom_fwd = _amp.custom_fwd
    mod.custom_bwd = _amp.custom_bwd
    mod.__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
    sys.modules[mod.__name__] = mod
    return mod
