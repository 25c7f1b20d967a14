"""Embedding lookup (``torch.nn.functional``'s "sparse functions").

The gradient scatter-adds rows in float32 or wider (repeated indices accumulate without float16
rounding). Ids outside ``[0, num_embeddings)`` raise ``IndexError`` (checked on the host for NumPy
arrays; on the GPU under ``_backend.indexing.index_debug()``).
"""

from __future__ import annotations

import numpy as np

from .._backend import get_array_module
from .._backend.indexing import check_index_range, poison, scatter_add_rows
from .._backend.dtypes import float32, is_low_precision
from ..core.function import Function
from ..core.modes import grad_enabled
from ..core.tensor import Tensor
from ._utils import acc_dtype, const, op_error, owned_for_backward, to_dtype
from .elementwise import where
from .reduction import max as _max
from .shape import index_add

__all__ = ["embedding", "embedding_bag"]


class EmbeddingFunction(Function):
    name = "embedding"

    def forward(self, indices, weight, padding_idx, scale=None):
        xp = get_array_module(weight)
        if indices.dtype.kind not in "iu":
            raise op_error("embedding", "indices must be an integer tensor; cast with "
                           "astype('int64')", indices_dtype=indices.dtype)
        # Negative ids are errors (PyTorch), not NumPy's wrap-around to the last rows.
        indices, bad = check_index_range(xp, indices, weight.shape[0], "embedding",
                                         allow_negative=False,
                                         dim_name="the embedding table (num_embeddings)")
        out = xp.take(weight, indices, axis=0)
        self.indices, self.rows, self.padding_idx = indices, weight.shape[0], padding_idx
        self.scale = scale
        return poison(xp, out, None if bad is None else bad[..., None])

    def backward(self, gy):
        return None, EmbeddingBackward.apply(gy, indices=self.indices, rows=self.rows,
                                             padding_idx=self.padding_idx, scale=self.scale)


class EmbeddingBackward(Function):
    name = "embedding_backward"

    def forward(self, gy, indices, rows, padding_idx, scale=None):
        xp = get_array_module(gy)
        self.indices, self.padding_idx, self.scale = indices, padding_idx, scale
        dim = gy.shape[indices.ndim:]
        rows_g = gy.reshape((-1,) + dim)
        if scale is not None:  # scale_grad_by_freq: each row's gradient over its id's count
            rows_g = rows_g.astype(acc_dtype(gy.dtype)) * scale.reshape((-1,) + (1,) * len(dim))
        gw = scatter_add_rows(xp, rows, indices, rows_g, acc_dtype(gy.dtype))
        if padding_idx is not None:
            gw[padding_idx] = 0
        return to_dtype(gw, gy.dtype)

    def backward(self, ggw):
        # The gradient is linear in gy: its own gradient is the lookup again.
        if self.padding_idx is not None:
            ggw = ggw * _padding_keep(ggw, self.padding_idx)
        out = EmbeddingFunction.apply(self.indices, ggw, padding_idx=self.padding_idx)
        if self.scale is not None:
            out = out * Tensor._make(self.scale[..., None].astype(out.dtype), False, None, 0)
        return out


def _padding_keep(like: Tensor, padding_idx):
    xp = get_array_module(like._data)
    keep = xp.ones((like.shape[0],) + (1,) * (like.ndim - 1), dtype=like.dtype)
    keep[padding_idx] = 0
    return Tensor._make(keep, False, None, 0)


def embedding(indices: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Look up rows of ``weight`` (num_embeddings, dim) at integer ``indices`` (any shape).

    Args:
        indices: integer Tensor; the output has shape ``indices.shape + (dim,)``.
        weight: the embedding table.
        padding_idx: a row whose gradient is always zero (negative values count from the end).
        max_norm: rows looked up whose ``norm_type``-norm exceeds this are first rescaled to
            norm ``max_norm`` in place in ``weight`` (outside the graph), as PyTorch's.
        norm_type: the p of that norm.
        scale_grad_by_freq: divide each row's gradient by the number of times its id occurs
            in ``indices``.
        sparse: accepted for PyTorch's signature; the gradient is always dense.

    Returns:
        A Tensor of dtype ``weight.dtype``.
    """
    if weight.ndim != 2:
        raise op_error("embedding", "weight must be 2-D (num_embeddings, dim)",
                       weight_shape=weight.shape)
    if padding_idx is not None:
        n = weight.shape[0]
        if not -n <= padding_idx < n:
            raise op_error("embedding", "padding_idx must index a row of weight",
                           padding_idx=padding_idx, weight_shape=weight.shape)
        padding_idx %= n
    if max_norm is not None:
        _renorm_rows(indices, weight, float(max_norm), float(norm_type))
    scale = None
    if scale_grad_by_freq:
        ids = indices._data if isinstance(indices, Tensor) else indices
        xp = get_array_module(weight._data)
        ids = xp.asarray(ids).astype("int64").ravel()
        counts = xp.bincount(ids[(ids >= 0) & (ids < weight.shape[0])],
                             minlength=weight.shape[0])
        scale = (1.0 / xp.maximum(counts, 1)[xp.clip(ids, 0, weight.shape[0] - 1)]).reshape(
            tuple(indices.shape))
    if isinstance(indices, Tensor) and grad_enabled.get() and weight.requires_grad:
        indices = const(owned_for_backward(indices, True))  # the rows the forward read
    return EmbeddingFunction.apply(indices, weight, padding_idx=padding_idx, scale=scale)


def _renorm_rows(indices, weight: Tensor, max_norm: float, norm_type: float) -> None:
    """PyTorch's ``embedding_renorm_``: the rows ``indices`` reads, rescaled in place to norm
    ``max_norm`` where larger (``max_norm / (norm + 1e-7)``, computed in float32 or wider)."""
    xp = get_array_module(weight._data)
    ids = indices._data if isinstance(indices, Tensor) else xp.asarray(indices)
    ids = xp.unique(ids.astype("int64").ravel())
    ids = ids[(ids >= 0) & (ids < weight.shape[0])]
    rows = weight._data[ids].astype(acc_dtype(weight.dtype))
    if norm_type == float("inf"):
        norm = xp.abs(rows).max(axis=1)
    else:
        norm = (xp.abs(rows) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    big = norm > max_norm
    if bool(big.any()):
        ids, rows = ids[big], rows[big] * (max_norm / (norm[big] + 1e-7))[:, None]
        weight._data[ids] = rows.astype(weight.dtype)
        weight._version += 1


# --------------------------------------------------------------------------- embedding_bag
def _bags(input, offsets, include_last_offset):
    """(flat ids, bag of each id, number of bags), as NumPy arrays."""
    ids = input.numpy() if isinstance(input, Tensor) else np.asarray(input)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding_bag: input must hold integer ids, got {ids.dtype}")
    if ids.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None for 2-D input (one bag "
                             "per row)")
        b, length = ids.shape
        return ids.ravel(), np.repeat(np.arange(b), length), b
    if ids.ndim != 1 or offsets is None:
        raise ValueError("embedding_bag: expected 2-D input, or 1-D input with offsets, got "
                         f"shape {ids.shape}")
    offs = offsets.numpy() if isinstance(offsets, Tensor) else np.asarray(offsets)
    offs = offs.astype(np.int64).ravel()
    if offs.size == 0 or offs[0] != 0 or (np.diff(offs) < 0).any() or offs[-1] > ids.size:
        raise ValueError(f"embedding_bag: offsets must start at 0 and be non-decreasing "
                         f"within the input's length {ids.size}, got {offs.tolist()}")
    if include_last_offset:
        offs = offs[:-1]
    bag = np.searchsorted(offs, np.arange(ids.size), side="right") - 1
    return ids, bag, offs.size


def embedding_bag(input, weight: Tensor, offsets=None, max_norm: float | None = None,  # noqa: A002
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of rows of ``weight``, without materialising the rows of
    every bag separately (``F.embedding_bag``).

    ``input`` is ``(B, L)`` (one bag per row) or 1-D with ``offsets`` giving each bag's start
    (``include_last_offset``: ``offsets`` ends with the input's length, CSR layout);
    ``per_sample_weights`` (mode "sum") scale each looked-up row; ids equal to ``padding_idx``
    are left out of their bag; an empty bag gives zeros. ``max_norm``, ``norm_type``,
    ``scale_grad_by_freq`` are :func:`embedding`'s; ``sparse`` is accepted and ignored.
    Returns ``(B, embedding_dim)``.
    """
    if mode not in ("sum", "mean", "max"):
        raise op_error("embedding_bag", "mode must be 'sum', 'mean' or 'max'", mode=repr(mode))
    if weight.dtype.kind != "f" and not is_low_precision(weight.dtype):  # as PyTorch's
        raise op_error("embedding_bag", "weight must be a floating tensor", dtype=weight.dtype)
    if padding_idx is not None:
        n = weight.shape[0]
        if not -n <= padding_idx < n:
            raise op_error("embedding_bag", f"padding_idx is not a row of a {n}-row table",
                           padding_idx=padding_idx)
        padding_idx %= n
    ids, bag, nbags = _bags(input, offsets, include_last_offset)
    if per_sample_weights is not None and mode != "sum":
        raise ValueError("embedding_bag: per_sample_weights is only supported for "
                         "mode='sum'")
    keep = np.ones(ids.size, dtype=bool) if padding_idx is None else \
        ids != padding_idx
    xp = get_array_module(weight._data)
    sel = np.nonzero(keep)[0]
    dtype = weight.dtype
    rows = embedding(Tensor._make(xp.asarray(ids[sel]), False, None, 0), weight,
                     max_norm=max_norm, norm_type=norm_type,
                     scale_grad_by_freq=scale_grad_by_freq)
    if is_low_precision(dtype):
        rows = rows.astype(float32)
    if per_sample_weights is not None:
        w = per_sample_weights.reshape(-1)[Tensor._make(xp.asarray(sel), False, None, 0)]
        rows = rows * w.astype(rows.dtype).unsqueeze(-1)
    bag = bag[sel]
    count = np.bincount(bag, minlength=nbags)
    zeros = Tensor._make(xp.zeros((nbags, weight.shape[1]), dtype=rows.dtype), False,
                         None, 0)
    if mode == "max":
        width = int(count.max(initial=0))
        if width == 0:
            return zeros.astype(dtype)
        start = np.concatenate([[0], np.cumsum(count)[:-1]])
        slot = start[:, None] + np.arange(width)[None, :]          # (bags, width)
        valid = np.arange(width)[None, :] < count[:, None]
        gathered = rows[Tensor._make(xp.asarray(np.where(valid, slot, 0)), False, None, 0)]
        mask = Tensor._make(xp.asarray(valid[..., None]), False, None, 0)
        out = _max(where(mask, gathered, float("-inf")), axis=1)
        nonempty = Tensor._make(xp.asarray((count > 0)[:, None]), False, None, 0)
        return where(nonempty, out, 0.0).astype(dtype)
    # the ids arrive sorted by bag (offsets are non-decreasing), as index_add wants nothing
    out = index_add(zeros, 0, Tensor._make(xp.asarray(bag), False, None, 0), rows)
    if mode == "mean":
        div = Tensor._make(xp.asarray(np.maximum(count, 1)[:, None], dtype=rows.dtype),
                           False, None, 0)
        out = out / div
    return out.astype(dtype)
