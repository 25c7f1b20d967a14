"""``Embedding``: a lookup table of vectors indexed by integer ids; ``EmbeddingBag``: the sums,
means or maxima of bags of them."""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..core.tensor import Parameter, Tensor
from . import init
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(Module):
    """Map integer ids of any shape to rows of ``weight`` (``num_embeddings, embedding_dim``).

    Rows start as N(0, 1) samples; the ``padding_idx`` row (if given) starts at zero.

    Args:
        num_embeddings: vocabulary size.
        embedding_dim: vector size.
        padding_idx: a row initialised to zero whose gradient is always zero.
        max_norm: looked-up rows whose ``norm_type``-norm exceeds this are rescaled to it in
            place (PyTorch's renormalisation).
        norm_type: the p of that norm.
        scale_grad_by_freq: divide each row's gradient by its id's count in the batch.
        sparse: accepted for PyTorch's signature; gradients are always dense.
        _weight: an initial table (used as is); _freeze: the table does not require grad.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None):
        super().__init__()
        for what, v in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if not hasattr(v, "__index__") or isinstance(v, bool) or v < 0:
                raise ValueError(f"Embedding: {what} must be a non-negative int, got {v!r}")
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"Embedding: padding_idx {padding_idx} is not a row of a "
                             f"{num_embeddings}-row table; use [{-num_embeddings}, "
                             f"{num_embeddings - 1}] or None")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = init._empty_param((num_embeddings, embedding_dim), device, dtype)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: _weight of shape {tuple(_weight.shape)} does not "
                                 f"match ({num_embeddings}, {embedding_dim})")
            self.weight = _weight if isinstance(_weight, Parameter) else Parameter(_weight)
        if _freeze:
            self.weight.requires_grad_(False)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, sparse: bool = False):
        """An Embedding over the 2-D table ``embeddings`` (copied), frozen by default."""
        if embeddings.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-D, got shape "
                             f"{tuple(embeddings.shape)}")
        data = embeddings._data.copy() if isinstance(embeddings, Tensor) else \
            np.array(embeddings)
        rows, dim = data.shape
        return cls(rows, dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=Parameter(data), _freeze=freeze)

    def forward(self, indices):
        return F.embedding(indices, self.weight, padding_idx=self.padding_idx,
                           max_norm=self.max_norm, norm_type=self.norm_type,
                           scale_grad_by_freq=self.scale_grad_by_freq)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embedding rows, without materialising the rows of
    every bag separately (PyTorch's ``EmbeddingBag``).

    Args:
        num_embeddings, embedding_dim: the table's size.
        max_norm, norm_type, scale_grad_by_freq, sparse: as :class:`Embedding`'s.
        mode: "sum", "mean" or "max" of each bag (an empty bag gives zeros).
        include_last_offset: ``offsets`` ends with the input's length (CSR layout).
        padding_idx: ids equal to it are left out of their bag (and get no gradient).

    ``forward(input, offsets=None, per_sample_weights=None)``: ``input`` is ``(B, L)`` (one
    bag per row) or 1-D with ``offsets`` giving each bag's start; ``per_sample_weights`` (with
    mode "sum") scale each looked-up row. Returns ``(B, embedding_dim)``.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device=None, dtype=None):
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"EmbeddingBag: padding_idx {padding_idx} is not a row of a "
                                 f"{num_embeddings}-row table")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is None:
            self.weight = init._empty_param((num_embeddings, embedding_dim), device, dtype)
            self.reset_parameters()
        else:
            self.weight = _weight if isinstance(_weight, Parameter) else Parameter(_weight)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
