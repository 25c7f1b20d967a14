"""GPU memory statistics through a CuPy memory hook.

CuPy's default pool reports bytes in use but keeps no peak (AMP_REFERENCE section 3), so a
``MemoryHook`` follows pool allocations and frees. It is installed on first use, so programs that
never ask for statistics pay nothing.
"""

from __future__ import annotations

from . import cupy, cuda_available

__all__ = ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats"]

_hook = None


def _tracker():
    global _hook
    if _hook is None:
        from cupy.cuda import memory_hook

        class _PeakTracker(memory_hook.MemoryHook):
            name = "minigrad_peak_tracker"

            def __init__(self):
                self.current = int(cupy.get_default_memory_pool().used_bytes())
                self.peak = self.current

            def malloc_postprocess(self, device_id, size, mem_size, mem_ptr, pmem_id):
                self.current += mem_size
                if self.current > self.peak:
                    self.peak = self.current

            def free_postprocess(self, device_id, mem_size, mem_ptr, pmem_id):
                self.current -= mem_size

        _hook = _PeakTracker()
        _hook.__enter__()  # stays installed for the life of the process (this thread)
    return _hook


def memory_allocated() -> int:
    """Bytes currently held by tensors in CuPy's default pool (0 without a GPU)."""
    if not cuda_available():
        return 0
    return int(cupy.get_default_memory_pool().used_bytes())


def max_memory_allocated() -> int:
    """Peak bytes in use since the last :func:`reset_peak_memory_stats` (0 without a GPU)."""
    if not cuda_available():
        return 0
    return int(_tracker().peak)


def reset_peak_memory_stats() -> None:
    """Start a new peak measurement from the bytes in use now."""
    if not cuda_available():
        return
    t = _tracker()
    t.current = int(cupy.get_default_memory_pool().used_bytes())
    t.peak = t.current
