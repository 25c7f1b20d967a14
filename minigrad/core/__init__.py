"""The engine's floor: ``Tensor``, ``Function`` and its dispatch point, the backward engine, the
modes (one ContextVar each) and the cast primitive.

Everything above builds on these; nothing here imports upward. ``Tensor``'s operators are
installed by ``minigrad.functional`` and ``Tensor.backward`` by the engine (``engine.py``).
"""

from . import engine  # installs Tensor.backward
from .function import Cast, Function
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .tensor import Parameter, Tensor

__all__ = ["Cast", "Function", "Parameter", "Tensor", "enable_grad", "engine", "is_grad_enabled",
           "no_grad", "set_grad_enabled"]
