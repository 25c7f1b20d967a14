"""PyTorch's spellings: the module paths ``minigrad.optim``, ``minigrad.autograd``,
``minigrad.cuda`` (with ``minigrad.cuda.amp``) and ``minigrad.nn.functional``, and the
top-level autocast functions (``mg.autocast``, ``mg.is_autocast_enabled``, ...)."""

import sys

from ... import amp, functional, nn  # noqa: F401  (nn: the parent of nn.functional)
from .._attach import attach_module, attach_names
from . import autograd, cuda, optim

attach_module("minigrad.optim", optim)
attach_module("minigrad.autograd", autograd)
attach_module("minigrad.cuda", cuda)
attach_module("minigrad.cuda.amp", cuda.amp)
attach_module("minigrad.nn.functional", functional)
attach_names(sys.modules["minigrad"], autocast=amp.autocast,
             clear_autocast_cache=amp.clear_autocast_cache,
             get_autocast_dtype=amp.get_autocast_dtype,
             is_autocast_available=amp.is_autocast_available,
             is_autocast_enabled=amp.is_autocast_enabled,
             set_autocast_enabled=amp.set_autocast_enabled)

__all__ = ["autograd", "cuda", "optim"]
