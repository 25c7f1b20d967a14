"""Dropout layers: ``Dropout`` zeroes elements with probability ``p`` while training and scales
the rest by 1/(1-p); ``Dropout1d``/``2d``/``3d`` zero whole channels; ``AlphaDropout`` and
``FeatureAlphaDropout`` keep a SELU network's mean and variance. All are the identity in
evaluation mode."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """The dropout layers' shared base (PyTorch's ``_DropoutNd``): each public class derives
    from it alone, so ``isinstance(m, nn.Dropout)`` is false for a Dropout2d, as in PyTorch."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{type(self).__name__}: p must be in [0, 1], got {p}")
        self.p = p

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Dropout(_DropoutNd):
    """Randomly zero elements with probability ``p`` in training mode; identity in eval mode.

    Args:
        p: drop probability in [0, 1).
        inplace: accepted for PyTorch compatibility and ignored.
    """

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        return F.dropout(x, self.p, True)


class _FeatureDropout(_DropoutNd):
    _spatial = 1

    def forward(self, x):
        fn = (F.dropout1d, F.dropout2d, F.dropout3d)[self._spatial - 1]
        return fn(x, self.p, self.training)


class Dropout1d(_FeatureDropout):
    """Zero whole channels of ``(N, C, L)`` (or ``(C, L)``) input with probability ``p`` while
    training, scaling the rest by 1/(1-p)."""


class Dropout2d(_FeatureDropout):
    """Zero whole channels of ``(N, C, H, W)`` (or ``(C, H, W)``) input with probability ``p``
    while training, scaling the rest by 1/(1-p)."""

    _spatial = 2


class Dropout3d(_FeatureDropout):
    """Zero whole channels of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input with probability
    ``p`` while training, scaling the rest by 1/(1-p)."""

    _spatial = 3


class AlphaDropout(_DropoutNd):
    """Dropout for self-normalising (SELU) networks: dropped elements take SELU's negative
    saturation value and an affine map keeps the mean and variance (PyTorch's constants)."""

    def forward(self, x):
        return F.alpha_dropout(x, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """:class:`AlphaDropout` of whole channels of ``(N, C, *)`` input."""

    def forward(self, x):
        return F.feature_alpha_dropout(x, self.p, self.training)
