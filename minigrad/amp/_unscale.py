"""Unscaling a list of gradient arrays with one found-inf check (``GradScaler``'s arithmetic).

In place wherever that is safe (one multi-tensor kernel per dtype on the GPU, writing a flag the
scaler reuses every step), into new arrays elsewhere (``fused.unscale_and_check``); the values
are the same bit for bit either way. Separate from ``grad_scaler`` because it is pure array
work: no scaler state, no Tensors, no host read.
"""

from __future__ import annotations

import collections

import numpy as np

from .. import _backend as B
from .._backend import fused

__all__ = ["inplace_safe", "unscale_arrays"]


def _buffer(a):
    """The allocation ``a`` lives in (the same object for every view of it)."""
    if type(a) is np.ndarray:
        while isinstance(a.base, np.ndarray):
            a = a.base
        return a if a.base is None else a.base
    return a.data.mem


def inplace_safe(grads, in_graph):
    """Split gradient indices into those safe to unscale in place and the rest.

    In place only for an array that owns its memory, is writable and C-contiguous, is not part
    of a differentiable graph (``create_graph`` gradients), and shares its allocation with no
    other gradient of this call: the engine hands one gradient array to several leaves (``a +
    b`` gives both the same ``dy``) or views of one array (a reshape of it), and such an array
    would be unscaled twice. The arrays are alive during the call, so ids are unique.
    """
    # a NumPy array without a base is its own allocation: no walk up a chain of views
    keys = [id(g) if type(g) is np.ndarray and g.base is None else id(_buffer(g))
            for g in grads]
    counts = None if len(set(keys)) == len(keys) else collections.Counter(keys)
    inplace, copied = [], []
    device = None
    for i, g in enumerate(grads):
        if in_graph[i] or g.base is not None or (counts is not None and counts[keys[i]] > 1):
            copied.append(i)
            continue
        flags = g.flags
        ok = flags.c_contiguous and getattr(flags, "writeable", True)
        if ok:  # one device per multi-tensor launch; gradients elsewhere (rare) are copied
            d = "cpu" if type(g) is np.ndarray else B.device_of(g)
            device = d if device is None else device
            ok = d == device
        (inplace if ok else copied).append(i)
    return inplace, copied


def unscale_arrays(grads, inv, in_graph, flag_for):
    """Unscale ``grads``: in place where :func:`inplace_safe` allows, new arrays for the rest.

    Args:
        grads: the gradient arrays.
        inv: ``1 / scale``: a Python float (host path) or a 1-element float64 device array
            (sync-free path).
        in_graph: per gradient, whether it is part of a differentiable graph.
        flag_for: ``flag_for(array)`` gives the reusable 0-d int32 flag on ``array``'s device
            that the in-place kernel writes (reset by it first).

    Returns:
        ``(arrays, found)``: an array unscaled in place is returned as itself (and ``grads``
        itself when all were); ``found`` is a 0-d int32 device flag, nonzero when any unscaled
        value is inf/NaN.
    """
    # sync-free: the inverse scale is a device array; on NumPy it is used as a NumPy scalar
    # (no host read: a NumPy array is already on the host), CuPy kernels take it as a 0-d
    # device array.
    if type(inv) is np.ndarray:
        inv = inv[0]
    elif not isinstance(inv, float):
        inv = inv.reshape(())
    inplace, copied = inplace_safe(grads, in_graph)
    if not inplace:
        return fused.unscale_and_check(grads, inv)
    flag = flag_for(grads[inplace[0]])
    if not copied:  # the usual case: every gradient in place
        fused.unscale_inplace_and_check(grads, inv, flag)
        return grads, flag
    fused.unscale_inplace_and_check([grads[i] for i in inplace], inv, flag)
    out = list(grads)
    unscaled, found = fused.unscale_and_check([grads[i] for i in copied], inv)
    for i, u in zip(copied, unscaled):
        out[i] = u
    return out, flag | found.reshape(())
