"""``Embedding``: a lookup table of vectors indexed by integer ids."""

from __future__ import annotations

from .. import functional as F
from . import init
from .module import Module

__all__ = ["Embedding"]


class Embedding(Module):
    """Map integer ids of any shape to rows of ``weight`` (``num_embeddings, embedding_dim``).

    Rows start as N(0, 1) samples; the ``padding_idx`` row (if given) starts at zero.

    Args:
        num_embeddings: vocabulary size.
        embedding_dim: vector size.
        padding_idx: a row initialised to zero whose gradient is always zero.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 device=None, dtype=None):
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
        self.weight = init._empty_param((num_embeddings, embedding_dim), device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, indices):
        return F.embedding(indices, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
