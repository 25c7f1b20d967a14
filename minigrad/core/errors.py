"""Errors that name the op, the offending shapes/dtypes and the fix (shared by every floor)."""

from __future__ import annotations

import numpy as np

__all__ = ["broadcast_shape", "op_error"]


def op_error(op: str, message: str, **details) -> ValueError:
    """A ValueError that names the op, the offending shapes/dtypes, and the fix."""
    info = ", ".join(f"{k}={v}" for k, v in details.items())
    return ValueError(f"{op}: {message}" + (f" ({info})" if info else ""))


def broadcast_shape(op: str, *shapes) -> tuple:
    """The broadcast of ``shapes``; a ValueError naming ``op`` and every shape otherwise."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        shown = " and ".join(str(tuple(s)) for s in shapes)
        raise op_error(op, f"shapes {shown} cannot be broadcast together (aligned from the "
                       "right, each dimension must be equal or 1); reshape or expand one "
                       "operand") from None
