"""``DistributedSampler``: each rank's disjoint shard of the dataset, reshuffled per epoch."""

from __future__ import annotations

import numpy as np

__all__ = ["DistributedSampler"]


class DistributedSampler:
    """The indices rank ``rank`` of ``num_replicas`` reads, PyTorch's ``DistributedSampler``.

    Every epoch the whole dataset is permuted from ``(seed, epoch)`` (the same permutation on
    every rank) and rank ``r`` takes positions ``r, r + R, r + 2R, ...``: the shards are disjoint
    and, batch by batch, the ranks together read exactly the global batches one process would
    read with ``R`` times the batch size. When ``len(dataset)`` is not a multiple of ``R`` the
    permutation is padded with its own first indices (every rank gets the same count), or
    truncated with ``drop_last=True``.

    Args:
        dataset: anything with ``__len__``.
        num_replicas: the number of ranks (default: the process group's world size).
        rank: this rank (default: the process group's rank).
        shuffle: permute every epoch (else the natural order).
        seed: the shuffle seed, the same on every rank.
        drop_last: drop the tail instead of padding.

    Pass it to ``DataLoader(dataset, batch_size=..., sampler=sampler)`` and call
    ``sampler.set_epoch(epoch)`` (or ``loader.set_epoch``) before each epoch.

    Example:
        >>> from minigrad.data import DistributedSampler
        >>> s = DistributedSampler(range(10), num_replicas=2, rank=1, shuffle=False)
        >>> list(s)
        [1, 3, 5, 7, 9]
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        if num_replicas is None or rank is None:
            from .. import distributed as dist

            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: rank {rank} is not in [0, {num_replicas})")
        self.dataset = dataset
        self.num_replicas = int(num_replicas)
        self.rank = int(rank)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        n = len(dataset)
        self.num_samples = n // self.num_replicas if drop_last else -(-n // self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose permutation the next iteration uses."""
        self.epoch = int(epoch)

    def indices(self):
        """This rank's indices for the current epoch (a NumPy int64 array)."""
        n = len(self.dataset)
        order = (np.random.default_rng([self.seed, self.epoch]).permutation(n) if self.shuffle
                 else np.arange(n))
        if self.total_size > n:
            order = np.resize(order, self.total_size)  # repeats from the start
        return order[self.rank:self.total_size:self.num_replicas]

    def __iter__(self):
        return iter(self.indices().tolist())

    def __len__(self) -> int:
        return self.num_samples
