"""Grad mode as a context variable (invariant 6): nests, survives exceptions, per thread."""

from __future__ import annotations

import functools
from .modes import grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


def is_grad_enabled() -> bool:
    """Whether ops are being recorded for backward right now."""
    return grad_enabled.get()


class set_grad_enabled:
    """Switch recording on or off: a call, a context manager or a decorator (PyTorch's).

    Example:
        >>> import minigrad as mg
        >>> with mg.no_grad():
        ...     y = mg.ones(2, requires_grad=True) * 2
        >>> y.requires_grad
        False
    """

    _mode = None

    def __init__(self, mode: bool | None = None):
        self.mode = self._mode if mode is None else bool(mode)
        self._tokens = []
        self._prev = None
        if self._mode is None:
            # PyTorch's set_grad_enabled(mode) switches at once, so a plain call (no ``with``)
            # works; leaving a ``with`` block or decorating restores the mode before the call.
            self._prev = grad_enabled.get()
            grad_enabled.set(self.mode)

    def __enter__(self):
        self._tokens.append(grad_enabled.set(self.mode))
        return self

    def __exit__(self, *exc):
        grad_enabled.reset(self._tokens.pop())
        if self._prev is not None and not self._tokens:
            grad_enabled.set(self._prev)
        return False

    def __call__(self, func):
        if self._prev is not None:
            grad_enabled.set(self._prev)
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(self.mode):
                return func(*args, **kwargs)
        return wrapper


class no_grad(set_grad_enabled):
    """Disable recording: ops run but build no graph.

    Use as ``with mg.no_grad():`` or as the decorator ``@mg.no_grad()``.
    """

    _mode = False

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Re-enable recording inside a ``no_grad`` region."""

    _mode = True

    def __init__(self):
        super().__init__(True)
