"""minigrad: a tape-based autodiff framework over NumPy (CPU) and CuPy (GPU) with automatic mixed
precision built into the engine."""

from . import _backend
from ._backend.dtypes import (
    bfloat16, bool_, float16, float32, float64, int8, int16, int32, int64, uint8,
)
from .tensor import (
    Parameter, Tensor, arange, empty, eye, from_dlpack, full, full_like, linspace, manual_seed,
    normal, ones, ones_like, rand, randint, randn, tensor, uniform, zeros, zeros_like,
)
from .autodiff import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from . import autodiff, cuda, functional
from .serialization import load, save
from . import amp, data, hub, models, nn, optimizer

__version__ = "0.1.0"

__all__ = [
    "Tensor", "Parameter", "tensor", "zeros", "ones", "full", "empty", "arange", "linspace",
    "eye", "randn", "rand", "randint", "normal", "uniform", "zeros_like", "ones_like",
    "full_like", "manual_seed", "from_dlpack", "no_grad", "enable_grad", "set_grad_enabled",
    "is_grad_enabled", "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
    "int64", "uint8", "bool_", "autodiff", "functional", "cuda", "save", "load", "amp", "data",
    "hub", "models", "nn", "optimizer",
]
