"""``minigrad.dataset``: MindSpore's ``mindspore.dataset`` pipelines over minigrad's data
mechanism.

A pipeline is a chain of dataset objects, each yielding rows (tuples of NumPy arrays, one per
named column): a source (``GeneratorDataset``, ``NumpySlicesDataset``), then ``.map``,
``.shuffle``, ``.batch``, ``.repeat``, ``.take``, ``.skip``, ``.project``, ``.rename``;
``create_tuple_iterator()`` / ``create_dict_iterator()`` (or ``for row in dataset``) read it,
giving Tensors (NumPy arrays with ``output_numpy=True``).

Orders come from minigrad's samplers (``minigrad.data.sampler``: a seeded permutation per
epoch, sharded with ``num_shards``/``shard_id`` as ``DistributedSampler`` shards), batches are
stacked column by column, and image operations (``minigrad.dataset.vision``) are
``minigrad.data.vision``'s. Everything runs in the calling thread: ``num_parallel_workers`` and
``python_multiprocessing`` are accepted and change no value. A pipeline's random draws (shuffle
orders, random crops and flips) come from minigrad's generator, so ``mg.manual_seed`` (or
``dataset.config.set_seed``) makes them repeat; they are not MindSpore's numbers.

Example:
    >>> import numpy as np
    >>> from minigrad import dataset as ds
    >>> data = ds.NumpySlicesDataset({"x": np.arange(6.0), "y": np.arange(6)}, shuffle=False)
    >>> data = data.map(lambda x: x * 10, input_columns="x").batch(4)
    >>> [(x.numpy().tolist(), y.numpy().tolist()) for x, y in data.create_tuple_iterator()]
    [([0.0, 10.0, 20.0, 30.0], [0, 1, 2, 3]), ([40.0, 50.0], [4, 5])]
    >>> data.get_dataset_size(), data.get_col_names()
    (2, ['x', 'y'])
"""

from __future__ import annotations

import itertools
import types

import numpy as np

from ... import _backend as B
from ...core.tensor import Tensor
from ...data import sampler as _sampler

__all__ = ["Dataset", "GeneratorDataset", "NumpySlicesDataset", "config"]


# ----------------------------------------------------------------------------- config
def _set_seed(seed: int) -> None:
    """Seed the shuffles of pipelines built from now on (MindSpore's ``config.set_seed``)."""
    _config["seed"] = int(seed)


def _get_seed():
    return _config["seed"]


_config = {"seed": None}
config = types.ModuleType("minigrad.dataset.config", "MindSpore's ``dataset.config``.")
config.set_seed, config.get_seed = _set_seed, _get_seed
config.set_num_parallel_workers = lambda n: None
config.get_num_parallel_workers = lambda: 1
config.__all__ = ["set_seed", "get_seed", "set_num_parallel_workers", "get_num_parallel_workers"]


def _new_seed() -> int:
    seed = _config["seed"]
    if seed is None:
        return _sampler.seed_from(None)
    _config["seed"] = seed + 1  # each pipeline its own draws, repeatable from set_seed
    return seed


def _columns(names, what):
    if names is None:
        return None
    names = [names] if isinstance(names, str) else list(names)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"{what}: column names must be strings, got {names}")
    return names


def _row(item, n_columns=None):
    """One source item as a tuple of NumPy arrays."""
    if isinstance(item, Tensor):
        item = (item.numpy(),)
    elif not isinstance(item, (tuple, list)):
        item = (item,)
    row = tuple(x.numpy() if isinstance(x, Tensor) else np.asarray(x) for x in item)
    if n_columns is not None and len(row) != n_columns:
        raise ValueError(f"GeneratorDataset: the source gave a row of {len(row)} values for "
                         f"{n_columns} column_names")
    return row


class Dataset:
    """A pipeline node: ``_epoch()`` yields this node's rows for one pass."""

    def __init__(self, child=None, columns=None):
        self.child = child
        self._cols = columns

    # ------------------------------------------------------------------ reading
    def _epoch(self):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}._epoch")

    def get_col_names(self) -> list:
        """The column names, in row order."""
        return list(self._cols)

    def get_dataset_size(self) -> int:
        """Rows (batches after ``.batch``) in one pass."""
        return sum(1 for _ in self._epoch())

    def get_batch_size(self) -> int:
        return 1 if self.child is None else self.child.get_batch_size()

    def get_repeat_count(self) -> int:
        return 1 if self.child is None else self.child.get_repeat_count()

    def create_tuple_iterator(self, columns=None, num_epochs: int = -1,
                              output_numpy: bool = False, do_copy: bool = True):
        """Rows as lists of Tensors (NumPy arrays with ``output_numpy``), optionally only
        ``columns``; iterating the iterator again runs another pass."""
        cols = _columns(columns, "create_tuple_iterator")
        pick = None if cols is None else [self._index(c) for c in cols]
        return _Iterator(self, lambda row: [row[i] for i in pick] if pick else list(row),
                         output_numpy, num_epochs)

    def create_dict_iterator(self, num_epochs: int = -1, output_numpy: bool = False,
                             do_copy: bool = True):
        """Rows as ``{column: Tensor}`` dicts."""
        names = self.get_col_names()
        return _Iterator(self, lambda row: dict(zip(names, row)), output_numpy, num_epochs)

    def __iter__(self):
        return iter(self.create_tuple_iterator())

    def _index(self, column):
        try:
            return self._cols.index(column)
        except ValueError:
            raise ValueError(f"column {column!r} is not one of {self._cols}") from None

    # ------------------------------------------------------------------ operations
    def map(self, operations=None, input_columns=None, output_columns=None, column_order=None,
            num_parallel_workers=None, python_multiprocessing=False, cache=None,
            callbacks=None, max_rowsize=None, offload=None):
        """Apply ``operations`` (a callable or a list, applied in turn) to ``input_columns``
        (default: the first column); results go to ``output_columns`` (default: the input
        columns)."""
        return _Map(self, operations, input_columns, output_columns, column_order)

    def batch(self, batch_size, drop_remainder: bool = False, num_parallel_workers=None,
              per_batch_map=None, input_columns=None, output_columns=None, **kwargs):
        """Stack ``batch_size`` consecutive rows column by column; the last, smaller batch is
        dropped with ``drop_remainder``."""
        if per_batch_map is not None:
            raise NotImplementedError("batch(per_batch_map=...) is not supported; map the rows "
                                      "before batching")
        return _Batch(self, batch_size, drop_remainder)

    def shuffle(self, buffer_size: int):
        """MindSpore's buffer shuffle: keep ``buffer_size`` rows, emit a random one, refill."""
        return _Shuffle(self, buffer_size)

    def repeat(self, count=None):
        """The pass ``count`` times (None or -1: without end)."""
        return _Repeat(self, count)

    def take(self, count: int = -1):
        """The first ``count`` rows (-1: all)."""
        return _Slice(self, 0, None if count == -1 else int(count))

    def skip(self, count: int):
        """All rows after the first ``count``."""
        return _Slice(self, int(count), None)

    def project(self, columns):
        """Keep ``columns``, in that order."""
        cols = _columns(columns, "project")
        idx = [self._index(c) for c in cols]
        return _Columns(self, cols, lambda row: tuple(row[i] for i in idx))

    def rename(self, input_columns, output_columns):
        """Rename columns."""
        src, dst = _columns(input_columns, "rename"), _columns(output_columns, "rename")
        if len(src) != len(dst):
            raise ValueError("rename: input_columns and output_columns differ in length")
        names = list(self._cols)
        for s, d in zip(src, dst):
            names[self._index(s)] = d
        return _Columns(self, names, lambda row: row)


class _Iterator:
    """MindSpore's dataset iterator: ``next()`` reads on, ``iter()`` starts a new pass."""

    def __init__(self, dataset, shape, output_numpy, num_epochs):
        self._dataset = dataset
        self._shape = shape
        self._numpy = output_numpy
        self._num_epochs = num_epochs
        self._current = None

    def _convert(self, row):
        if not self._numpy:
            row = tuple(Tensor._make(B.asarray(np.ascontiguousarray(a)), False, None, 0)
                        for a in row)
        return self._shape(row)

    def __iter__(self):
        self._current = (self._convert(r) for r in self._dataset._epoch())
        return self._current

    def __next__(self):
        if self._current is None:
            iter(self)
        return next(self._current)


class _SourceDataset(Dataset):
    """A source of rows in an order chosen by minigrad's samplers."""

    def _init_order(self, n, num_samples, shuffle, sampler, num_shards, shard_id):
        if (num_shards is None) != (shard_id is None):
            raise RuntimeError("num_shards and shard_id must be given together")
        if num_shards is not None and not 0 <= shard_id < num_shards:
            raise ValueError(f"shard_id {shard_id} is not in [0, {num_shards})")
        if sampler is not None and shuffle is not None:
            raise RuntimeError("sampler and shuffle cannot be given together")
        self._n = n
        self._num_samples = num_samples
        self._shards = (num_shards, shard_id)
        if sampler is not None:
            self._order = sampler
        elif shuffle is False:
            self._order = _sampler.SequentialSampler(range(n))
        else:  # MindSpore's default for random-accessible sources: shuffled
            # shards of one dataset (one per rank) must draw the same permutation: seed them
            # from config.set_seed, or 0
            seed = _new_seed() if num_shards is None else (_config["seed"] or 0)
            self._order = _sampler.RandomSampler(range(n), seed=seed)

    def _indices(self):
        order = np.fromiter((int(i) for i in self._order), dtype=np.int64)
        num_shards, shard_id = self._shards
        if num_shards is not None:
            order = _sampler.shard(order, shard_id, num_shards)
        if self._num_samples is not None:
            order = order[:int(self._num_samples)]
        return order


class GeneratorDataset(_SourceDataset):
    """MindSpore's ``GeneratorDataset(source, column_names=None, column_types=None,
    schema=None, num_samples=None, num_parallel_workers=1, shuffle=None, sampler=None,
    num_shards=None, shard_id=None, python_multiprocessing=True, max_rowsize=None)``.

    ``source`` is random-accessible (``__getitem__`` and ``__len__``: read in a shuffled order
    unless ``shuffle=False``, as MindSpore's default is), an iterable (read in its own order
    each pass), or a callable returning an iterator (a generator function). Each item is a
    tuple of arrays (one per column) or one array.
    """

    def __init__(self, source, column_names=None, column_types=None, schema=None,
                 num_samples=None, num_parallel_workers=1, shuffle=None, sampler=None,
                 num_shards=None, shard_id=None, python_multiprocessing=True,
                 max_rowsize=None, batch_sampler=None, collate_fn=None):
        if batch_sampler is not None or collate_fn is not None:
            raise NotImplementedError("GeneratorDataset(batch_sampler=, collate_fn=) is not "
                                      "supported; use .batch()")
        self.source = source
        cols = _columns(column_names, "GeneratorDataset")
        self._random_access = hasattr(source, "__getitem__") and hasattr(source, "__len__")
        if self._random_access:
            self._init_order(len(source), num_samples, shuffle, sampler, num_shards, shard_id)
        elif shuffle or sampler is not None or num_shards is not None:
            raise ValueError("GeneratorDataset: shuffle, sampler and num_shards need a "
                             "random-accessible source (with __getitem__ and __len__)")
        else:
            self._num_samples = num_samples
        self._types = None if column_types is None else [B.normalize_dtype(t)
                                                         for t in column_types]
        if cols is None:
            first = _row(self._first())
            cols = [f"column_{i}" for i in range(len(first))]
        super().__init__(None, cols)

    def _first(self):
        if self._random_access:
            return self.source[0]
        return next(iter(self._items()))

    def _items(self):
        src = self.source
        if self._random_access:
            return (src[int(i)] for i in self._indices())
        it = src() if callable(src) and not hasattr(src, "__iter__") else iter(src)
        return it if self._num_samples is None else itertools.islice(it, self._num_samples)

    def _epoch(self):
        n = len(self._cols)
        for item in self._items():
            row = _row(item, n)
            if self._types is not None:
                row = tuple(a.astype(t, copy=False) for a, t in zip(row, self._types))
            yield row

    def get_dataset_size(self) -> int:
        if self._random_access:
            return len(self._indices())
        return super().get_dataset_size()


class NumpySlicesDataset(_SourceDataset):
    """MindSpore's ``NumpySlicesDataset(data, column_names=None, num_samples=None,
    num_parallel_workers=1, shuffle=None, sampler=None, num_shards=None, shard_id=None)``:
    rows are slices along the first axis of ``data`` (an array, a list, a tuple of arrays, or
    a dict of named arrays); shuffled unless ``shuffle=False``."""

    def __init__(self, data, column_names=None, num_samples=None, num_parallel_workers=1,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None):
        if isinstance(data, dict):
            names = list(data)
            arrays = [np.asarray(v.numpy() if isinstance(v, Tensor) else v)
                      for v in data.values()]
        elif isinstance(data, tuple):
            arrays = [np.asarray(v.numpy() if isinstance(v, Tensor) else v) for v in data]
            names = None
        else:
            arrays = [np.asarray(data.numpy() if isinstance(data, Tensor) else data)]
            names = None
        if len({len(a) for a in arrays}) != 1:
            raise ValueError("NumpySlicesDataset: the columns have different lengths")
        cols = _columns(column_names, "NumpySlicesDataset") or names or \
            [f"column_{i}" for i in range(len(arrays))]
        if len(cols) != len(arrays):
            raise ValueError(f"NumpySlicesDataset: {len(cols)} column_names for "
                             f"{len(arrays)} columns")
        self._arrays = arrays
        self._init_order(len(arrays[0]), num_samples, shuffle, sampler, num_shards, shard_id)
        super().__init__(None, cols)

    def _epoch(self):
        for i in self._indices():
            yield tuple(a[i] for a in self._arrays)

    def get_dataset_size(self) -> int:
        return len(self._indices())


class _Map(Dataset):
    def __init__(self, child, operations, input_columns, output_columns, column_order):
        ops = operations if isinstance(operations, (list, tuple)) else [operations]
        if not ops or not all(callable(op) for op in ops):
            raise TypeError("map: operations must be a callable or a list of callables")
        self._ops = list(ops)
        ins = _columns(input_columns, "map") or child.get_col_names()[:1]
        outs = _columns(output_columns, "map") or ins
        self._in = [child._index(c) for c in ins]
        cols = list(child.get_col_names())
        if outs == ins:
            self._out = list(self._in)
        else:  # the inputs go; the outputs take the first input's place
            keep = [c for i, c in enumerate(cols) if i not in self._in]
            at = min(self._in)
            before = sum(1 for i in range(at) if i not in self._in)
            cols = keep[:before] + outs + keep[before:]
            self._out = None
        self._outs = outs
        if column_order is not None:
            raise NotImplementedError("map(column_order=...) is not supported; use .project()")
        super().__init__(child, cols)

    def _epoch(self):
        in_idx, out_idx, n_out = self._in, self._out, len(self._outs)
        for row in self.child._epoch():
            values = tuple(row[i] for i in in_idx)
            for op in self._ops:
                res = op(*values)
                values = tuple(res) if isinstance(res, (tuple, list)) else (res,)
            values = tuple(v.numpy() if isinstance(v, Tensor) else np.asarray(v)
                           for v in values)
            if len(values) != n_out:
                raise ValueError(f"map: the operations returned {len(values)} values for "
                                 f"{n_out} output columns {self._outs}")
            if out_idx is not None:
                row = list(row)
                for i, v in zip(out_idx, values):
                    row[i] = v
                yield tuple(row)
            else:
                keep = [v for i, v in enumerate(row) if i not in in_idx]
                at = min(in_idx)
                before = sum(1 for i in range(at) if i not in in_idx)
                yield tuple(keep[:before]) + values + tuple(keep[before:])

    def get_dataset_size(self) -> int:
        return self.child.get_dataset_size()


class _Batch(Dataset):
    def __init__(self, child, batch_size, drop_remainder):
        if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
            raise ValueError(f"batch: batch_size must be a positive integer, got "
                             f"{batch_size!r}")
        self._bs = int(batch_size)
        self._drop = bool(drop_remainder)
        super().__init__(child, child.get_col_names())

    def _stack(self, rows):
        out = []
        for j, col in enumerate(zip(*rows)):
            shapes = {a.shape for a in col}
            if len(shapes) > 1:
                raise ValueError(f"batch: column {self._cols[j]!r} has rows of different "
                                 f"shapes {sorted(shapes)}; resize or pad them first")
            out.append(np.stack(col))
        return tuple(out)

    def _epoch(self):
        rows = []
        for row in self.child._epoch():
            rows.append(row)
            if len(rows) == self._bs:
                yield self._stack(rows)
                rows = []
        if rows and not self._drop:
            yield self._stack(rows)

    def get_dataset_size(self) -> int:
        n = self.child.get_dataset_size()
        return n // self._bs if self._drop else -(-n // self._bs)

    def get_batch_size(self) -> int:
        return self._bs


class _Shuffle(Dataset):
    def __init__(self, child, buffer_size):
        if isinstance(buffer_size, bool) or int(buffer_size) != buffer_size or buffer_size < 2:
            raise ValueError(f"shuffle: buffer_size must be an integer >= 2, got "
                             f"{buffer_size!r}")
        self._size = int(buffer_size)
        self._seed = _new_seed()
        self._pass = 0
        super().__init__(child, child.get_col_names())

    def _epoch(self):
        rng = np.random.default_rng([self._seed, self._pass])
        self._pass += 1
        buf = []
        for row in self.child._epoch():
            if len(buf) < self._size:
                buf.append(row)
                continue
            i = int(rng.integers(len(buf)))
            yield buf[i]
            buf[i] = row
        for i in rng.permutation(len(buf)):
            yield buf[i]

    def get_dataset_size(self) -> int:
        return self.child.get_dataset_size()


class _Repeat(Dataset):
    def __init__(self, child, count):
        self._count = None if count is None or count == -1 else int(count)
        super().__init__(child, child.get_col_names())

    def _epoch(self):
        for _ in (range(self._count) if self._count is not None else itertools.count()):
            yield from self.child._epoch()

    def get_dataset_size(self) -> int:
        if self._count is None:
            raise RuntimeError("get_dataset_size: the dataset repeats without end")
        return self.child.get_dataset_size() * self._count

    def get_repeat_count(self) -> int:
        return -1 if self._count is None else self._count


class _Slice(Dataset):
    def __init__(self, child, start, count):
        self._start, self._count = start, count
        super().__init__(child, child.get_col_names())

    def _epoch(self):
        stop = None if self._count is None else self._start + self._count
        yield from itertools.islice(self.child._epoch(), self._start, stop)


class _Columns(Dataset):
    def __init__(self, child, columns, select):
        self._select = select
        super().__init__(child, columns)

    def _epoch(self):
        for row in self.child._epoch():
            yield self._select(row)

    def get_dataset_size(self) -> int:
        return self.child.get_dataset_size()
