"""Weight initialisation, written in place with minigrad's global generator.

Every function draws from ``minigrad._backend.random.generator(device)`` so ``mg.manual_seed``
makes model construction reproducible, writes through ``Tensor._set_data_`` (bumping the
version counter, keeping the object) and returns the tensor. Formulas follow PyTorch.
"""

from __future__ import annotations

import math

import numpy as np

from .._backend import random as _random
from .._backend.dtypes import get_default_dtype, normalize_dtype
from ..core.grad_mode import no_grad
from ..core.tensor import Parameter, Tensor
from ..core.creation import empty

__all__ = [
    "calculate_gain",
    "constant_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def _draw_dtype(t: Tensor):
    # Draw in float64 only for float64 tensors; fp16/bf16 get float32 draws rounded on write.
    return np.float64 if t.dtype == np.float64 else np.float32


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for ``nonlinearity`` (PyTorch's table).

    Args:
        nonlinearity: "linear", "conv1d", "conv2d", "conv_transpose2d", "sigmoid", "tanh",
            "relu", "leaky_relu" or "selu".
        param: the negative slope for "leaky_relu" (default 0.01).
    """
    if nonlinearity in ("linear", "identity", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor: Tensor):
    """``(fan_in, fan_out)``: dim 1 (resp. 0) times the receptive field size."""
    if tensor.ndim < 2:
        raise ValueError(f"fan in/out needs a tensor with at least 2 dims, got shape "
                         f"{tensor.shape}")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"kaiming init: mode must be 'fan_in' or 'fan_out', got {mode!r}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with samples from U(a, b)."""
    with no_grad():
        gen = _random.generator(tensor.device)
        draw = gen.random(tensor.shape, dtype=_draw_dtype(tensor))
        return tensor._set_data_(draw * (b - a) + a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with samples from N(mean, std**2)."""
    with no_grad():
        gen = _random.generator(tensor.device)
        draw = gen.standard_normal(tensor.shape, dtype=_draw_dtype(tensor))
        return tensor._set_data_(draw * std + mean)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        tensor._data[...] = val
        tensor._version += 1
        return tensor


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan).

    ``a=sqrt(5)`` with the default leaky_relu gain gives b = 1/sqrt(fan_in), the default of
    Linear and Conv weights.
    """
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(tensor, mode))
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """He normal: N(0, std**2) with std = gain / sqrt(fan)."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)


def _empty_param(shape, device=None, dtype=None) -> Parameter:
    """An uninitialised Parameter for a layer to fill, of ``dtype`` or, for None, the default
    dtype (``mg.get_default_dtype()``, float32 unless changed), as PyTorch's layers."""
    t = empty(tuple(shape), dtype=normalize_dtype(dtype) or get_default_dtype(), device=device)
    return Parameter(t._data)
