"""MegEngine's spellings: ``make_allreduce_cb`` for ``GradManager.attach`` and ``bcast_list_``."""

from __future__ import annotations

from ..core.tensor import Tensor
from . import process_group
from .reducer import Bucket, Stats, resolve_grad_dtype

__all__ = ["make_allreduce_cb", "bcast_list_", "AllreduceCallback"]


class AllreduceCallback:
    """A GradManager callback that reduces gradients across ranks in buckets.

    Each ``cb(param, grad)`` call adds ``grad`` to the open bucket and returns a Tensor that
    receives the reduced gradient; a full bucket starts its non-blocking all-reduce at once.
    ``GradManager`` calls ``flush()`` after the last parameter: it launches the rest and waits
    for all of them once. Put it last among a parameter's callbacks (a callback after it would
    see the gradient before the reduction).
    """

    def __init__(self, reduce_method: str = "mean", bucket_cap_mb: float = 25,
                 grad_dtype=None):
        if reduce_method not in ("mean", "sum"):
            raise ValueError(f"make_allreduce_cb: reduce_method must be 'mean' or 'sum', got "
                             f"{reduce_method!r}")
        self.reduce_method = reduce_method
        self.cap_bytes = int(bucket_cap_mb * 2 ** 20)
        self.wire_dtype = resolve_grad_dtype(grad_dtype)
        self.stats = Stats()
        self._open: dict = {}
        self._launched: list = []

    def __call__(self, param, grad):
        _group = process_group._group
        if _group is None or _group.size == 1:
            return grad
        key = (grad.device, grad.dtype)
        b = self._open.get(key)
        if b is None:
            b = self._open[key] = Bucket(grad.dtype, grad.device)
            b.grads, b.outs = [], []
        out = Tensor._make(grad._data, False, None, 0)  # filled in by flush()
        b.add(grad)
        b.grads.append(grad._data)
        b.outs.append(out)
        if b.nbytes >= self.cap_bytes:
            self._launch(key)
        return out

    def _launch(self, key):
        _group = process_group._group
        b = self._open.pop(key)
        b.launch(_group, b.grads, self.wire_dtype, self.stats)
        b.grads = None
        self._launched.append(b)

    def flush(self) -> None:
        _group = process_group._group
        for key in list(self._open):
            self._launch(key)
        launched, self._launched = self._launched, []
        world = 1 if self.reduce_method == "sum" else _group.size if _group else 1
        for b in launched:
            for out, g in zip(b.outs, b.wait(world, self.stats)):
                out._data = g


def make_allreduce_cb(reduce_method: str = "mean", bucket_cap_mb: float = 25,
                      grad_dtype=None) -> AllreduceCallback:
    """A callback for ``GradManager().attach(params, callbacks=[...])`` that all-reduces the
    gradients across ranks, bucketed (MegEngine's ``dist.make_allreduce_cb``).

    Args:
        reduce_method: ``"mean"`` (data parallelism) or ``"sum"``.
        bucket_cap_mb: bucket size in MiB; gradients are flattened into buckets of about this
            size, one collective per bucket.
        grad_dtype: None, ``"float16"`` or ``"bfloat16"``: reduce in that dtype (half the
            bytes; under a GradScaler an overflow becomes inf and the step is skipped).

    Without a process group, or with one rank, the callback returns the gradient unchanged.
    """
    return AllreduceCallback(reduce_method, bucket_cap_mb, grad_dtype)


def bcast_list_(params, src: int = 0) -> None:
    """Overwrite every tensor of ``params`` with rank ``src``'s value, in place."""
    for p in params:
        process_group.broadcast(p, src)
