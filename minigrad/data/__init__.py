"""Datasets and the ``DataLoader``.

Example:
    >>> import numpy as np
    >>> from minigrad.data import DataLoader, TensorDataset
    >>> loader = DataLoader(TensorDataset(np.ones((5, 2), np.float32)), batch_size=2,
    ...                     drop_last=True)
    >>> [b[0].shape for b in loader]
    [(2, 2), (2, 2)]
"""

from . import datasets
from .dataloader import DataLoader, default_collate
from .dataset import Dataset, TensorDataset
from .sampler import DistributedSampler

__all__ = ["Dataset", "TensorDataset", "DataLoader", "default_collate", "datasets",
           "DistributedSampler"]
