"""Dropout.

The mask is drawn from minigrad's global generator (``mg.manual_seed`` makes it repeat) and the
backward is the same masked multiply, so it differentiates any number of times.
"""

from __future__ import annotations

import math
import operator

from .._backend import device_of, get_array_module, kernels
from .._backend import random as _random
from .._backend.dtypes import float32, is_floating
from ..core.function import Function
from ..core.tensor import Tensor
from ._composite import composite
from ._utils import acc_dtype, check_floating, op_error, to_dtype

__all__ = ["alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d",
           "feature_alpha_dropout"]


class DropoutFunction(Function):
    name = "dropout"

    def forward(self, x, mask, scale):
        self.mask, self.scale = mask, scale
        m = mask.astype(acc_dtype(x.dtype))
        m *= scale
        # float16 input is multiplied in float32 so 1 / (1 - p) is not rounded to float16
        # (on the CPU with x widened by the vectorised cast: NumPy's mixed float16 * float32
        # product converts element by element; the same product)
        return to_dtype(kernels.binary(operator.mul, x, m), x.dtype)

    def backward(self, gy):
        return DropoutFunction.apply(gy, mask=self.mask, scale=self.scale)


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by 1/(1-p).

    Args:
        x: floating input.
        p: drop probability in [0, 1]; ``p == 1`` gives zeros.
        training: when False (or ``p == 0``) ``x`` is returned unchanged.

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    if not 0.0 <= p <= 1.0:
        raise op_error("dropout", "p must be in [0, 1]", p=p)
    if not training or p == 0.0:
        return x
    if x._data.size == 0 and not is_floating(x.dtype):
        return x  # nothing to drop: as unchanged as the no-mask cases above (PyTorch too)
    check_floating("dropout", x)
    gen = _random.generator(device_of(x._data))
    mask = gen.random(x.shape, dtype=float32) >= p
    return DropoutFunction.apply(x, mask=mask, scale=0.0 if p == 1.0 else 1.0 / (1.0 - p))


def _check_p(op, p):
    if not 0.0 <= p <= 1.0:
        raise op_error(op, "p must be in [0, 1]", p=p)


def _feature_shape(op, x, spatial):
    """The mask shape of a channel-wise dropout: one draw per (sample, channel); unbatched
    input ``(C, *spatial)`` draws per channel."""
    if spatial == 2 and x.ndim == 3:  # PyTorch reads 3-D input to dropout2d as (N, C, L)
        return tuple(x.shape[:2]) + (1,)
    if x.ndim == spatial + 1:
        return tuple(x.shape[:1]) + (1,) * spatial
    if x.ndim != spatial + 2:
        raise op_error(op, f"expected a {spatial + 1}-D (unbatched) or {spatial + 2}-D input",
                       shape=x.shape)
    return tuple(x.shape[:2]) + (1,) * spatial


def _feature_dropout(op, x, p, training, spatial):
    _check_p(op, p)
    shape = _feature_shape(op, x, spatial)
    if not training or p == 0.0:
        return x
    if x._data.size == 0 and not is_floating(x.dtype):
        return x  # nothing to drop (as dropout)
    check_floating(op, x)
    xp = get_array_module(x._data)
    gen = _random.generator(device_of(x._data))
    mask = xp.broadcast_to(gen.random(shape, dtype=float32) >= p, x.shape)
    return DropoutFunction.apply(x, mask=mask, scale=0.0 if p == 1.0 else 1.0 / (1.0 - p))


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` (or ``(C, L)``) input with probability ``p``,
    scaling the rest by 1/(1-p). ``inplace`` is accepted and ignored."""
    return _feature_dropout("dropout1d", input, p, training, 1)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` (or ``(C, H, W)``, read as ``(N, C, L)`` as
    PyTorch does) input with probability ``p``, scaling the rest by 1/(1-p)."""
    return _feature_dropout("dropout2d", input, p, training, 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input with
    probability ``p``, scaling the rest by 1/(1-p)."""
    return _feature_dropout("dropout3d", input, p, training, 3)


_SELU_ALPHA = 1.7580993408473766  # -scale * alpha of SELU: the value a dropped unit takes
_AlphaDropout = composite("alpha_dropout", lambda x, m, b: x * m + b)


def _alpha_dropout(op, x, p, training, feature):
    _check_p(op, p)
    if not training or p == 0.0:
        return x
    if x._data.size == 0 and not is_floating(x.dtype):
        return x  # nothing to drop (as dropout)
    check_floating(op, x)
    if p == 1.0:
        return x * 0.0
    shape = x.shape
    if feature:
        if x.ndim < 2:
            raise op_error(op, "expected an input of at least 2 dimensions (N, C, *)",
                           shape=x.shape)
        shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
    gen = _random.generator(device_of(x._data))
    keep = (gen.random(shape, dtype=float32) >= p).astype(float32)
    a = 1.0 / math.sqrt((_SELU_ALPHA ** 2 * p + 1) * (1 - p))
    b = (keep - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    return _AlphaDropout.apply(x, to_dtype(keep * a, x.dtype), to_dtype(b, x.dtype), kw={})


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                  inplace: bool = False) -> Tensor:
    """Dropout for self-normalising (SELU) networks: dropped elements take SELU's negative
    saturation value and an affine map keeps the mean and variance (PyTorch's constants)."""
    return _alpha_dropout("alpha_dropout", input, p, training, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False) -> Tensor:
    """:func:`alpha_dropout` of whole channels of ``(N, C, *)`` input."""
    return _alpha_dropout("feature_alpha_dropout", input, p, training, True)
