"""Datasets, samplers, the ``DataLoader`` and image operations.

Names that two peers spell differently are not here: ``RandomSampler`` and
``SequentialSampler`` are PyTorch's index samplers in ``minigrad.data.sampler`` (and
``minigrad.utils.data``), while ``minigrad.data.RandomSampler`` & co. are MegEngine's batch
samplers, attached by ``minigrad.compat.megengine`` together with ``minigrad.data.DataLoader``
(minigrad's ``dataloader.DataLoader``, which also takes MegEngine's arguments).

Example:
    >>> import numpy as np
    >>> from minigrad.data import DataLoader, TensorDataset
    >>> loader = DataLoader(TensorDataset(np.ones((5, 2), np.float32)), batch_size=2,
    ...                     drop_last=True)
    >>> [b[0].shape for b in loader]
    [(2, 2), (2, 2)]
"""

from . import dataloader, datasets, sampler, vision
from .dataloader import WorkerInfo, default_collate, default_convert, get_worker_info
from .dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split,
)
from .sampler import BatchSampler, DistributedSampler, SubsetRandomSampler, WeightedRandomSampler

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "default_collate", "default_convert",
           "get_worker_info", "WorkerInfo", "BatchSampler", "DistributedSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "dataloader", "datasets", "sampler",
           "vision"]
