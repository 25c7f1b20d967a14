"""MindSpore's model-code spellings: ``nn.Cell`` (a layer whose forward is ``construct``), the
Cell methods every layer has in MindSpore (``set_train``, ``trainable_params``, ``to_float``,
``add_flags_recursive``, ``cells_and_names``), and ``nn.Dense``."""

from __future__ import annotations

from abc import ABCMeta

from ... import nn
from ..._backend.dtypes import bfloat16, float16, float32
from .initializer import fill

__all__ = ["Cell", "Dense", "CELL_METHODS"]

_PRECISION_FLAGS = {"fp16": float16, "fp32": float32, "bf16": bfloat16}


class Cell(nn.Module, metaclass=ABCMeta):
    """MindSpore's base class: write the forward as ``construct``.

    Every minigrad layer counts as a Cell (``isinstance(nn.Conv2d(...), nn.Cell)`` holds, as in
    MindSpore, where every layer is one), and has the Cell methods below.
    """

    @classmethod
    def __subclasshook__(cls, candidate):
        if cls is Cell:  # only the base: a user's Cell subclass keeps ordinary isinstance
            return True if issubclass(candidate, nn.Module) else NotImplemented
        return NotImplemented

    def forward(self, *args, **kwargs):
        construct = getattr(type(self), "construct", None)
        if construct is None:
            raise NotImplementedError(f"{type(self).__name__} does not implement construct() "
                                      "(or forward())")
        return construct(self, *args, **kwargs)


def set_train(self, mode: bool = True):
    """MindSpore's spelling of ``train(mode)``."""
    return self.train(mode)


def trainable_params(self, recurse: bool = True) -> list:
    """MindSpore: the parameters that require grad, as a list."""
    return [p for p in self.parameters(recurse) if p.requires_grad]


def to_float(self, dtype):
    """MindSpore's ``Cell.to_float``: ``Module.set_compute_dtype``."""
    return self.set_compute_dtype(dtype)


def add_flags_recursive(self, **flags):
    """MindSpore's precision flags: ``fp16=True``, ``bf16=True`` or ``fp32=True``.

    Same as ``to_float`` with the matching dtype; all given flags False clears the setting.
    Returns self, so ``nn.Dense(84, 10).add_flags_recursive(fp32=True)`` can be assigned.
    """
    unknown = set(flags) - set(_PRECISION_FLAGS)
    if unknown:
        raise TypeError(f"{type(self).__name__}.add_flags_recursive: unsupported flags "
                        f"{sorted(unknown)}; minigrad supports the precision flags "
                        f"{sorted(_PRECISION_FLAGS)}")
    on = [k for k, v in flags.items() if v]
    if len(on) > 1:
        raise ValueError(f"{type(self).__name__}.add_flags_recursive: flags {on} conflict; "
                         "set exactly one of fp16/bf16/fp32 to True")
    return self.set_compute_dtype(_PRECISION_FLAGS[on[0]] if on else None)


def cells_and_names(self, cells=None, name_prefix: str = ""):
    """MindSpore: ``(name, cell)`` for this cell and every descendant (``named_modules``)."""
    return self.named_modules(memo=cells, prefix=name_prefix)


def cells(self):
    """MindSpore: the direct children (``children``)."""
    return self.children()


CELL_METHODS = {"set_train": set_train, "trainable_params": trainable_params,
                "to_float": to_float, "add_flags_recursive": add_flags_recursive,
                "cells_and_names": cells_and_names, "cells": cells}

class Dense(nn.Linear):
    """MindSpore's ``nn.Dense(in_channels, out_channels, weight_init=None, bias_init=None,
    has_bias=True, activation=None)``: ``nn.Linear`` with MindSpore's arguments.

    ``weight_init``/``bias_init`` take an initializer (``Normal(0.02)``), its name
    (``"normal"``, ``"xavier_uniform"``, ``"he_uniform"``, ``"zeros"``, ...) or a Tensor of the
    parameter's shape; None keeps ``nn.Linear``'s initialization (MindSpore 2.x's default is
    the same HeUniform(sqrt(5)) draw). ``activation`` is a layer or a name (``"relu"``,
    ``"tanh"``, ...).
    """

    def __init__(self, in_channels: int, out_channels: int, weight_init=None, bias_init=None,
                 has_bias: bool = True, activation=None, dtype=None):
        super().__init__(in_channels, out_channels, bias=has_bias, dtype=dtype)
        fill(self.weight, weight_init, "nn.Dense(weight_init=)")
        if has_bias:
            fill(self.bias, bias_init, "nn.Dense(bias_init=)")
        self.activation = _activation(activation)

    def forward(self, x):
        y = super().forward(x)
        return y if self.activation is None else self.activation(y)


_ACTIVATIONS = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "gelu": nn.GELU,
                "softmax": lambda: nn.Softmax(-1), "leakyrelu": nn.LeakyReLU,
                "silu": nn.SiLU, "elu": nn.ELU, "relu6": nn.ReLU6, "hswish": nn.Hardswish,
                "hsigmoid": nn.Hardsigmoid, "mish": nn.Mish}


def _activation(spec):
    if spec is None or isinstance(spec, nn.Module):
        return spec
    make = _ACTIVATIONS.get(str(spec).lower())
    if make is None:
        raise ValueError(f"nn.Dense(activation={spec!r}): unknown activation; use one of "
                         f"{sorted(_ACTIVATIONS)} or pass a layer")
    return make()

