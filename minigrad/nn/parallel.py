"""PyTorch's ``DistributedDataParallel``: one model replica per rank, gradients averaged.

The reduction itself lives in ``minigrad.distributed`` (bucketed, overlapped with backward);
this module is the PyTorch-shaped wrapper around it.
"""

from __future__ import annotations

from contextlib import contextmanager

from .module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Data parallelism: wrap the model, train as usual, gradients are averaged over ranks.

    At construction the parameters and buffers are broadcast from rank 0 (every rank starts
    identical) after checking that every rank has the same parameter shapes. During
    ``loss.backward()`` gradients are copied into buckets of about ``bucket_cap_mb`` MiB; each
    bucket's all-reduce starts as soon as its gradients are final, overlapping the rest of the
    backward, and the averaged gradients are in ``p.grad`` when ``backward`` returns.

    Args:
        module: the model (already on this rank's device).
        bucket_cap_mb: bucket size in MiB (0: one collective per parameter).
        grad_dtype: None, ``"float16"`` or ``"bfloat16"``: reduce in that dtype (ChainerMN's
            ``allreduce_grad_dtype``); under a GradScaler an overflow becomes inf and every rank
            skips the step.
        broadcast_buffers: also broadcast buffers (BatchNorm statistics) at construction.
        overlap: start each bucket during backward (False: all at the end, one blocking
            collective per bucket; for benchmarks).

    Gradients are reduced only by ``Tensor.backward`` (the PyTorch style); with a
    ``GradManager`` use ``dist.make_allreduce_cb`` instead.

    Example:
        >>> import minigrad as mg
        >>> from minigrad import distributed as dist, nn
        >>> dist.init_process_group()
        >>> model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))
        >>> model(mg.ones((3, 4))).sum().backward()
        >>> model.module.weight.grad.shape
        (2, 4)
        >>> dist.destroy_process_group()
    """

    def __init__(self, module: Module, bucket_cap_mb: float = 25, grad_dtype=None,
                 broadcast_buffers: bool = True, overlap: bool = True):
        from ..distributed import process_group as dist  # mpi4py: imported on use
        from ..core.engine import register_grad_ready_hook
        from ..distributed.reducer import ParamReducer, resolve_grad_dtype

        super().__init__()
        group = dist._require("DistributedDataParallel")
        self.module = module
        names, params = zip(*[(n, p) for n, p in module.named_parameters() if p.requires_grad]) \
            if any(p.requires_grad for p in module.parameters()) else ((), ())
        _check_same_shapes(group, names, params)
        for p in params:
            dist.broadcast(p, 0)
        if broadcast_buffers:
            for b in module.buffers():
                dist.broadcast(b, 0)
        self._reducer = ParamReducer(list(params), group, int(bucket_cap_mb * 2 ** 20),
                                     resolve_grad_dtype(grad_dtype), overlap)
        self._unhook = register_grad_ready_hook(self._reducer)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @contextmanager
    def no_sync(self):
        """Accumulate gradients locally (no communication) inside this block; the first
        backward after it reduces the accumulated gradients."""
        prev = self._reducer.active
        self._reducer.active = False
        try:
            yield self
        finally:
            self._reducer.active = prev

    @property
    def comm_stats(self):
        """Seconds spent launching and waiting for collectives, and their count (``reset()``)."""
        return self._reducer.stats


def _check_same_shapes(group, names, params) -> None:
    """Raise the same clear error on every rank when the ranks' parameters differ."""
    mine = [tuple(p.shape) for p in params]
    everyone = group.comm.allgather(mine)  # a few tuples of ints: metadata, not arrays
    ref = everyone[0]
    for rank, shapes in enumerate(everyone[1:], 1):
        if shapes == ref:
            continue
        for i, (a, b) in enumerate(zip(ref, shapes)):
            if a != b:
                name = names[i] if i < len(names) else f"#{i}"
                raise ValueError(
                    f"DistributedDataParallel: parameter {i} ({name!r}) has shape {a} on rank 0 "
                    f"but {b} on rank {rank}; every rank must build the same model")
        raise ValueError(
            f"DistributedDataParallel: rank 0 has {len(ref)} parameters but rank {rank} has "
            f"{len(shapes)}; every rank must build the same model")
