"""``DataLoader``: batches, seeded per-epoch shuffling, samplers, background loading, and
collation into Tensors on a device.

Shuffling draws the order of epoch ``e`` from ``numpy.random.default_rng([seed, e])``: the order
depends only on the seed and the epoch number, never on how many batches were drawn before, so a
run resumed at epoch ``e`` (``loader.set_epoch(e)``) sees exactly the batches an uninterrupted run
would have seen.

``num_workers > 0`` loads in one background thread (not in worker processes): it reads the
dataset, collates and moves batches to the device while the training step runs, keeping up to
``num_workers * prefetch_factor`` batches ready. The dataset is read in exactly the order of
``num_workers=0``; NumPy and CuPy release the GIL in their array work, so the overlap is real.
The batches are the same numbers either way unless the dataset draws random numbers from
minigrad's generator (``mg.randn`` in ``__getitem__``) while the training step draws from it
too (dropout): running ahead interleaves the two, so such a run is repeatable only with
``num_workers=0`` (or with the dataset drawing from its own ``numpy.random.Generator``).

There is one worker (id 0): ``worker_init_fn(0)`` runs in it and ``get_worker_info()`` reports
``num_workers=1`` there, so an ``IterableDataset`` that shards itself by worker yields every
sample exactly once.
"""

from __future__ import annotations

import collections.abc
import queue
import threading

import numpy as np

from .. import _backend as B
from ..core.tensor import Tensor
from .dataset import IterableDataset, Subset, TensorDataset
from .sampler import seed_from

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info", "WorkerInfo"]

_make = Tensor._make


def _to_device(arr, device):
    """A backend array on ``device`` that owns its memory (never a view of the dataset)."""
    if B.device_of(arr) == device:
        return arr.copy()
    return B.asarray(arr, device=device)


def _as_tensor(arr, device):
    return _make(B.asarray(arr, device=device), False, None, 0)


def _stack(items, device):
    first = items[0]
    if isinstance(first, Tensor):
        items = [t._data for t in items]
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
    return _as_tensor(arr, device)


def _collate(samples, device):
    first = samples[0]
    if isinstance(first, (str, bytes)):
        return list(samples)
    if isinstance(first, collections.abc.Mapping):
        return {k: _collate([s[k] for s in samples], device) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple keeps its type
        return type(first)(*(_collate(list(f), device) for f in zip(*samples)))
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("DataLoader: the samples of a batch have different numbers of "
                             "fields; pass a collate_fn")
        return tuple(_collate(list(field), device) for field in zip(*samples))
    return _stack(samples, device)


def default_collate(samples, device="cpu"):
    """Stack a list of samples field by field into Tensors on ``device``.

    A sample may be an array/Tensor/number (one Tensor out), a tuple or list (a tuple out), a
    namedtuple (the same namedtuple type out) or a dict (a dict out), nested as deep as you
    like; strings are gathered into a list. Python floats become float32.
    """
    return _collate(list(samples), B.normalize_device(device))


def default_convert(sample, device="cpu"):
    """One sample with its arrays and numbers turned into Tensors on ``device`` (nothing
    stacked): what ``DataLoader(batch_size=None)`` yields per sample."""
    device = B.normalize_device(device)
    if isinstance(sample, Tensor):
        return sample if sample.device == device else _as_tensor(sample._data, device)
    if isinstance(sample, (str, bytes)):
        return sample
    if isinstance(sample, collections.abc.Mapping):
        return {k: default_convert(v, device) for k, v in sample.items()}
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):
        return type(sample)(*(default_convert(v, device) for v in sample))
    if isinstance(sample, (tuple, list)):
        return type(sample)(default_convert(v, device) for v in sample)
    if hasattr(sample, "shape") or isinstance(sample, (int, float, bool, np.generic)):
        arr = np.asarray(sample) if not hasattr(sample, "shape") else sample
        if isinstance(sample, float):
            arr = arr.astype(np.float32)
        return _as_tensor(arr, device)
    return sample


# ----------------------------------------------------------------------------- workers
class WorkerInfo:
    """What ``get_worker_info()`` returns inside the loading thread."""

    def __init__(self, id: int, num_workers: int, seed: int, dataset):
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker = threading.local()


def get_worker_info():
    """The ``WorkerInfo`` of the calling loader worker, or None outside one (the main thread
    and ``num_workers=0``)."""
    return getattr(_worker, "info", None)


_OK, _END, _ERROR = 0, 1, 2


class _Prefetcher:
    """Runs ``produce()`` (a batch iterator) in a daemon thread, ``depth`` batches ahead."""

    def __init__(self, produce, depth: int, timeout: float, info: WorkerInfo, init_fn):
        self._queue = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._timeout = timeout
        self._done = False
        self._thread = threading.Thread(target=self._run, args=(produce, info, init_fn),
                                        name="minigrad-DataLoader-worker", daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, produce, info, init_fn):
        _worker.info = info
        try:
            if init_fn is not None:
                init_fn(info.id)
            for batch in produce():
                if not self._put((_OK, batch)):
                    return
            self._put((_END, None))
        except BaseException as e:  # handed to the consumer, raised there
            self._put((_ERROR, e))

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        try:
            kind, value = self._queue.get(timeout=self._timeout if self._timeout > 0 else None)
        except queue.Empty:
            self.close()
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds waiting "
                               "for a batch from its worker") from None
        if kind == _OK:
            return value
        self.close()
        if kind == _ERROR:
            raise value
        raise StopIteration

    def close(self) -> None:
        self._done = True
        self._stop.set()

    def __del__(self):
        self._stop.set()


# ----------------------------------------------------------------------------- the loader
def _array_rows(dataset):
    """``(arrays, index)`` when every sample of ``dataset`` is a row of equal-length arrays (a
    ``TensorDataset``, maybe under ``Subset`` s; ``index`` maps positions to rows, None for the
    identity), so batches can be sliced out whole; None otherwise (also for subclasses that
    override ``__getitem__``)."""
    index = None
    while type(dataset) is Subset:
        idx = np.asarray(dataset.indices, dtype=np.int64)
        index = idx if index is None else idx[index]  # positions of the outer subset
        dataset = dataset.dataset
    if type(dataset).__getitem__ is not TensorDataset.__getitem__ \
            or not isinstance(dataset, TensorDataset):
        return None
    return dataset, index


def _positive_int(value, what):
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"DataLoader: {what} must be a positive integer, got {value!r}")
    return int(value)


class DataLoader:
    """Iterate over a dataset in batches of Tensors.

    Args:
        dataset: a ``Dataset`` (``__len__`` and ``__getitem__``) or an ``IterableDataset``.
        batch_size: samples per batch; None yields the samples one by one, unstacked
            (:func:`default_convert`, or ``collate_fn`` applied to each sample).
        shuffle: draw a new order every epoch (from ``seed`` and the epoch number).
        drop_last: drop the last batch when it is smaller than ``batch_size``.
        seed: the shuffle seed; None takes it from ``generator``, else draws one from minigrad's
            global generator at construction (so ``mg.manual_seed`` makes runs repeat).
        device: where batches are placed (``"cpu"``, ``"cuda"``, ``"cuda:N"``).
        collate_fn: turns a list of samples into a batch; default :func:`default_collate`.
        sampler: an iterable of indices with ``__len__`` (``RandomSampler``,
            ``DistributedSampler``, ...) that chooses the samples and their order instead of
            ``shuffle``/``seed`` (``shuffle`` is then ignored; PyTorch's spelling,
            ``minigrad.utils.data.DataLoader``, refuses the pair as PyTorch does). Its epoch
            is its own, as in PyTorch: set it with ``sampler.set_epoch(e)`` (or
            ``loader.set_epoch(e)``, which passes it on).
        batch_sampler: an iterable of index lists (``BatchSampler``); each list is one batch.
            Excludes ``batch_size``, ``shuffle``, ``sampler`` and ``drop_last``.
        num_workers: 0 loads in the calling thread; more loads in one background thread
            that keeps ``num_workers * prefetch_factor`` batches ready; the same batches
            unless the dataset and the training step both draw from minigrad's generator
            (module docstring).
        pin_memory: accepted for PyTorch code; it changes no value. Batches are ordinary host
            arrays, or already on ``device``: pass ``device="cuda"`` to have the loader (and its
            worker) copy them to the GPU.
        timeout: seconds to wait for the worker's next batch before raising (0: forever).
        worker_init_fn: called as ``worker_init_fn(0)`` in the worker thread before it loads
            (each epoch; once per loader with ``persistent_workers``).
        generator: the shuffle seed's source when ``seed`` is None: an int, a
            ``numpy.random.Generator`` or an object with ``initial_seed()``.
        prefetch_factor: batches kept ready per worker (default 2; needs ``num_workers > 0``).
        persistent_workers: run ``worker_init_fn`` once for the loader's life instead of once
            per epoch (needs ``num_workers > 0``).
        multiprocessing_context, in_order, pin_memory_device: accepted; the one worker thread
            always delivers batches in order.

    Each ``iter(loader)`` runs one epoch and advances ``loader.epoch``; ``set_epoch(n)`` chooses
    the epoch (and so the order) of the next iteration. A ``TensorDataset`` (or a ``Subset`` of
    one) without a custom ``collate_fn`` is batched by slicing its arrays, with no per-sample
    Python work.

    Example:
        >>> import numpy as np
        >>> from minigrad.data import DataLoader, TensorDataset
        >>> ds = TensorDataset(np.arange(10, dtype=np.float32), np.arange(10))
        >>> [y.numpy().tolist() for _, y in DataLoader(ds, batch_size=4)]
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = False,
                 drop_last: bool = False, seed: int | None = None, device="cpu",
                 collate_fn=None, sampler=None, *, batch_sampler=None, num_workers: int = 0,
                 pin_memory: bool = False, timeout: float = 0, worker_init_fn=None,
                 generator=None, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, multiprocessing_context=None,
                 in_order: bool = True, pin_memory_device: str = ""):
        shuffle = bool(shuffle)
        if batch_size is not None:
            batch_size = _positive_int(batch_size, "batch_size")
        self._check(dataset, batch_size, shuffle, drop_last, sampler, batch_sampler,
                    num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = bool(drop_last)
        self.device = B.normalize_device(device)
        self.collate_fn = collate_fn
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = int(num_workers)
        self.pin_memory = bool(pin_memory)
        self.timeout = float(timeout)
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = 2 if prefetch_factor is None else int(prefetch_factor)
        self.persistent_workers = bool(persistent_workers)
        self.generator = generator
        self.seed = seed_from(generator) if seed is None else int(seed)
        self.epoch = 0
        self._workers_started = False

    @staticmethod
    def _check(dataset, batch_size, shuffle, drop_last, sampler, batch_sampler, num_workers,
               timeout, prefetch_factor, persistent_workers):
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                          or drop_last):
            raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                             "batch_size, shuffle, sampler and drop_last")
        if batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None disables batching and is mutually "
                             "exclusive with drop_last")
        if isinstance(dataset, IterableDataset) and (shuffle or sampler is not None
                                                     or batch_sampler is not None):
            raise ValueError("DataLoader: an IterableDataset has no indices, so shuffle, "
                             "sampler and batch_sampler do not apply; shuffle inside the "
                             "dataset's __iter__")
        if isinstance(num_workers, bool) or int(num_workers) != num_workers or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative integer, got "
                             f"{num_workers!r}")
        if timeout < 0:
            raise ValueError(f"DataLoader: timeout must be non-negative, got {timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("DataLoader: prefetch_factor needs num_workers > 0 (set it to "
                             "None with num_workers=0)")
        if prefetch_factor is not None:
            _positive_int(prefetch_factor, "prefetch_factor")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers needs num_workers > 0")

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration epoch ``epoch`` (its shuffle order depends only on it); a
        sampler with ``set_epoch`` gets it too."""
        self.epoch = int(epoch)
        for s in (self.sampler, self.batch_sampler):
            if hasattr(s, "set_epoch"):
                s.set_epoch(self.epoch)

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
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.dataset) if self.sampler is None else len(self.sampler)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def state_dict(self) -> dict:
        """The seed and the next epoch: enough to resume the same sequence of batches."""
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state: dict) -> None:
        self.seed = int(state["seed"])
        self.set_epoch(int(state["epoch"]))

    def __iter__(self):
        # A generator: the epoch is taken at the first batch, so an iterator made and never
        # advanced (tqdm.auto's progress bar makes one in its constructor) uses up no epoch of
        # the shuffle order.
        epoch = self.epoch
        self.epoch += 1
        if self.num_workers == 0:
            yield from self._batches(epoch)
            return
        init = self.worker_init_fn
        if self.persistent_workers and self._workers_started:
            init = None
        self._workers_started = True
        info = WorkerInfo(0, 1, (self.seed + epoch) % 2 ** 63, self.dataset)
        yield from _Prefetcher(lambda: self._batches(epoch),
                               self.num_workers * self.prefetch_factor, self.timeout, info, init)

    # ------------------------------------------------------------------ one epoch
    def _batches(self, epoch):
        if isinstance(self.dataset, IterableDataset):
            return self._iter_stream()
        if self.batch_sampler is not None:
            return self._iter_index_lists(self.batch_sampler)
        order = self._epoch_order(epoch)
        if self.batch_size is None:
            return self._iter_unbatched(order)
        n = len(self.dataset) if order is None else len(order)
        stop = n - n % self.batch_size if self.drop_last else n
        rows = _array_rows(self.dataset) if self.collate_fn is None else None
        if rows is not None:
            return self._iter_arrays(rows, order, stop)
        return self._iter_samples(order, stop)

    def _epoch_order(self, epoch):
        if self.sampler is not None:  # iterating advances a random sampler's own epoch
            return np.fromiter((int(i) for i in self.sampler), dtype=np.int64)
        return self.order(epoch)

    def _collate(self, samples):
        if self.collate_fn is not None:
            return self.collate_fn(samples)
        return _collate(samples, self.device)

    def _iter_arrays(self, rows, order, stop):
        dataset, index = rows
        if index is not None:
            order = index if order is None else index[order]
        arrays = dataset.arrays
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
                out = [_make(_to_device(a[idx], device), False, None, 0) for a in arrays]
            else:
                # fancy indexing already copies, so only a device move may remain
                out = [_make(B.to_device(a[orders[B.get_array_module(a)][start:start + bs]],
                                         device), False, None, 0) for a in arrays]
            yield tuple(out)

    def _iter_samples(self, order, stop):
        dataset = self.dataset
        for start in range(0, stop, self.batch_size):
            end = min(start + self.batch_size, stop)
            idx = range(start, end) if order is None else order[start:end].tolist()
            yield self._collate([dataset[i] for i in idx])

    def _iter_index_lists(self, batch_sampler):
        dataset = self.dataset
        for idx in batch_sampler:
            yield self._collate([dataset[int(i)] for i in idx])

    def _iter_unbatched(self, order):
        dataset = self.dataset
        convert = self.collate_fn or (lambda s: default_convert(s, self.device))
        for i in (range(len(dataset)) if order is None else order.tolist()):
            yield convert(dataset[i])

    def _iter_stream(self):
        if self.batch_size is None:
            convert = self.collate_fn or (lambda s: default_convert(s, self.device))
            for sample in self.dataset:
                yield convert(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self._collate(batch)
                batch = []
        if batch and not self.drop_last:
            yield self._collate(batch)
