"""Dropout layers: ``Dropout`` zeroes elements with probability ``p`` while training and scales
the rest by 1/(1-p); ``Dropout1d``/``2d``/``3d`` zero whole channels; ``AlphaDropout`` and
``FeatureAlphaDropout`` keep a SELU network's mean and variance. All are the identity in
evaluation mode."""

from __future__ import annotations

import math

from .. import functional as F
from .._backend import device_of
from .._backend import random as _random
from .._backend.dtypes import float32
from ..core.tensor import Tensor
from .module import Module

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
           "FeatureAlphaDropout"]


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


def _keep_mask(x, shape, p):
    """A float32 array of ``shape`` (broadcast against ``x``): 1 with probability 1 - p."""
    gen = _random.generator(device_of(x._data))
    return (gen.random(shape, dtype=float32) >= p).astype(float32)


def _feature_shape(name, x, spatial):
    """The mask shape of a channel-wise dropout: one draw per (sample, channel); unbatched
    input ``(C, *spatial)`` draws per channel."""
    if spatial == 2 and x.ndim == 3:  # PyTorch reads 3-D input to Dropout2d as (N, C, L)
        return tuple(x.shape[:2]) + (1,)
    if x.ndim == spatial + 1:
        return tuple(x.shape[:1]) + (1,) * spatial
    if x.ndim != spatial + 2:
        raise ValueError(f"{name}: expected a {spatial + 1}-D (unbatched) or {spatial + 2}-D "
                         f"input, got shape {x.shape}")
    return tuple(x.shape[:2]) + (1,) * spatial


class _FeatureDropout(Dropout):
    _spatial = 1

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        mask = _keep_mask(x, _feature_shape(type(self).__name__, x, self._spatial), self.p)
        scale = 0.0 if self.p == 1.0 else 1.0 / (1.0 - self.p)
        return x * Tensor._make((mask * scale).astype(x.dtype), False, None, 0)


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


_SELU_ALPHA = 1.7580993408473766  # -scale * alpha of SELU: the value a dropped unit takes


class AlphaDropout(Dropout):
    """Dropout for self-normalising (SELU) networks: dropped elements take SELU's negative
    saturation value and an affine map keeps the mean and variance (PyTorch's constants)."""

    _feature = False

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        if self.p == 1.0:
            return x * 0.0
        shape = x.shape
        if self._feature:
            shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
        keep = _keep_mask(x, shape, self.p)
        a = 1.0 / math.sqrt((_SELU_ALPHA ** 2 * self.p + 1) * (1 - self.p))
        b = (keep - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * self.p
        return x * Tensor._make((keep * a).astype(x.dtype), False, None, 0) + \
            Tensor._make(b.astype(x.dtype), False, None, 0)


class FeatureAlphaDropout(AlphaDropout):
    """:class:`AlphaDropout` of whole channels of ``(N, C, *)`` input."""

    _feature = True
