"""Max pooling's window scan and gradient scatter on the CPU, in the optional C extension
``_parallel`` (``_pool.c``, ``setup.py``).

NumPy runs a max pool as one pass over the whole array per kernel offset (a comparison, an index
update and a maximum, each its own loop) and its gradient as fancy indexing through a computed
index array; LeNet-5's two pools cost about 0.9 ms of its 6-ms float32 training step that way
(batch 64, one thread). The extension does each output row's windows while the row is in cache
and looks the gradient's target up in a table of kernel offsets.

Same answer as ``functional/pooling.py``'s NumPy twin: offsets in C order, a strictly greater
element or a NaN takes the window (the first maximum and the last NaN win, as in PyTorch's CPU
loop), and the output is the input element at that offset, bit for bit. float16/bfloat16 are
compared as integer keys (no conversion, half the bytes of float32). Overlapping windows' gradients
are summed in window order (PyTorch's); the NumPy twin sums them phase by phase, so sums of three
or more may differ in the last bit. Each function returns None where the extension is not built,
the array is not a NumPy one, or the dtype or window (128 offsets or more) is not handled; the
caller then runs the NumPy twin. ``tests/test_pool_cpu.py`` checks both against each other.
"""

from __future__ import annotations

import numpy as np

from . import blas, casts
from .dtypes import bfloat16, float16

__all__ = ["AVAILABLE", "scan", "scans", "scatter"]

try:
    from . import _parallel
except ImportError:  # built without a C compiler: the NumPy twin in functional/pooling.py
    _parallel = None
AVAILABLE = _parallel is not None  # tests switch it off to check the NumPy twin

_SCAN_KINDS = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
               np.dtype(float16): "f16", np.dtype(bfloat16): "bf16"}
_ADD_KINDS = {np.dtype(np.float32): "add_f32", np.dtype(np.float64): "add_f64"}
_MAX_OFFSETS = 127  # kernel offsets are numbered in int8


def _threads(elements):
    """Worker threads for a pass over ``elements``: as many as BLAS would get for a GEMM that
    takes as long (an element of the 2x2 scan costs about what 32 flops of LeNet's GEMMs do)."""
    return blas.threads_for(32 * elements)


def scans(x) -> bool:
    """Whether ``scan`` takes the array ``x`` (its type and dtype), so that the caller pads it
    only then."""
    return AVAILABLE and type(x) is np.ndarray and x.dtype in _SCAN_KINDS


def scan(xpad, geometry):
    """``(window maxima, int8 kernel offset of each)`` of a padded ``xpad`` (planes, Hp, Wp)
    for ``geometry`` = (planes, Hp, Wp, OH, OW, kh, kw, sh, sw, dh, dw), both (planes, OH, OW)
    arrays; None where the NumPy twin must run."""
    kind = _SCAN_KINDS.get(xpad.dtype) if AVAILABLE and type(xpad) is np.ndarray else None
    if kind is None or geometry[5] * geometry[6] > _MAX_OFFSETS:
        return None
    planes, _, _, oh, ow = geometry[:5]
    best = np.empty((planes, oh, ow), dtype=xpad.dtype)
    idx = np.empty((planes, oh, ow), dtype=np.int8)
    _parallel.pool_scan(kind, np.ascontiguousarray(xpad), best, idx, geometry,
                        _threads(xpad.size))
    return best, idx


def scatter(gy, idx, geometry, acc_dtype, overlapping):
    """The zero-initialised (planes, Hp, Wp) array of ``acc_dtype`` with each output gradient
    of ``gy`` (planes, OH, OW) stored at (``overlapping``: added to) its window's maximum, which
    ``idx`` names by kernel offset; None where the NumPy twin must run."""
    if not AVAILABLE or type(gy) is not np.ndarray or idx.dtype != np.int8:
        return None
    if overlapping:
        kind = _ADD_KINDS.get(np.dtype(acc_dtype))
        gy = casts.to_dtype(gy, acc_dtype)  # exact: acc_dtype is as wide as gy's or wider
    else:
        kind = f"store{gy.itemsize}" if gy.dtype == acc_dtype and gy.itemsize in (2, 4, 8) else None
    if kind is None:
        return None
    acc = np.zeros(geometry[:3], dtype=acc_dtype)
    _parallel.pool_scatter(kind, np.ascontiguousarray(gy), np.ascontiguousarray(idx), acc,
                           geometry, _threads(acc.size))
    return acc
