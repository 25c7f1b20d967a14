"""Axis arguments checked the PyTorch way (not public API).

A bad axis raises :class:`DimensionOutOfRange` -- an ``IndexError`` like PyTorch's "Dimension out
of range", and a ``ValueError`` like minigrad's other bad-input errors -- naming the op, the
tensor's rank and the valid range, instead of NumPy's ``AxisError`` from deep inside a kernel.
A 0-d tensor accepts axis 0 and -1 (PyTorch treats it as having one dimension of size 1).
"""

from __future__ import annotations

__all__ = ["DimensionOutOfRange", "check_axis", "one_of", "reduction_axes"]


class DimensionOutOfRange(IndexError, ValueError):
    """An axis outside ``[-ndim, ndim)``."""


def check_axis(axis, ndim: int, op: str) -> int:
    """``axis`` as a non-negative int in ``[0, max(ndim, 1))``, or a clear error."""
    n = max(ndim, 1)
    if isinstance(axis, bool) or not isinstance(axis, int):
        try:
            axis = axis.__index__()
        except (AttributeError, TypeError):
            raise TypeError(f"{op}: axis must be an int, got {type(axis).__name__} "
                            f"{axis!r}") from None
    if not -n <= axis < n:
        raise DimensionOutOfRange(
            f"{op}: axis {axis} is out of range for a {ndim}-D tensor -- Dimension out of "
            f"range (expected to be in range of [{-n}, {n - 1}], but got {axis}); pick an axis "
            "of the input")
    return axis % n


def reduction_axes(axis, ndim: int, op: str) -> tuple:
    """Sorted tuple of the axes a reduction runs over (all for None; none for a 0-d tensor)."""
    if axis is None:
        return tuple(range(ndim))
    many = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = [check_axis(a, ndim, op) for a in many]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: axis {axis} repeats a dimension of the {ndim}-D input; list "
                         "each axis once")
    return tuple(sorted(axes)) if ndim else ()


def one_of(op: str, value, alias, names=("axis", "dim")):
    """``value``, or its other spelling ``alias`` when that was given instead (None: not given).

    minigrad's ``axis``/``keepdims`` (NumPy's and MegEngine's) and PyTorch's ``dim``/``keepdim``
    are one argument; giving both is an error, even with equal values.
    """
    if alias is None:
        return value
    if value is not None:
        raise TypeError(f"{op}: got both {names[0]}={value!r} and {names[1]}={alias!r}; they "
                        f"are one argument ({names[1]} is PyTorch's spelling of {names[0]}): "
                        "pass one of them")
    return alias
