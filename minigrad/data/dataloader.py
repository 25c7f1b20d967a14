"""``DataLoader``: batches, seeded per-epoch shuffling, and collation into Tensors on a device.

Shuffling draws the order of epoch ``e`` from ``numpy.random.default_rng([seed, e])``: the order
depends only on the seed and the epoch number, never on how many batches were drawn before, so a
run resumed at epoch ``e`` (``loader.set_epoch(e)``) sees exactly the batches an uninterrupted run
would have seen.
"""

from __future__ import annotations

import numpy as np

from .. import _backend as B
from .._backend import random as _random
from ..core.tensor import Tensor
from .dataset import TensorDataset

__all__ = ["DataLoader", "default_collate"]

_make = Tensor._make


def _to_device(arr, device):
    """A backend array on ``device`` that owns its memory (never a view of the dataset)."""
    if B.device_of(arr) == device:
        return arr.copy()
    return B.asarray(arr, device=device)


def _stack(items, device):
    first = items[0]
    if isinstance(first, Tensor):
        items = [t.data for t in items]
        first = items[0]
    if hasattr(first, "shape") and not isinstance(first, np.generic):
        shapes = {tuple(a.shape) for a in items}
        if len(shapes) > 1:
            raise ValueError(f"DataLoader: the samples of a batch have different shapes "
                             f"{sorted(shapes)}; pad them to one shape or pass a collate_fn")
        arr = B.get_array_module(first).stack(items)
    else:
        arr = np.asarray(items)
        if arr.dtype == np.float64 and isinstance(first, float):
            arr = arr.astype(np.float32)  # Python floats become float32, as in mg.tensor
    return _make(B.asarray(arr, device=device), False, None, 0)


def default_collate(samples, device="cpu"):
    """Stack a list of samples field by field into Tensors on ``device``.

    A sample may be an array/Tensor/number (one Tensor out), a tuple or list (a tuple of
    Tensors out) or a dict (a dict of Tensors out). Python floats become float32.
    """
    device = B.normalize_device(device)
    first = samples[0]
    if isinstance(first, dict):
        return {k: _stack([s[k] for s in samples], device) for k in first}
    if isinstance(first, (tuple, list)):
        return tuple(_stack(list(field), device) for field in zip(*samples))
    return _stack(samples, device)


class DataLoader:
    """Iterate over a dataset in batches of Tensors.

    Args:
        dataset: a ``Dataset`` (anything with ``__len__`` and ``__getitem__``).
        batch_size: samples per batch.
        shuffle: draw a new order every epoch (from ``seed`` and the epoch number).
        drop_last: drop the last batch when it is smaller than ``batch_size``.
        seed: the shuffle seed; None draws one from minigrad's global generator at construction
            (so ``mg.manual_seed`` makes runs repeat).
        device: where batches are placed (``"cpu"``, ``"cuda"``, ``"cuda:N"``).
        collate_fn: turns a list of samples into a batch; default :func:`default_collate`.
        sampler: an iterable of indices with ``__len__`` (e.g. ``DistributedSampler``) that
            chooses the samples and their order instead of ``shuffle``/``seed``. Its epoch is
            its own, as in PyTorch: set it with ``sampler.set_epoch(e)`` (or
            ``loader.set_epoch(e)``, which passes it on); iterating never resets it.

    Each ``iter(loader)`` runs one epoch and advances ``loader.epoch``; ``set_epoch(n)`` chooses
    the epoch (and so the order) of the next iteration. A ``TensorDataset`` without a custom
    ``collate_fn`` is batched by slicing its arrays, with no per-sample Python work.

    Example:
        >>> import numpy as np
        >>> from minigrad.data import DataLoader, TensorDataset
        >>> ds = TensorDataset(np.arange(10, dtype=np.float32), np.arange(10))
        >>> [y.numpy().tolist() for _, y in DataLoader(ds, batch_size=4)]
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    """

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, seed: int | None = None, device="cpu",
                 collate_fn=None, sampler=None):
        if int(batch_size) != batch_size or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive integer, got "
                             f"{batch_size!r}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.device = B.normalize_device(device)
        self.collate_fn = collate_fn
        self.sampler = sampler
        if seed is None:
            seed = int(_random.generator("cpu").integers(2 ** 63))
        self.seed = int(seed)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration epoch ``epoch`` (its shuffle order depends only on it); a
        sampler with ``set_epoch`` gets it too."""
        self.epoch = int(epoch)
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(self.epoch)

    def order(self, epoch: int):
        """The sample order of ``epoch`` (a NumPy int64 array), or None when not shuffling;
        with a sampler, the sampler's order for the epoch it was set to."""
        if self.sampler is not None:
            s = self.sampler
            return np.asarray(s.indices() if hasattr(s, "indices") else list(s), dtype=np.int64)
        if not self.shuffle:
            return None
        return np.random.default_rng([self.seed, int(epoch)]).permutation(len(self.dataset))

    def __len__(self) -> int:
        n = len(self.dataset) if self.sampler is None else len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def state_dict(self) -> dict:
        """The seed and the next epoch: enough to resume the same sequence of batches."""
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state: dict) -> None:
        self.seed = int(state["seed"])
        self.set_epoch(int(state["epoch"]))

    def __iter__(self):
        epoch = self.epoch
        self.epoch += 1
        order = self.order(epoch)
        n = len(self.dataset) if order is None else len(order)
        stop = n - n % self.batch_size if self.drop_last else n
        if isinstance(self.dataset, TensorDataset) and self.collate_fn is None:
            return self._iter_arrays(order, stop)
        return self._iter_samples(order, stop)

    def _iter_arrays(self, order, stop):
        arrays = self.dataset.arrays
        device = self.device
        bs = self.batch_size
        if order is not None:  # one index array per backend, made once per epoch
            orders = {}
            for a in arrays:
                xp = B.get_array_module(a)
                if xp not in orders:
                    orders[xp] = order if xp is np else xp.asarray(order)
        for start in range(0, stop, bs):
            if order is None:
                idx = slice(start, start + bs)
                yield tuple([_make(_to_device(a[idx], device), False, None, 0) for a in arrays])
            else:
                # fancy indexing already copies, so only a device move may remain
                yield tuple([_make(B.to_device(a[orders[B.get_array_module(a)][start:start + bs]],
                                               device), False, None, 0) for a in arrays])

    def _iter_samples(self, order, stop):
        dataset = self.dataset
        collate = self.collate_fn
        for start in range(0, stop, self.batch_size):
            end = min(start + self.batch_size, stop)
            idx = range(start, end) if order is None else order[start:end].tolist()
            samples = [dataset[i] for i in idx]
            yield collate(samples) if collate is not None else default_collate(samples,
                                                                               self.device)
