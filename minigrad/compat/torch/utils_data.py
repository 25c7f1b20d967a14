"""``minigrad.utils.data``: PyTorch's ``torch.utils.data`` (and OneFlow's
``oneflow.utils.data``) over :mod:`minigrad.data`.

Everything but ``DataLoader`` is minigrad's own object (``RandomSampler`` and
``SequentialSampler`` are ``minigrad.data.sampler``'s index samplers); ``DataLoader`` takes
PyTorch's argument order, with minigrad's ``device=`` and ``seed=`` as extra keywords.

Example:
    >>> import numpy as np
    >>> import minigrad as mg
    >>> from minigrad.utils.data import DataLoader, TensorDataset, random_split
    >>> train, val = random_split(TensorDataset(mg.arange(10.0)), [8, 2], generator=0)
    >>> len(DataLoader(train, batch_size=3, shuffle=True, drop_last=True))
    2
"""

import types

from ...data import dataloader as _dl
from ...data import sampler
from ...data.dataloader import default_collate, default_convert, get_worker_info
from ...data.dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split,
)
from ...data.sampler import (
    BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
    SubsetRandomSampler, WeightedRandomSampler,
)

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "Subset",
           "ConcatDataset", "ChainDataset", "random_split", "default_collate", "default_convert",
           "get_worker_info", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler",
           "sampler", "distributed"]


class DataLoader(_dl.DataLoader):
    """``torch.utils.data.DataLoader`` with PyTorch's argument order (``dataset,
    batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
    collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
    multiprocessing_context=None, generator=None, *, prefetch_factor=None,
    persistent_workers=False, pin_memory_device="", in_order=True``), plus minigrad's
    ``device=`` (where batches go) and ``seed=`` keywords. What ``num_workers`` and
    ``pin_memory`` do here: see :class:`minigrad.data.dataloader.DataLoader`."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True, device="cpu", seed=None):
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle; "
                             "the sampler chooses the order (RandomSampler shuffles)")
        super().__init__(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                         seed=seed, device=device, collate_fn=collate_fn, sampler=sampler,
                         batch_sampler=batch_sampler, num_workers=num_workers,
                         pin_memory=pin_memory, timeout=timeout, worker_init_fn=worker_init_fn,
                         generator=generator, prefetch_factor=prefetch_factor,
                         persistent_workers=persistent_workers,
                         multiprocessing_context=multiprocessing_context, in_order=in_order,
                         pin_memory_device=pin_memory_device)


distributed = types.ModuleType("minigrad.utils.data.distributed",
                               "``torch.utils.data.distributed``: ``DistributedSampler``.")
distributed.DistributedSampler = DistributedSampler
distributed.__all__ = ["DistributedSampler"]
