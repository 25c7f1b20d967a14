"""MegEngine's ``megengine.data`` spellings, attached to ``minigrad.data``: ``DataLoader``
(``sampler=``, ``transform=``, ``collator=``), the batch samplers ``RandomSampler``,
``SequentialSampler``, ``ReplacementSampler`` and ``Infinite``, ``ArrayDataset`` and
``Collator``.

MegEngine's samplers yield *batches* of indices (they take ``batch_size``), where PyTorch's
``RandomSampler`` yields single indices: ``minigrad.data.RandomSampler`` is MegEngine's and
``minigrad.utils.data.RandomSampler`` PyTorch's. Each is a thin layer over minigrad's samplers
(``minigrad.data.sampler``) and ``DataLoader`` (``minigrad.data.dataloader``).

Example:
    >>> import numpy as np
    >>> from minigrad import data
    >>> ds = data.ArrayDataset(np.arange(10, dtype=np.float32), np.arange(10))
    >>> loader = data.DataLoader(ds, sampler=data.SequentialSampler(ds, batch_size=4))
    >>> [y.numpy().tolist() for _, y in loader]
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
"""

from __future__ import annotations

import collections.abc
import math
import numbers
import sys

import numpy as np

from ...data import dataloader as _dl
from ...data import sampler as _s
from ...data.dataset import TensorDataset

__all__ = ["DataLoader", "MapSampler", "RandomSampler", "SequentialSampler",
           "ReplacementSampler", "Infinite", "ArrayDataset", "Collator"]

ArrayDataset = TensorDataset  # MegEngine: rows of equal-length NumPy arrays, returned as arrays


def _world():
    # minigrad.distributed needs mpi4py (optional): without it imported no group can exist
    dist = sys.modules.get("minigrad.distributed")
    if dist is not None and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


class MapSampler:
    """MegEngine's sampler base (``megengine.data.Sampler``): yields lists of indices.

    Subclasses implement ``sample()`` (all indices of one epoch, in order). With
    ``world_size > 1`` each rank takes its disjoint share (``minigrad.data.sampler.shard``:
    padded to equal counts, rank ``r`` reading positions ``r, r + R, ...``), then batches.

    Args:
        dataset: the dataset.
        batch_size: indices per batch.
        drop_last: drop the last, shorter batch.
        num_samples: samples per epoch (default ``len(dataset)``).
        world_size, rank: the data-parallel group (default: minigrad.distributed's, else 1, 0).
        seed: the random samplers' seed (default: drawn from minigrad's generator; 0 when
            ``world_size > 1``, so every rank draws the same order).
    """

    def __init__(self, dataset, batch_size=1, drop_last=False, num_samples=None,
                 world_size=None, rank=None, seed=None):
        if not isinstance(batch_size, numbers.Integral) or isinstance(batch_size, bool) \
                or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        if num_samples is not None and (not isinstance(num_samples, numbers.Integral)
                                        or isinstance(num_samples, bool) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples!r}")
        default_world, default_rank = _world() if world_size is None or rank is None else (1, 0)
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.drop_last = drop_last
        self.world_size = int(default_world if world_size is None else world_size)
        self.rank = int(default_rank if rank is None else rank)
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank {self.rank} is not in [0, {self.world_size})")
        total = len(dataset) if num_samples is None else int(num_samples)
        self.num_samples = int(math.ceil(total / self.world_size))
        if seed is None and self.world_size > 1:
            seed = 0
        self.seed = _s.seed_from(None) if seed is None else int(seed)

    def sample(self):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.sample")

    def scatter(self, indices) -> list:
        """This rank's share of ``indices``."""
        return _s.shard(indices, self.rank, self.world_size)[:self.num_samples].tolist()

    def batch(self):
        indices = [int(i) for i in self.sample()]
        if self.world_size > 1:
            indices = self.scatter(indices)
        return iter(_s.BatchSampler(indices, self.batch_size, self.drop_last))

    def __iter__(self):
        return self.batch()

    def __len__(self) -> int:
        if self.drop_last:
            return self.num_samples // self.batch_size
        return int(math.ceil(self.num_samples / self.batch_size))


def _check_indices(indices):
    if indices is not None and not isinstance(indices, collections.abc.Sequence):
        raise ValueError(f"indices should be None or a sequence, but got indices={indices!r}")
    return indices


class SequentialSampler(MapSampler):
    """MegEngine's ``SequentialSampler(dataset, batch_size=1, drop_last=False, indices=None,
    world_size=None, rank=None)``: batches in dataset (or ``indices``) order."""

    def __init__(self, dataset, batch_size=1, drop_last=False, indices=None, world_size=None,
                 rank=None):
        super().__init__(dataset, batch_size, drop_last, None, world_size, rank)
        self.indices = _check_indices(indices)

    def sample(self):
        if self.indices is None:
            return _s.SequentialSampler(self.dataset)
        return list(self.indices)


class RandomSampler(MapSampler):
    """MegEngine's ``RandomSampler(dataset, batch_size=1, drop_last=False, indices=None,
    world_size=None, rank=None, seed=None)``: a new permutation of the dataset (or of
    ``indices``) every epoch, in batches."""

    def __init__(self, dataset, batch_size=1, drop_last=False, indices=None, world_size=None,
                 rank=None, seed=None):
        super().__init__(dataset, batch_size, drop_last, None, world_size, rank, seed)
        self.indices = _check_indices(indices)
        self._order = (_s.RandomSampler(dataset, seed=self.seed) if indices is None
                       else _s.SubsetRandomSampler(indices, seed=self.seed))

    def set_epoch(self, epoch: int) -> None:
        self._order.set_epoch(epoch)

    def sample(self):
        return self._order  # iterating it draws this epoch's order and advances the epoch


class ReplacementSampler(MapSampler):
    """MegEngine's ``ReplacementSampler(dataset, batch_size=1, drop_last=False,
    num_samples=None, weights=None, world_size=None, rank=None, seed=None)``: indices drawn
    with replacement, uniformly or in proportion to ``weights``."""

    def __init__(self, dataset, batch_size=1, drop_last=False, num_samples=None, weights=None,
                 world_size=None, rank=None, seed=None):
        super().__init__(dataset, batch_size, drop_last, num_samples, world_size, rank, seed)
        if weights is not None:
            if not isinstance(weights, collections.abc.Sequence):
                raise ValueError(f"weights should be None or a sequence, but got "
                                 f"weights={weights!r}")
            if len(weights) != len(dataset):
                raise ValueError(f"len(dataset)={len(dataset)} should be equal to "
                                 f"len(weights)={len(weights)}")
        count = self.num_samples * self.world_size
        self.weights = weights
        self._order = (_s.RandomSampler(dataset, replacement=True, num_samples=count,
                                        seed=self.seed) if weights is None else
                       _s.WeightedRandomSampler(weights, count, True, seed=self.seed))

    def sample(self):
        return self._order


class Infinite(MapSampler):
    """MegEngine's ``Infinite(sampler)``: the batches of ``sampler``, epoch after epoch,
    without end (``len`` is the int64 maximum)."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.batch_size = getattr(sampler, "batch_size", None)
        self._it = iter(sampler)

    def sample(self):
        raise NotImplementedError("sample method not supported in Infinite")

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self._it)
        except StopIteration:
            self._it = iter(self.sampler)
            return next(self._it)

    def __len__(self) -> int:
        return int(np.iinfo(np.int64).max)


class Collator:
    """MegEngine's ``Collator``: ``apply(samples)`` stacks samples field by field. Here the
    fields become Tensors (``minigrad.data.default_collate``); MegEngine returns NumPy
    arrays, which ``mg.tensor(...)`` accepts the same."""

    def apply(self, inputs):
        return _dl.default_collate(inputs)


def _is_batch_sampler(sampler) -> bool:
    return isinstance(sampler, (MapSampler, _s.BatchSampler))


class DataLoader(_dl.DataLoader):
    """MegEngine's ``DataLoader(dataset, sampler=None, transform=None, collator=None,
    num_workers=0, timeout=0, timeout_event=None, divide=False, preload=False)`` over
    minigrad's loader, which also takes every keyword of its own (``batch_size=``,
    ``shuffle=``, ``device=``, ...).

    Args:
        dataset: the dataset.
        sampler: a MegEngine batch sampler (``RandomSampler(ds, batch_size, drop_last)`` ...)
            or a ``BatchSampler``; an index sampler (``DistributedSampler``) works with
            ``batch_size=`` as in minigrad's loader. None reads one sample per batch in order.
        transform: a MegEngine transform (``apply_batch(samples)``, e.g. ``T.Compose``) or a
            function applied to each sample, before collation.
        collator: an object with ``apply(samples)`` (``Collator``) or a function; default
            stacks into Tensors.
        num_workers: 0 loads in the calling thread; more in one background thread that keeps
            batches ready (``minigrad.data.dataloader``). Same batches either way.
        timeout: seconds to wait for a batch from the worker (0: forever).
        timeout_event, divide, preload, parallel_stream: accepted; they change no value
            (``divide`` still needs ``num_workers > 1``, as in MegEngine).
    """

    def __init__(self, dataset, sampler=None, transform=None, collator=None, num_workers=0,
                 timeout=0, timeout_event=None, divide=False, preload=False,
                 parallel_stream=False, **kwargs):
        if isinstance(sampler, numbers.Integral) and not isinstance(sampler, bool):
            if isinstance(transform, bool):
                raise TypeError("minigrad.data.DataLoader follows MegEngine's argument order "
                                "(dataset, sampler, transform, ...): pass shuffle= (and the "
                                "others) as keywords")
            kwargs["batch_size"], sampler = sampler, None
        if num_workers < 0:
            raise ValueError("num_workers should not be negative")
        if divide and num_workers <= 1:
            raise ValueError("divide should not be set to True when num_workers <= 1")
        if _is_batch_sampler(sampler):
            kwargs["batch_sampler"] = sampler
        elif sampler is not None:
            kwargs["sampler"] = sampler
        if transform is not None or collator is not None:
            if "collate_fn" in kwargs:
                raise ValueError("DataLoader: pass either collate_fn or transform/collator")
            kwargs["collate_fn"] = _MegEngineBatch(transform, collator,
                                                   kwargs.get("device", "cpu"))
        super().__init__(dataset, num_workers=num_workers, timeout=timeout, **kwargs)
        self.transform = transform
        self.collator = collator
        self.divide = bool(divide)
        self.preload = bool(preload)


class _MegEngineBatch:
    """MegEngine's batch pipeline: ``transform.apply_batch(samples)``, then
    ``collator.apply(...)`` (a picklable callable, unlike a lambda)."""

    def __init__(self, transform, collator, device):
        self.transform = transform
        self.collator = collator
        self.device = device

    def __call__(self, samples):
        t = self.transform
        if t is not None:
            samples = list(t.apply_batch(samples)) if hasattr(t, "apply_batch") \
                else [t(s) for s in samples]
        c = self.collator
        if c is None:
            return _dl.default_collate(samples, self.device)
        return c.apply(samples) if hasattr(c, "apply") else c(samples)
