"""``Dropout``: zero elements with probability ``p`` while training, scale the rest by 1/(1-p)."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Randomly zero elements with probability ``p`` in training mode; identity in eval mode.

    Args:
        p: drop probability in [0, 1).
        inplace: accepted for PyTorch compatibility and ignored.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        return F.dropout(x, self.p, True)

    def extra_repr(self) -> str:
        return f"p={self.p}"
