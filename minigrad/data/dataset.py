"""``Dataset`` (the map-style protocol) and ``TensorDataset`` (equal-length arrays)."""

from __future__ import annotations

from ..core.tensor import Tensor

__all__ = ["Dataset", "TensorDataset"]


class Dataset:
    """A map-style dataset: ``len(ds)`` samples, ``ds[i]`` returns one sample.

    A sample is an array, a number, or a tuple of them; ``DataLoader`` stacks samples field by
    field into batches.
    """

    def __getitem__(self, index):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.__getitem__")

    def __len__(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.__len__")


class TensorDataset(Dataset):
    """Samples are the rows of several equal-length arrays: ``ds[i] = (a[i], b[i], ...)``.

    ``DataLoader`` recognises it and slices whole batches out of the arrays at once instead of
    gathering samples one by one.

    Args:
        *arrays: NumPy or CuPy arrays or Tensors with the same first dimension.

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
        self.arrays = tuple(a.data if isinstance(a, Tensor) else a for a in arrays)
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
        return tuple(a[index] for a in self.arrays)

    def __len__(self) -> int:
        return self.arrays[0].shape[0]
