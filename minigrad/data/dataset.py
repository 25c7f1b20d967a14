"""Datasets: ``Dataset`` (the map-style protocol), ``IterableDataset`` (a stream),
``TensorDataset`` (equal-length arrays), and the combinators ``Subset``, ``ConcatDataset``,
``ChainDataset`` and ``random_split``."""

from __future__ import annotations

import bisect
import math

import numpy as np

from ..core.tensor import Tensor
from .sampler import seed_from

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split"]


class Dataset:
    """A map-style dataset: ``len(ds)`` samples, ``ds[i]`` returns one sample.

    A sample is an array, a number, or a tuple of them; ``DataLoader`` stacks samples field by
    field into batches.
    """

    def __getitem__(self, index):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.__getitem__")

    def __len__(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.__len__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses implement ``__iter__`` (``__len__`` is optional).

    ``DataLoader`` groups consecutive samples into batches; samplers and shuffling do not
    apply (there are no indices). With ``num_workers > 0`` the stream is read once, by the
    loader's one background worker (``get_worker_info()`` reports ``num_workers=1``), so a
    dataset that shards itself by worker yields every sample exactly once.
    """

    def __iter__(self):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.__iter__")

    def __getitem__(self, index):
        raise TypeError(f"{type(self).__name__} is an IterableDataset: iterate over it, it has "
                        "no indices")

    def __len__(self) -> int:
        # TypeError, as len() of an object without __len__: list(loader) then just iterates
        raise TypeError(f"{type(self).__name__} (an IterableDataset) defines no __len__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of several equal-length arrays: ``ds[i] = (a[i], b[i], ...)``.

    ``DataLoader`` recognises it and slices whole batches out of the arrays at once instead of
    gathering samples one by one.

    Args:
        *arrays: NumPy or CuPy arrays or Tensors with the same first dimension. ``ds[i]``
            gives each one's row ``i`` as it came: a Tensor for a Tensor (a view, as in
            PyTorch), an array for an array.

    Example:
        >>> import numpy as np
        >>> from minigrad.data import TensorDataset
        >>> ds = TensorDataset(np.zeros((10, 3)), np.arange(10))
        >>> len(ds), ds[4][1]
        (10, np.int64(4))
    """

    def __init__(self, *arrays):
        if not arrays:
            raise ValueError("TensorDataset needs at least one array")
        self.arrays = tuple(a._data if isinstance(a, Tensor) else a for a in arrays)
        # rows come back as they went in: Tensor rows for Tensors (PyTorch), arrays for arrays
        self._as_tensor = tuple(isinstance(a, Tensor) for a in arrays)
        for a in self.arrays:
            if not hasattr(a, "shape") or len(a.shape) == 0:
                raise TypeError(f"TensorDataset: every input must be an array with a first "
                                f"(sample) dimension, got {type(a).__name__}")
        n = {a.shape[0] for a in self.arrays}
        if len(n) != 1:
            shapes = [tuple(a.shape) for a in self.arrays]
            raise ValueError(f"TensorDataset: arrays have different lengths, shapes {shapes}; "
                             "every array needs the same first dimension")

    def __getitem__(self, index):
        return tuple(Tensor._make(a[index, ...], False, None, 0) if t else a[index]
                     for a, t in zip(self.arrays, self._as_tensor))

    def __len__(self) -> int:
        return self.arrays[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order: ``Subset(ds, idx)[i] ==
    ds[idx[i]]``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = [int(i) for i in indices]

    def __getitem__(self, index):
        if isinstance(index, (list, tuple, np.ndarray)):
            return [self.dataset[self.indices[int(i)]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not take an IterableDataset; use "
                                "ChainDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        n = len(self)
        if index < 0:
            if -index > n:
                raise IndexError(f"ConcatDataset: index {index} out of range for length {n}")
            index += n
        if not 0 <= index < n:
            raise IndexError(f"ConcatDataset: index {index} out of range for length {n}")
        d = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[d - 1] if d else 0
        return self.datasets[d][index - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping ``Subset`` s of the given lengths.

    Args:
        dataset: a map-style dataset.
        lengths: sizes that sum to ``len(dataset)``, or fractions that sum to 1 (each gets
            ``floor(f * n)`` samples, the remainder handed out one by one from the first, as
            PyTorch does).
        generator: the permutation's seed source (see ``sampler.seed_from``): an int, a
            ``numpy.random.Generator``, an object with ``initial_seed()``, or None for
            minigrad's generator. The split is a NumPy permutation, so it differs from
            PyTorch's for the same seed (it is repeatable for the same seed).
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        if any(f < 0 or f > 1 for f in lengths):
            raise ValueError(f"random_split: fractions must be in [0, 1], got {lengths}")
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError(f"random_split: the lengths {lengths} do not sum to the length of the "
                         f"dataset ({n})")
    perm = np.random.default_rng(seed_from(generator)).permutation(n).tolist()
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, perm[start:start + k]))
        start += k
    return out
