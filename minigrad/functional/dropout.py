"""Dropout.

The mask is drawn from minigrad's global generator (``mg.manual_seed`` makes it repeat) and the
backward is the same masked multiply, so it differentiates any number of times.
"""

from __future__ import annotations

from .._backend import device_of
from .._backend import random as _random
from .._backend.dtypes import float32, is_floating
from ..core.function import Function
from ..core.tensor import Tensor
from ._utils import acc_dtype, check_floating, op_error

__all__ = ["dropout"]


class DropoutFunction(Function):
    name = "dropout"

    def forward(self, x, mask, scale):
        self.mask, self.scale = mask, scale
        m = mask.astype(acc_dtype(x.dtype))
        m *= scale
        # float16 input is multiplied in float32 so 1 / (1 - p) is not rounded to float16.
        return (x * m).astype(x.dtype, copy=False)

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
