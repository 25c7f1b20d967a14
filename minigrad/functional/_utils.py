"""Helpers shared by the op families (not public API)."""

from __future__ import annotations

from ..tensor import Tensor


def sum_to_shape(g: Tensor, shape: tuple) -> Tensor:
    """Reduce a broadcast gradient back to ``shape`` (differentiable, for create_graph)."""
    if g.shape == shape:
        return g
    from .reduction import sum as _sum

    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = _sum(g, axes, keepdims=True)
    if lead:
        g = g.reshape(shape)
    return g


def shape_of(x) -> tuple:
    """Shape of a Tensor or of a Python scalar (``()``)."""
    return x.shape if isinstance(x, Tensor) else ()


def op_error(op: str, message: str, **details) -> ValueError:
    """A ValueError that names the op, the offending shapes/dtypes, and the fix."""
    info = ", ".join(f"{k}={v}" for k, v in details.items())
    return ValueError(f"{op}: {message}" + (f" ({info})" if info else ""))
