"""minigrad: a tape-based autodiff framework over NumPy (CPU) and CuPy (GPU) with automatic mixed
precision built into the engine."""

from . import _backend
from ._backend.dtypes import (
    bfloat16, bool_, float16, float32, float64, get_default_dtype, int8, int16, int32, int64,
    set_default_dtype, uint8,
)
from .core import Parameter, Tensor
from .core.creation import (
    arange, as_tensor, empty, eye, from_dlpack, from_numpy, full, full_like, get_rng_state,
    linspace, manual_seed, normal, ones, ones_like, rand, randint, randn, set_rng_state, tensor,
    uniform, zeros, zeros_like,
)
from .autodiff import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from . import autodiff, functional
from .serialization import load, save
from . import amp, data, hub, models, nn, optimizer, utils
from . import compat  # the peers' spellings: mg.optim, mg.cuda, nn.Graph, amp.enabled, ...

__version__ = "0.1.0"


def set_default_device(device) -> None:
    """Device of tensors made without ``device=`` (``mg.tensor``, ``mg.zeros``, ``mg.randn``, ...).

    PyTorch's ``torch.set_default_device``: layers built without ``device=`` put their
    parameters and buffers there too.
    """
    device = _backend.normalize_device(device if device is not None else "cpu")
    if device != "cpu" and not _backend.cuda_available():
        raise RuntimeError(f"set_default_device({device!r}): CuPy sees no GPU; use 'cpu'")
    _backend.default_device[0] = device


def get_default_device() -> str:
    """The device of tensors made without ``device=`` (see :func:`set_default_device`)."""
    return _backend.default_device[0]

__all__ = [
    "Tensor", "Parameter", "tensor", "zeros", "ones", "full", "empty", "arange", "linspace",
    "eye", "randn", "rand", "randint", "normal", "uniform", "zeros_like", "ones_like",
    "full_like", "manual_seed", "get_rng_state", "set_rng_state", "from_dlpack", "from_numpy",
    "as_tensor", "no_grad", "enable_grad", "set_grad_enabled",
    "is_grad_enabled", "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
    "int64", "uint8", "bool_", "autodiff", "functional", "cuda", "save", "load", "amp", "data",
    "hub", "models", "nn", "optimizer", "autograd", "optim", "utils", "autocast",
    "clear_autocast_cache", "get_autocast_dtype", "is_autocast_available", "is_autocast_enabled",
    "set_autocast_enabled", "set_default_device", "get_default_device", "set_default_dtype",
    "get_default_dtype",
]
# mg.cat, mg.long, mg.device, ... (not mg.sum); the names that are minigrad's own and PyTorch's
# at once (set_default_dtype) are listed once
__all__ += [n for n in compat.torch.functions.EXPORTED if n not in __all__]
