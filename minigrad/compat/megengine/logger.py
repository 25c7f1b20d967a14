"""MegEngine's ``megengine.logger``: ``get_logger(name)`` and the level switches, over Python's
``logging`` (importable as ``minigrad.logger``).

``get_logger`` configures a logger once, as MegEngine's does: one stream handler (stderr) with a
time-stamped format, level INFO (or what :func:`set_log_level` chose), and no propagation to the
root logger (so a configured root does not print each line twice).

Example:
    >>> import minigrad as mg
    >>> log = mg.logger.get_logger(__name__)
    >>> log.level == mg.logger.get_logger(__name__).level
    True
"""

from __future__ import annotations

import logging

__all__ = ["enable_debug_log", "get_logger", "set_log_level"]

_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
_level = [logging.INFO]
_configured: list = []  # the loggers get_logger set up (set_log_level updates them all)


def get_logger(name: str | None = None, formatter=None) -> logging.Logger:
    """The logger ``name`` (``"minigrad"`` for None), configured on first request.

    Args:
        name: the logger's name, usually ``__name__``.
        formatter: a ``logging.Formatter`` (class or instance) for its handler; a time-stamped
            one by default.
    """
    logger = logging.getLogger(name or "minigrad")
    if logger not in _configured:
        handler = logging.StreamHandler()
        if isinstance(formatter, type):
            formatter = formatter()
        handler.setFormatter(formatter or logging.Formatter(_FORMAT, datefmt="%d %H:%M:%S"))
        logger.handlers = [h for h in logger.handlers if not getattr(h, "_minigrad", False)]
        handler._minigrad = True
        logger.addHandler(handler)
        logger.setLevel(_level[0])
        logger.propagate = False
        _configured.append(logger)
    return logger


def set_log_level(level, update_existing: bool = True) -> None:
    """Level of the loggers :func:`get_logger` makes (``"INFO"``, ``logging.DEBUG``, ...), and
    of those it already made when ``update_existing``."""
    _level[0] = logging.getLevelName(level) if isinstance(level, str) else int(level)
    if not isinstance(_level[0], int):
        raise ValueError(f"set_log_level: unknown level {level!r}")
    if update_existing:
        for logger in _configured:
            logger.setLevel(_level[0])


def enable_debug_log() -> None:
    """``set_log_level(logging.DEBUG)``."""
    set_log_level(logging.DEBUG)
