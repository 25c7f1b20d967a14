"""Samplers: which samples a ``DataLoader`` reads, in which order.

Index samplers yield one dataset index at a time (``SequentialSampler``, ``RandomSampler``,
``SubsetRandomSampler``, ``WeightedRandomSampler``, ``DistributedSampler``); a ``BatchSampler``
groups an index sampler's indices into lists, one list per batch. A ``DataLoader`` given a
``BatchSampler`` (as ``batch_sampler=``, or as ``sampler=``) takes its batches as they come.

Random samplers draw the order of epoch ``e`` from ``numpy.random.default_rng([seed, e])``, as
the ``DataLoader``'s own shuffling does: the order depends only on the seed and the epoch. Each
``iter()`` runs one epoch and advances the sampler's epoch (``set_epoch(e)`` chooses it); a
sampler built without a seed draws one from minigrad's generator, so ``mg.manual_seed`` makes
runs repeat.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._backend import random as _random

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "seed_from",
           "shard"]


def seed_from(generator=None) -> int:
    """An integer seed: ``generator`` itself when it is an int, drawn from it when it is a
    ``numpy.random.Generator``, its ``initial_seed()`` when it has one (a ``Generator`` object
    with PyTorch's method), else drawn from minigrad's CPU generator (``mg.manual_seed``)."""
    if generator is None:
        return int(_random.generator("cpu").integers(2 ** 63))
    if isinstance(generator, numbers.Integral):
        return int(generator)
    if isinstance(generator, np.random.Generator):
        return int(generator.integers(2 ** 63))
    if hasattr(generator, "initial_seed"):
        return int(generator.initial_seed())
    raise TypeError(f"generator must be None, an int seed, a numpy.random.Generator or an "
                    f"object with initial_seed(), got {type(generator).__name__}")


def shard(order, rank: int, world_size: int, drop_last: bool = False):
    """Rank ``rank``'s share of ``order``: positions ``rank, rank + R, ...`` after padding
    ``order`` with its own first entries to a multiple of ``R`` (or truncating it with
    ``drop_last``), so every rank gets the same count and the shards are disjoint."""
    order = np.asarray(order, dtype=np.int64)
    n = len(order)
    per_rank = n // world_size if drop_last else -(-n // world_size)
    total = per_rank * world_size
    if total > n:
        order = np.resize(order, total)  # repeats from the start
    return order[rank:total:world_size]


class Sampler:
    """Base class of index samplers: ``__iter__`` yields dataset indices, ``__len__`` counts
    them. Any iterable of indices with a length works in its place."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.__iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``, every epoch."""

    def __init__(self, data_source):
        self.data_source = data_source

    def indices(self):
        return np.arange(len(self.data_source), dtype=np.int64)

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class _Seeded(Sampler):
    """A sampler whose epoch ``e`` draws from ``default_rng([seed, e])``."""

    def _init_rng(self, generator, seed):
        self.seed = seed_from(generator) if seed is None else int(seed)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose draw the next iteration uses."""
        self.epoch = int(epoch)

    def _rng(self):
        return np.random.default_rng([self.seed, self.epoch])

    def __iter__(self):
        # A generator, as DataLoader.__iter__: an iterator never advanced uses up no epoch.
        order = self.indices()
        self.epoch += 1
        yield from order.tolist()


class RandomSampler(_Seeded):
    """A random permutation of the dataset each epoch (PyTorch's ``RandomSampler``).

    Args:
        data_source: anything with ``__len__``.
        replacement: draw ``num_samples`` indices with replacement instead of permuting.
        num_samples: how many indices per epoch (default ``len(data_source)``; more than that
            without replacement repeats whole permutations, as PyTorch does).
        generator: the seed's source (see :func:`seed_from`).
        seed: an explicit seed (minigrad's spelling; overrides ``generator``).
    """

    def __init__(self, data_source, replacement: bool = False, num_samples=None,
                 generator=None, seed=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement must be a bool, got {replacement!r}")
        if num_samples is not None and (int(num_samples) != num_samples or num_samples <= 0):
            raise ValueError(f"RandomSampler: num_samples must be a positive integer, got "
                             f"{num_samples!r}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = None if num_samples is None else int(num_samples)
        self._init_rng(generator, seed)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def indices(self):
        """This epoch's indices (a NumPy int64 array); iterating advances the epoch."""
        n, k, rng = len(self.data_source), self.num_samples, self._rng()
        if self.replacement:
            return rng.integers(0, n, size=k, dtype=np.int64)
        reps = -(-k // n) if n else 0
        return np.concatenate([rng.permutation(n) for _ in range(reps)] or
                              [np.zeros(0, np.int64)])[:k].astype(np.int64)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(_Seeded):
    """The given ``indices`` in a random order each epoch.

    Args:
        indices: a sequence of dataset indices.
        generator: the seed's source (see :func:`seed_from`).
    """

    def __init__(self, indices, generator=None, seed=None):
        self.indices_ = np.asarray(list(indices), dtype=np.int64)
        self._init_rng(generator, seed)

    def indices(self):
        return self.indices_[self._rng().permutation(len(self.indices_))]

    def __len__(self) -> int:
        return len(self.indices_)


class WeightedRandomSampler(_Seeded):
    """``num_samples`` indices in ``[0, len(weights))`` drawn with probability proportional to
    ``weights`` (PyTorch's ``WeightedRandomSampler``).

    Args:
        weights: non-negative weights, one per sample (need not sum to one).
        num_samples: how many indices per epoch.
        replacement: draw with replacement (without it, ``num_samples <= len(weights)``).
        generator: the seed's source (see :func:`seed_from`).
    """

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None,
                 seed=None):
        if isinstance(num_samples, bool) or int(num_samples) != num_samples \
                or num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: num_samples must be a positive integer, "
                             f"got {num_samples!r}")
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights,
                       dtype=np.float64).reshape(-1)
        if w.size == 0 or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative and "
                             "not all zero")
        if not replacement and num_samples > int((w > 0).sum()):
            raise ValueError(f"WeightedRandomSampler: cannot draw {num_samples} samples "
                             f"without replacement from {int((w > 0).sum())} nonzero weights")
        self.weights = w
        self.num_samples = int(num_samples)
        self.replacement = bool(replacement)
        self._init_rng(generator, seed)

    def indices(self):
        p = self.weights / self.weights.sum()
        return self._rng().choice(len(p), size=self.num_samples, replace=self.replacement,
                                  p=p).astype(np.int64)

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler:
    """Group the indices of ``sampler`` into lists of ``batch_size`` (PyTorch's
    ``BatchSampler``); the last, shorter list is dropped with ``drop_last``.

    Example:
        >>> from minigrad.data import BatchSampler
        >>> from minigrad.data.sampler import SequentialSampler
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) \
                or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size must be a positive integer, got "
                             f"{batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last must be a bool, got {drop_last!r}")
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(int(idx))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedSampler(Sampler):
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
        return shard(order, self.rank, self.num_replicas, self.drop_last)

    def __iter__(self):
        return iter(self.indices().tolist())

    def __len__(self) -> int:
        return self.num_samples
