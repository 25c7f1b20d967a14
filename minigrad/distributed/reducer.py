"""Gradient buckets: many gradients flattened into one buffer, reduced by one collective.

Shared by ``DistributedDataParallel`` (buckets fixed at construction, launched during backward
as they fill) and ``make_allreduce_cb`` (buckets filled in attach order by the GradManager
callback). A bucket is reduced as a sum with a non-blocking collective and averaged once it is
waited for. With ``grad_dtype`` the buffer is float16/bfloat16 (ChainerMN's
``allreduce_grad_dtype``): half the bytes on the wire; an overflow of the compressed sum becomes
inf, which the loss scaler's check catches.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .. import _backend as B
from .._backend.dtypes import normalize_dtype
from ..core.tensor import Tensor

__all__ = ["Bucket", "ParamReducer", "Stats", "plan", "resolve_grad_dtype"]


def resolve_grad_dtype(grad_dtype):
    """None, or the NumPy dtype of a compressed reduction (``"float16"``/``"bfloat16"``)."""
    if grad_dtype is None:
        return None
    dt = normalize_dtype(grad_dtype)
    if dt not in (B.float16, B.bfloat16):
        raise ValueError(f"grad_dtype must be None, 'float16' or 'bfloat16', got {grad_dtype!r}")
    return dt


class Stats:
    """Seconds spent in collectives (launching plus waiting) and how many were launched."""

    def __init__(self):
        self.comm_seconds = 0.0
        self.collectives = 0

    def reset(self):
        self.comm_seconds = 0.0
        self.collectives = 0


class Bucket:
    """Consecutive gradients of one device and dtype, reduced as one flat buffer."""

    def __init__(self, dtype, device):
        self.dtype = dtype          # the gradients' dtype (what they get back)
        self.device = device
        self.items: list = []      # (tensor, offset, size, shape)
        self.numel = 0
        self.flat = None
        self.work = None
        self._spare = None          # last step's buffer, reused once nothing refers to it

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def add(self, t: Tensor) -> None:
        self.items.append((t, self.numel, t.size, t.shape))
        self.numel += t.size

    def launch(self, group, grads, wire_dtype, stats: Stats) -> None:
        """Copy ``grads`` (arrays or None for zeros, one per item) into one buffer of
        ``wire_dtype`` and start its sum over the ranks."""
        t0 = time.perf_counter()
        xp = B.get_array_module(next((g for g in grads if g is not None), self.items[0][0]._data))
        dtype = wire_dtype or self.dtype
        # Reuse last step's NumPy buffer when no gradient view of it is alive any more (views
        # hold their base, so then its only references are ``flat`` and getrefcount's argument):
        # a fresh multi-MB buffer costs page faults every step, and one still referenced must
        # never be overwritten. CuPy's pool already recycles device memory.
        flat, self._spare = self._spare, None
        # After the gradients, one slot per item counts the ranks that had its gradient: a
        # parameter no rank used keeps grad None, as in PyTorch's DDP (not a zero gradient that
        # weight decay or momentum would then apply).
        size = self.numel + len(self.items)
        if flat is None or xp is not np or sys.getrefcount(flat) > 2 or flat.dtype != dtype \
                or flat.size != size:
            flat = xp.empty(size, dtype)
        self.local_missing = False
        flat[self.numel:] = 1   # one write for the slots, not a GPU launch per item
        with np.errstate(over="ignore"):  # a compressed overflow is inf, for the scaler to see
            for i, ((_, off, n, _), g) in enumerate(zip(self.items, grads)):
                if g is None:
                    flat[off:off + n] = 0
                    flat[self.numel + i] = 0
                    self.local_missing = True
                else:
                    flat[off:off + n] = g.reshape(-1)
        self.flat = flat
        self.work = group.for_array(flat).iallreduce(flat, "sum")
        stats.comm_seconds += time.perf_counter() - t0
        stats.collectives += 1

    def wait(self, world: int, stats: Stats) -> list:
        """Finish the reduction; the averaged gradients, one array per item (views), None for
        an item no rank had a gradient for."""
        t0 = time.perf_counter()
        self.work.wait()
        stats.comm_seconds += time.perf_counter() - t0
        flat = self._spare = self.flat
        # Only a rank that lacked a gradient needs the counts (a host read on the GPU): where
        # it had every gradient, every parameter was used somewhere.
        unused = (B.to_device(flat[self.numel:], "cpu") == 0) if self.local_missing else None
        if flat.dtype != self.dtype:
            flat = flat.astype(self.dtype)
        flat /= self.dtype.type(world)
        self.flat = self.work = None
        return [None if unused is not None and unused[i] else flat[off:off + n].reshape(shape)
                for i, (_, off, n, shape) in enumerate(self.items)]


def plan(params, cap_bytes: int) -> list:
    """Buckets for ``params`` in reverse order (backward reaches the last layers first), split
    by device and dtype and whenever a bucket reaches ``cap_bytes`` (0: one per tensor)."""
    buckets: list = []
    open_: dict = {}
    for p in reversed(params):
        key = (p.device, p.dtype)
        b = open_.get(key)
        if b is None:
            b = open_[key] = Bucket(p.dtype, p.device)
            buckets.append(b)
        b.add(p)
        if b.nbytes >= cap_bytes:
            del open_[key]
    return buckets


class ParamReducer:
    """The backward hook of ``DistributedDataParallel`` (``engine.register_grad_ready_hook``).

    Buckets are fixed at construction. During an accumulating backward the engine calls
    ``ready(p)`` when ``p.grad`` is final; a bucket whose parameters are all ready starts its
    all-reduce at once (buckets start in a fixed order, as MPI needs the same collective order
    on every rank), and ``finish()`` at the end of backward launches what is left (a parameter
    that got no gradient contributes zeros), waits for everything once and writes the averaged
    gradients back into ``p.grad``.

    Args:
        params: the parameters to reduce (the same list, in the same order, on every rank).
        group: the process group.
        cap_bytes: bucket size; 0 makes one bucket per parameter.
        wire_dtype: None, or float16/bfloat16 for a compressed reduction.
        overlap: start buckets during backward; False waits until the end and runs one
            blocking collective per bucket (the baseline that bucketing and overlap beat).
    """

    def __init__(self, params, group, cap_bytes: int, wire_dtype=None, overlap: bool = True):
        self.group = group
        self.buckets = plan(params, cap_bytes)
        self.watched = {id(p): p for p in params}
        self._bucket_of = {id(t): b for b in self.buckets for t, *_ in b.items}
        self.wire_dtype = wire_dtype
        self.overlap = overlap
        self.active = True
        self.stats = Stats()
        self.begin()

    def begin(self) -> None:
        for b in self.buckets:
            b.pending = len(b.items)
        self._next = 0

    def ready(self, p) -> None:
        b = self._bucket_of[id(p)]
        b.pending -= 1
        if self.overlap:
            for i in range(self._next):  # keep the launched reductions moving
                self.buckets[i].work.progress()
            while self._next < len(self.buckets) and self.buckets[self._next].pending == 0:
                self._launch(self.buckets[self._next])
                self._next += 1

    def _launch(self, b) -> None:
        grads = [t.grad._data if t.grad is not None else None for t, *_ in b.items]
        b.launch(self.group, grads, self.wire_dtype, self.stats)

    def finish(self) -> None:
        world = self.group.size
        for b in self.buckets[self._next:]:
            self._launch(b)
            if not self.overlap:  # the baseline: one blocking collective at a time
                self._write_back(b, world)
        if self.overlap:
            for b in self.buckets:
                self._write_back(b, world)
        self.begin()

    def _write_back(self, b, world) -> None:
        for (t, *_), g in zip(b.items, b.wait(world, self.stats)):
            t.grad = None if g is None else Tensor._make(g, False, None, 0)
