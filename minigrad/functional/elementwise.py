"""Elementwise ops: arithmetic, transcendental functions, activations, comparisons.

Binary ops take Tensors or Python scalars; a Python scalar never widens a float16 tensor (NumPy 2
treats it as weakly typed). Broadcast gradients are summed back to each input's shape.
"""

from __future__ import annotations

from .._backend import get_array_module
from ..autodiff.function import Function
from ..tensor import Tensor
from ._utils import shape_of, sum_to_shape

__all__ = ["add", "sub", "mul", "div", "neg", "exp"]


class Add(Function):
    name = "add"

    def forward(self, a, b):
        return a + b

    def backward(self, gy):
        a, b = self.inputs
        return sum_to_shape(gy, shape_of(a)), sum_to_shape(gy, shape_of(b))


class Sub(Function):
    name = "sub"

    def forward(self, a, b):
        return a - b

    def backward(self, gy):
        a, b = self.inputs
        return sum_to_shape(gy, shape_of(a)), sum_to_shape(-gy, shape_of(b))


class Mul(Function):
    name = "mul"

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b

    def backward(self, gy):
        a, b = self.saved_tensors
        return sum_to_shape(gy * b, shape_of(a)), sum_to_shape(gy * a, shape_of(b))


class Div(Function):
    name = "div"

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a / b

    def backward(self, gy):
        a, b = self.saved_tensors
        ga = gy / b
        return sum_to_shape(ga, shape_of(a)), sum_to_shape(-ga * a / b, shape_of(b))


class Neg(Function):
    name = "neg"

    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class Exp(Function):
    name = "exp"

    def forward(self, x):
        y = get_array_module(x).exp(x)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy * y


def _binary(cls, a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{cls.name}: at least one argument must be a Tensor")
    return cls.apply(a, b)


def add(a, b) -> Tensor:
    """``a + b`` with broadcasting."""
    return _binary(Add, a, b)


def sub(a, b) -> Tensor:
    """``a - b`` with broadcasting."""
    return _binary(Sub, a, b)


def mul(a, b) -> Tensor:
    """``a * b`` with broadcasting."""
    return _binary(Mul, a, b)


def div(a, b) -> Tensor:
    """``a / b`` (true division) with broadcasting."""
    return _binary(Div, a, b)


def neg(x: Tensor) -> Tensor:
    """``-x``."""
    return Neg.apply(x)


def exp(x: Tensor) -> Tensor:
    """``e ** x``."""
    return Exp.apply(x)
