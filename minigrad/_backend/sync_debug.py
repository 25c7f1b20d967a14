"""Sync detector: flag device-to-host reads (PyTorch's ``torch.cuda.set_sync_debug_mode``).

The mode lives in a contextvar (0 = off, 1 = warn, 2 = error). Every host read of a tensor value
(``Tensor.numpy``/``item``/``tolist``/``bool``/``float``/``int``) and every internal read that
minigrad itself makes on the user's behalf (a ``GradScaler``'s skip report, its scale) goes
through :func:`host_read`, so one check covers both and a CPU test can prove that a training step
never reads back: on the CPU the "sync" is the read itself, on the GPU it is also a real stall.
"""

from __future__ import annotations

import contextvars
import warnings

import numpy as np

__all__ = ["sync_mode", "set_mode", "get_mode", "check", "host_read", "SyncWarning"]

sync_mode: contextvars.ContextVar = contextvars.ContextVar("minigrad_sync_debug", default=0)
_NAMES = {"default": 0, "warn": 1, "error": 2}


class SyncWarning(UserWarning):
    """A device-to-host read happened while the sync debug mode is ``"warn"``."""


def _level(mode) -> int:
    if isinstance(mode, str) and mode in _NAMES:
        return _NAMES[mode]
    if mode in (0, 1, 2) and not isinstance(mode, bool):
        return int(mode)
    raise ValueError(f"set_sync_debug_mode: mode must be 'default', 'warn' or 'error' (or 0, 1, "
                     f"2), got {mode!r}")


def set_mode(mode):
    """Set the mode in the current context; returns a token for ``sync_mode.reset``."""
    return sync_mode.set(_level(mode))


def get_mode() -> int:
    return sync_mode.get()


def check(what: str) -> None:
    """Warn or raise for a device-to-host read named ``what`` when the mode asks for it."""
    level = sync_mode.get()
    if not level:
        return
    msg = (f"{what}: device-to-host read (a host synchronisation) while the sync debug mode is "
           f"{'error' if level == 2 else 'warn'}; keep values on the device inside the training "
           "step, read them after it (or leave the region / set_sync_debug_mode('default'))")
    if level == 2:
        raise RuntimeError(msg)
    warnings.warn(msg, SyncWarning, stacklevel=3)


def host_read(array, what: str) -> np.ndarray:
    """``array`` as a NumPy array, after :func:`check` (the one door for internal reads)."""
    check(what)
    return array if type(array) is np.ndarray else array.get()
