"""``mg.cuda``: GPU availability and memory statistics (all safe to call without a GPU)."""

from __future__ import annotations

import types

from ... import _backend as B
from ... import amp as _amp
from ..._backend import sync_debug as _sync
from ..._backend.memory import max_memory_allocated, memory_allocated, reset_peak_memory_stats

__all__ = ["is_available", "device_count", "synchronize", "memory_allocated",
           "max_memory_allocated", "reset_peak_memory_stats", "set_sync_debug_mode",
           "get_sync_debug_mode", "sync_debug_mode", "reset_max_memory_allocated",
           "empty_cache"]


def is_available() -> bool:
    """True when CuPy is installed and sees a GPU; never raises."""
    return B.cuda_available()


def device_count() -> int:
    """Number of visible GPUs (0 without CuPy or a GPU)."""
    return B.gpu_count()


def synchronize() -> None:
    """Wait for all queued GPU work (no-op on the CPU)."""
    if B.cuda_available():
        B.cupy.cuda.Device().synchronize()


# ----------------------------------------------------------------------------- sync detector
def set_sync_debug_mode(mode) -> None:
    """Warn (``"warn"``/1) or raise (``"error"``/2) on every device-to-host read of a tensor
    value (``.numpy()``, ``.item()``, ``tolist()``, ``bool()``, ``float()``, ``int()``, and the
    reads minigrad makes for you, such as a ``GradScaler``'s skip report); ``"default"``/0 turns
    it off. Like PyTorch's, but on both backends: on the CPU it proves a step has no read-back.
    The mode is per context (thread); :func:`sync_debug_mode` scopes it to a ``with`` block.
    """
    _sync.set_mode(mode)


def get_sync_debug_mode() -> int:
    """The current mode: 0 (off), 1 (warn) or 2 (error)."""
    return _sync.get_mode()


class sync_debug_mode:  # noqa: N801 - used as a context manager, like mg.no_grad
    """``with mg.cuda.sync_debug_mode("error"): ...``: the mode for one region (a training step).

    Args:
        mode: ``"default"``, ``"warn"`` or ``"error"`` (or 0, 1, 2).
    """

    def __init__(self, mode="error"):
        self._level = _sync._level(mode)
        self._tokens = []

    def __enter__(self):
        self._tokens.append(_sync.sync_mode.set(self._level))
        return self

    def __exit__(self, *exc):
        _sync.sync_mode.reset(self._tokens.pop())
        return False

# ----------------------------------------------------------------- PyTorch spellings
reset_max_memory_allocated = reset_peak_memory_stats  # torch.cuda's older name


def empty_cache() -> None:
    """Return the unused blocks of CuPy's memory pools to the driver (no-op on the CPU)."""
    if B.cuda_available():
        B.cupy.get_default_memory_pool().free_all_blocks()
        B.cupy.get_default_pinned_memory_pool().free_all_blocks()


def _amp_namespace():
    """``mg.cuda.amp``: PyTorch's old ``torch.cuda.amp`` namespace over ``minigrad.amp``."""

    class autocast(_amp.autocast):
        """``torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)``: the
        region of ``mg.autocast("cuda", ...)``."""

        def __init__(self, enabled=True, dtype=B.float16, cache_enabled=True):
            super().__init__("cuda", dtype, enabled, cache_enabled)

    mod = types.ModuleType("minigrad.cuda.amp", _amp_namespace.__doc__)
    mod.autocast = autocast
    mod.GradScaler = _amp.GradScaler
    mod.custom_fwd = _amp.custom_fwd
    mod.custom_bwd = _amp.custom_bwd
    mod.__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
    return mod


amp = _amp_namespace()
