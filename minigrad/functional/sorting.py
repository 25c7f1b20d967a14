"""Sorting and order statistics: sort, argsort, topk, kthvalue, median, mode.

Each op picks, per slice along one axis, positions of the input; its values are the input at
those positions and their gradient is scattered back to them (a ``gather``'s backward, so double
backward works). Indices are int64 and never require grad. Ties and NaN follow PyTorch: sorts
are stable, NaN sorts as the largest value, ``median`` of a slice holding NaN is NaN (at the
first NaN), ``mode`` is the smallest of the most frequent values (at its last occurrence).

The functions here are ``minigrad.functional``'s spellings, which are MegEngine's where
MegEngine has the op (``F.sort(x, descending, dim)``, ``F.topk(x, k, descending=True)``,
``F.argsort(x, descending)``). PyTorch's spellings (``x.sort(dim)``, ``x.topk(k)``,
``x.max(dim)`` -> ``(values, indices)``, ``x.median()``...) are the ``torch_*`` functions below,
which the Tensor methods call; both run the same Functions.
"""

from __future__ import annotations

import collections

import numpy as np

from .._backend import get_array_module
from .._backend.dtypes import bfloat16, float16, float32, int64
from ..core.function import Function
from ..core.tensor import Tensor
from ._axes import check_axis, one_of
from ._utils import const, op_error, to_dtype
from .elementwise import maximum as _maximum
from .elementwise import minimum as _minimum
from .reduction import max as _max
from .reduction import min as _min
from .shape import GatherBackward

__all__ = ["argsort", "kthvalue", "median", "mode", "sort", "topk"]


def _pair(name: str):
    cls = collections.namedtuple(name, ["values", "indices"])
    cls.__module__ = "minigrad.return_types"
    cls.__doc__ = f"PyTorch's ``torch.return_types.{name}``: ``(values, indices)``."
    return cls


# PyTorch's torch.return_types: tuples (they unpack as ``values, indices``) with named fields.
return_types = type("return_types", (), {n: _pair(n) for n in (
    "max", "min", "sort", "topk", "kthvalue", "median", "mode")})


def _order_array(x):
    """``x`` in a dtype every backend sorts (float16/bfloat16 widen exactly to float32)."""
    return to_dtype(x, float32) if x.dtype in (float16, bfloat16) else x


def _argsort(xp, x, axis, descending):
    """Stable argsort along ``axis``; NaN last ascending, first descending (PyTorch)."""
    x = _order_array(x)
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable").astype(int64, copy=False)
    # Descending and stable: sort the reversed slice ascending (equal values then come in
    # reverse order), reverse that order and map the positions back.
    n = x.shape[axis]
    rev = xp.argsort(xp.flip(x, axis), axis=axis, kind="stable")
    return (n - 1 - xp.flip(rev, axis)).astype(int64, copy=False)


def _mode_positions(xp, x, axis):
    """Per slice along ``axis`` (kept, length 1): the position of the mode (the smallest of the
    most frequent values, at its last occurrence)."""
    x = _order_array(xp.moveaxis(x, axis, -1))
    rows_shape, n = x.shape[:-1], x.shape[-1]
    flat = x.reshape(-1, n)
    order = xp.argsort(flat, axis=-1, kind="stable")
    s = xp.take_along_axis(flat, order, axis=-1)
    # Runs of equal values; the NaNs (sorted last) are one run, as PyTorch's CPU mode counts
    # them ([nan, nan, 1] has the mode NaN).
    first = xp.ones(flat.shape, dtype=bool)
    first[:, 1:] = s[:, 1:] != s[:, :-1]
    if s.dtype.kind == "f":
        first[:, 1:] &= ~(xp.isnan(s[:, 1:]) & xp.isnan(s[:, :-1]))
    last = xp.ones(flat.shape, dtype=bool)
    last[:, :-1] = first[:, 1:]
    run = xp.cumsum(first.reshape(-1)) - 1           # global run id of every element
    starts = xp.nonzero(first.reshape(-1))[0]
    ends = xp.nonzero(last.reshape(-1))[0]
    count = (ends[run] - starts[run]).reshape(flat.shape)
    best = xp.argmax(count == count.max(axis=-1, keepdims=True), axis=-1)  # smallest value
    rows = xp.arange(flat.shape[0])
    end = ends[run.reshape(flat.shape)[rows, best]] - rows * n  # its run's last element ...
    pos = order[rows, end]                                      # ... at its last occurrence
    return xp.moveaxis(pos.reshape(rows_shape + (1,)), -1, axis)


class _Selection(Function):
    """Base: ``forward`` returns ``(values, indices)``; values are ``x`` at the chosen
    positions along ``axis``, so the gradient is scattered back to those positions."""

    reduces = False  # kthvalue/median/mode pick one position per slice (the axis goes)

    def forward(self, x, axis, keepdims=True, **kw):
        xp = get_array_module(x)
        self.in_shape, self.axis, self.keepdims = x.shape, axis, keepdims
        idx = self._positions(xp, x, axis, **kw)
        self.idx = idx
        values = xp.take_along_axis(x, idx, axis=axis)
        if self.reduces and not keepdims:
            values, idx = xp.squeeze(values, axis), xp.squeeze(idx, axis)
        return values, idx

    def backward(self, gy, _gi):
        if self.reduces and not self.keepdims:
            gy = gy.reshape(self.idx.shape)
        return GatherBackward.apply(gy, const(self.idx), axis=self.axis, shape=self.in_shape)


class SortFunction(_Selection):
    name = "sort"

    def _positions(self, xp, x, axis, descending):
        return _argsort(xp, x, axis, descending)


class TopKFunction(_Selection):
    name = "topk"

    def _positions(self, xp, x, axis, k, largest):
        order = _argsort(xp, x, axis, largest)
        return xp.take(order, xp.arange(k), axis=axis)


class KthvalueFunction(_Selection):
    name = "kthvalue"
    reduces = True

    def _positions(self, xp, x, axis, k):
        return xp.take(_argsort(xp, x, axis, False), xp.arange(k - 1, k), axis=axis)


class MedianFunction(_Selection):
    name = "median"
    reduces = True

    def _positions(self, xp, x, axis):
        order = _argsort(xp, x, axis, False)
        n = x.shape[axis]
        pos = xp.full(x.shape[:axis] + (1,) + x.shape[axis + 1:], (n - 1) // 2, dtype=int64)
        if x.dtype.kind == "f" or x.dtype == bfloat16:
            # A slice holding NaN has the median NaN, at its first NaN (sorted last, stable).
            nans = xp.isnan(_order_array(x)).sum(axis=axis, keepdims=True)
            pos = xp.where(nans > 0, n - nans, pos)
        return xp.take_along_axis(order, pos, axis=axis)


class ModeFunction(_Selection):
    name = "mode"
    reduces = True

    def _positions(self, xp, x, axis):
        return _mode_positions(xp, x, axis)


class ArgsortFunction(Function):
    name = "argsort"

    def forward(self, x, axis, descending):
        return _argsort(get_array_module(x), x, axis, descending)

    def backward(self, gy):
        return None


# ----------------------------------------------------------------------------- helpers
def _axis_of(x: Tensor, axis, op: str) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{op}: dim must be one int, got {axis!r}")
    return check_axis(int(axis), x.ndim, op) if x.ndim else 0


def _select(cls, x: Tensor, axis, op: str, result, keepdims=True, **kw):
    """Run selection ``cls`` along ``axis``; a 0-d ``x`` is one slice of one element."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    axis = _axis_of(x, axis, op)
    if x.ndim == 0:
        v, i = cls.apply(x.reshape((1,)), axis=0, keepdims=True, **kw)
        return result(v.reshape(()), i.reshape(()))
    return result(*cls.apply(x, axis=axis, keepdims=bool(keepdims), **kw))


def _dim(op, dim, axis):
    """``dim`` (default -1), or ``axis``, its NumPy/MegEngine spelling; not both."""
    if axis is None:
        return -1 if dim is None else dim
    if dim not in (None, -1):
        one_of(op, axis, dim)  # raises: both given
    return axis


def _check_k(op, k):
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{op}: k must be an int, got {k!r}")
    return int(k)


def _nonempty(op, x, axis):
    n = x.shape[axis] if x.ndim else 1
    if n == 0:
        raise op_error(op, "cannot select from an empty dimension", shape=x.shape, axis=axis)
    return n


# ----------------------------------------------------------------------------- F spellings
def sort(x: Tensor, descending: bool = False, dim: int = -1, *, axis=None, stable=None):
    """Sort along ``dim`` (MegEngine's ``F.sort(inp, descending=False, dim=-1)``).

    Returns:
        ``(values, indices)`` (a named tuple); indices are int64 positions along ``dim``.
        The sort is stable; NaN sorts as the largest value.
    """
    return _select(SortFunction, x, _dim("sort", dim, axis), "sort", return_types.sort,
                   descending=bool(descending))


def argsort(x: Tensor, descending: bool = False, dim: int = -1, *, axis=None,
            stable=None) -> Tensor:
    """Positions (int64) that sort ``x`` along ``dim`` (MegEngine's ``F.argsort(inp,
    descending=False)``); stable, NaN largest."""
    dim = _axis_of(x, _dim("argsort", dim, axis), "argsort")
    if x.ndim == 0:
        return ArgsortFunction.apply(x.reshape((1,)), axis=0, descending=bool(descending)
                                     ).reshape(())
    return ArgsortFunction.apply(x, axis=dim, descending=bool(descending))


def topk(x: Tensor, k: int, descending: bool = True, kth_only: bool = False,
         no_sort: bool = False, *, dim: int = -1):
    """The ``k`` largest (``descending=True``, MegEngine's default) or smallest entries along
    ``dim`` (the last axis), sorted.

    Args:
        x: input.
        k: how many.
        descending: True for the largest, False for the smallest.
        kth_only: return only the ``k``-th of them (the axis goes away).
        no_sort: MegEngine's permission to return them unordered (they come sorted anyway).
        dim: the axis (PyTorch's ``dim``; MegEngine's topk is always the last axis).

    Returns:
        ``(values, indices)``.
    """
    axis = _axis_of(x, dim, "topk")
    n = _nonempty("topk", x, axis)
    k = _check_k("topk", k)
    if not 0 < k <= n if kth_only else not 0 <= k <= n:
        raise op_error("topk", f"k={k} is out of range for a dimension of size {n}",
                       shape=x.shape, axis=axis)
    if kth_only:
        v, i = _select(TopKFunction, x, axis, "topk", return_types.topk, k=k,
                       largest=bool(descending))
        if v.ndim == 0:
            return return_types.topk(v, i)
        return return_types.topk(v.index_select(axis, k - 1).squeeze(axis),
                                 i.index_select(axis, k - 1).squeeze(axis))
    return _select(TopKFunction, x, axis, "topk", return_types.topk, k=k,
                   largest=bool(descending))


def kthvalue(x: Tensor, k: int, axis: int = -1, keepdims: bool = False):
    """The ``k``-th smallest entry (1-based) along ``axis``: ``(values, indices)``."""
    ax = _axis_of(x, axis, "kthvalue")
    n = _nonempty("kthvalue", x, ax)
    k = _check_k("kthvalue", k)
    if not 1 <= k <= n:
        raise op_error("kthvalue", f"k={k} is out of range for a dimension of size {n} "
                       "(k counts from 1)", shape=x.shape, axis=ax)
    return _select(KthvalueFunction, x, ax, "kthvalue", return_types.kthvalue, keepdims, k=k)


def median(x: Tensor, axis=None, keepdims: bool = False):
    """The lower median (PyTorch's): of all elements (a Tensor) when ``axis`` is None, else
    ``(values, indices)`` along ``axis``. NaN anywhere in a slice makes its median NaN."""
    if axis is None:
        if keepdims:
            raise TypeError("median: keepdims needs an axis")
        flat = x.reshape((-1,))
        _nonempty("median", flat, 0)
        return _select(MedianFunction, flat, 0, "median", return_types.median, False).values
    ax = _axis_of(x, axis, "median")
    _nonempty("median", x, ax)
    return _select(MedianFunction, x, ax, "median", return_types.median, keepdims)


def mode(x: Tensor, axis: int = -1, keepdims: bool = False):
    """The most frequent value along ``axis`` (the smallest of them on a tie), at its last
    occurrence: ``(values, indices)``."""
    ax = _axis_of(x, axis, "mode")
    _nonempty("mode", x, ax)
    return _select(ModeFunction, x, ax, "mode", return_types.mode, keepdims)


# ----------------------------------------------------------------------------- PyTorch
def torch_sort(input: Tensor, dim: int = -1, descending: bool = False, *,  # noqa: A002
               stable: bool = False, axis=None):
    """``torch.sort`` / ``Tensor.sort(dim=-1, descending=False, stable=False)``."""
    return sort(input, descending, -1 if dim is None else dim, axis=axis)


def torch_argsort(input: Tensor, dim: int = -1, descending: bool = False, *,  # noqa: A002
                  stable: bool = False, axis=None) -> Tensor:
    """``torch.argsort`` / ``Tensor.argsort(dim=-1, descending=False, stable=False)``."""
    return argsort(input, descending, -1 if dim is None else dim, axis=axis)


def torch_topk(input: Tensor, k: int, dim: int = -1, largest: bool = True,  # noqa: A002
               sorted: bool = True):  # noqa: A002
    """``torch.topk`` / ``Tensor.topk(k, dim=-1, largest=True, sorted=True)``."""
    return topk(input, k, descending=largest, dim=-1 if dim is None else dim)


def torch_kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """``torch.kthvalue`` / ``Tensor.kthvalue(k, dim=-1, keepdim=False)``."""
    return kthvalue(input, k, -1 if dim is None else dim, keepdim)


def torch_median(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A002
    """``torch.median``: the lower median of all elements, or ``(values, indices)`` along
    ``dim``."""
    return median(input, dim, keepdim)


def torch_mode(input: Tensor, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """``torch.mode`` / ``Tensor.mode(dim=-1, keepdim=False)``."""
    return mode(input, -1 if dim is None else dim, keepdim)


def _torch_extremum(op, reduce, pairwise, result, input, dim, keepdim, axis, keepdims, other):
    dim = one_of(op, dim, axis)
    keep = one_of(op, keepdim, keepdims, ("keepdim", "keepdims"))
    if isinstance(dim, Tensor) or other is not None:   # torch.max(a, b): elementwise
        if keep is not None:
            raise TypeError(f"{op}(input, other) is elementwise and takes no keepdim")
        return pairwise(input, one_of(op, dim, other, ("other", "other")))
    if dim is None:
        if keep:
            raise TypeError(f"{op}: keepdim needs a dim")
        return reduce(input)
    if isinstance(dim, (tuple, list)):
        # PyTorch refuses several dims here (amax takes them); MegEngine reduces them all and
        # returns the values, which is what this gives.
        return reduce(input, tuple(dim), bool(keep))
    return result(*reduce(input, _axis_of(input, dim, op), bool(keep), return_indices=True))


def torch_max(input: Tensor, dim=None, keepdim=None, *, axis=None, keepdims=None,  # noqa: A002
              other=None):
    """``torch.max`` / ``Tensor.max``: the maximum of all elements; ``(values, indices)``
    along one ``dim`` (a named tuple, so ``_, pred = out.max(1)`` works); the elementwise
    maximum with another Tensor (``torch.max(a, b)``)."""
    return _torch_extremum("max", _max, _maximum, return_types.max, input, dim, keepdim, axis,
                           keepdims, other)


def torch_min(input: Tensor, dim=None, keepdim=None, *, axis=None, keepdims=None,  # noqa: A002
              other=None):
    """``torch.min`` / ``Tensor.min``: like :func:`torch_max`."""
    return _torch_extremum("min", _min, _minimum, return_types.min, input, dim, keepdim, axis,
                           keepdims, other)
