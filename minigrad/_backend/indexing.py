"""Index range checks and scatter-adds, the two places where NumPy and CuPy must differ.

A range check reads ``idx.min()``/``idx.max()`` back to the host. On NumPy that is free, so it
always runs: an out-of-range or negative embedding id must raise, not wrap around to the last
row. On CuPy the read is a device sync that stalls the CPU/GPU overlap and makes CUDA-graph
capture impossible, so there the check runs only in debug mode (``with index_debug():`` or the
environment variable ``MINIGRAD_DEBUG_INDEX=1``); otherwise CuPy's own clipping/wrapping applies.

Scatter-adds: NumPy's ``add.at`` is slow, so NumPy sums repeated targets with ``bincount`` over
the unique targets; CuPy has a native atomic add (``cupyx.scatter_add``) that needs neither the
``unique`` (a sort plus a host read of its size) nor a float64 buffer.
"""

from __future__ import annotations

import contextlib
import os
from contextvars import ContextVar

import numpy as np

from .dtypes import float64

__all__ = ["poison", "IndexOutOfRange", "index_debug", "host_checks", "check_index_range",
           "scatter_add_flat", "scatter_add_rows"]

_debug: ContextVar[bool] = ContextVar(
    "minigrad_index_debug", default=os.environ.get("MINIGRAD_DEBUG_INDEX", "") not in ("", "0"))


class IndexOutOfRange(IndexError, ValueError):
    """An index outside its dimension: an ``IndexError`` as in PyTorch, and a ``ValueError``
    like minigrad's other bad-input errors."""


@contextlib.contextmanager
def index_debug(enabled: bool = True):
    """Check index ranges on the GPU too (one device sync per indexing op), inside the block."""
    token = _debug.set(enabled)
    try:
        yield
    finally:
        _debug.reset(token)


def host_checks(xp) -> bool:
    """Whether value checks that read an array back to the host run (NumPy, or debug mode)."""
    return xp is np or _debug.get()


def check_index_range(xp, idx, n: int, op: str, allow_negative: bool = True,
                      dim_name: str = "a dimension"):
    """Raise if an integer index array has entries outside ``[-n, n)`` (``[0, n)`` when
    ``allow_negative`` is False); return ``(index, bad)``: the index with negative entries
    wrapped to ``>= 0``, and None.

    Out-of-range indices must not reach a bincount-based scatter, which would silently write
    into the wrong element. On CuPy the host-side check runs only under :func:`index_debug`;
    without it nothing is read back: the index comes back clipped into range and ``bad`` is the
    device mask of the out-of-range entries, for the op to poison its float output with
    (:func:`poison`), as PyTorch's device assert would stop it.
    """
    if idx.dtype.kind not in "iu":
        raise ValueError(f"{op}: index must be an integer array, got {idx.dtype}; cast it with "
                         ".astype('int64')")
    if not idx.size:
        return idx, None
    if not host_checks(xp):
        low = -n if allow_negative else 0
        bad = (idx < low) | (idx >= n)
        if allow_negative and idx.dtype.kind == "i":
            idx = xp.where(idx < 0, idx + n, idx)
        return xp.clip(idx, 0, n - 1), bad
    lo, hi = int(idx.min()), int(idx.max())
    low = -n if allow_negative else 0
    if lo < low or hi >= n:
        bad = lo if lo < low else hi
        raise IndexOutOfRange(
            f"{op}: index {bad} is out of range for {dim_name} of size {n} (indices span "
            f"[{lo}, {hi}]; valid: [{low}, {n - 1}]); check the ids against the table/axis size")
    if lo < 0:
        idx = xp.where(idx < 0, idx + n, idx)
    return idx, None


def poison(xp, out, bad):
    """``out`` with NaN where ``bad`` (broadcast) is set, for float outputs; ``out`` as is when
    ``bad`` is None (checked on the host) or the output holds integers (no NaN to write)."""
    if bad is None or out.dtype.kind != "f" and out.dtype.kind != "V":
        return out
    return xp.where(bad, out.dtype.type(np.nan), out)


def _cupy_scatter_add(xp, shape, target, values, dtype):
    import cupyx  # only reached with CuPy arrays

    # float16 atomics would round every partial sum: accumulate in float32, round once.
    acc = np.dtype(np.float32) if dtype.kind == "f" and dtype.itemsize < 4 else dtype
    out = xp.zeros(shape, dtype=acc)
    cupyx.scatter_add(out, target, values.astype(acc, copy=False))
    return out.astype(dtype, copy=False)


def scatter_add_flat(xp, size: int, lin, values, dtype):
    """``out = zeros(size); out[lin] += values`` with repeated indices accumulating."""
    lin = lin.reshape(-1)
    if xp is not np:
        return _cupy_scatter_add(xp, size, lin, values.reshape(-1), np.dtype(dtype))
    out = np.zeros(size, dtype=dtype)
    if lin.size == 0:
        return out
    uniq, inv = np.unique(lin, return_inverse=True)
    # Compacting to the unique targets keeps the float64 buffer the size of ``values``.
    sums = np.bincount(inv.reshape(-1), weights=values.reshape(-1).astype(float64, copy=False),
                       minlength=uniq.size)
    out[uniq] = sums.astype(dtype, copy=False)
    return out


def scatter_add_rows(xp, n_rows: int, rows, values, dtype):
    """``out = zeros((n_rows,) + values.shape[1:]); out[rows] += values`` (rows may repeat)."""
    tail = values.shape[1:]
    width = int(np.prod(tail, dtype=np.int64)) if tail else 1
    rows = rows.reshape(-1)
    if xp is not np:
        out = _cupy_scatter_add(xp, (n_rows, width), rows, values.reshape(rows.size, width),
                                np.dtype(dtype))
        return out.reshape((n_rows,) + tail)
    out = np.zeros((n_rows, width), dtype=dtype)
    if rows.size:
        uniq, inv = np.unique(rows, return_inverse=True)
        lin = inv.reshape(-1, 1) * width + np.arange(width)
        sums = np.bincount(lin.reshape(-1),
                           weights=values.reshape(-1).astype(float64, copy=False),
                           minlength=uniq.size * width)
        out[uniq] = sums.reshape(uniq.size, width).astype(dtype, copy=False)
    return out.reshape((n_rows,) + tail)
