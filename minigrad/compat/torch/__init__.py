"""PyTorch's spellings: the module paths ``minigrad.optim``, ``minigrad.autograd``,
``minigrad.cuda`` (with ``minigrad.cuda.amp``), ``minigrad.nn.functional``,
``minigrad.backends`` and ``minigrad.accelerator``, the top-level autocast functions
(``mg.autocast``, ``mg.is_autocast_enabled``, ...), the top-level ops, dtypes and types
(``mg.cat``, ``mg.sum(x, dim=1)``, ``mg.long``, ``mg.device``, ``mg.Size``: ``functions.py``)
and ``autograd.gradcheck``."""

import sys

from ... import amp, functional, nn  # noqa: F401  (nn: the parent of nn.functional)
from .._attach import attach_module, attach_names
from . import accelerator, autograd, backends, cuda, functions, gradcheck, nn_functional, optim
from .generator import Generator

attach_module("minigrad.optim", optim)
attach_module("minigrad.optim.lr_scheduler", optim.lr_scheduler)  # from torch.optim.lr_scheduler
attach_module("minigrad.autograd", autograd)
attach_module("minigrad.cuda", cuda)
attach_module("minigrad.cuda.amp", cuda.amp)
attach_module("minigrad.nn.functional", nn_functional)
attach_names(sys.modules["minigrad"], autocast=amp.autocast,
             clear_autocast_cache=amp.clear_autocast_cache,
             get_autocast_dtype=amp.get_autocast_dtype,
             is_autocast_available=amp.is_autocast_available,
             is_autocast_enabled=amp.is_autocast_enabled,
             set_autocast_enabled=amp.set_autocast_enabled)
attach_names(sys.modules["minigrad"], **functions.NAMES)
attach_names(sys.modules["minigrad"], Generator=Generator)
attach_names(autograd, gradcheck=gradcheck.gradcheck, gradgradcheck=gradcheck.gradgradcheck)
attach_module("minigrad.backends", backends)
attach_module("minigrad.backends.cudnn", backends.cudnn)
attach_module("minigrad.backends.cuda", backends.cuda)
attach_module("minigrad.backends.mps", backends.mps)
attach_module("minigrad.accelerator", accelerator)

# torch.utils.data (OneFlow's oneflow.utils.data is the same path)
from ... import utils  # noqa: E402  (the parent of utils.data)
from . import utils_data  # noqa: E402

attach_module("minigrad.utils.data", utils_data)
attach_module("minigrad.utils.data.sampler", utils_data.sampler)
attach_module("minigrad.utils.data.distributed", utils_data.distributed)
del utils

__all__ = ["autograd", "cuda", "optim"]
