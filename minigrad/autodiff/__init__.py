"""Autodiff: the Function base and dispatch point, the backward engine, GradManager, grad modes."""

from ..core.engine import grad
from ..core.function import Function
from .grad_manager import GradManager
from ..core.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["Function", "GradManager", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled"]
