"""MindSpore's ``mindspore.ops`` as ``minigrad.ops``: the primitives scripts build in
``__init__`` and call in ``construct`` (``ops.MatMul()``, ``ops.ReLU()``, ``ops.ReduceMean()``,
...) and the functional spellings (``ops.matmul``, ``ops.relu``, ...), each over one op of
``minigrad.functional``. Primitive arguments keep MindSpore's names (``transpose_b``,
``keep_dims``, ``axis``)."""

from __future__ import annotations

from ... import functional as F
from ..._backend.dtypes import normalize_dtype

__all__ = ["Add", "Cast", "Concat", "Exp", "Log", "MatMul", "Maximum", "Minimum", "Mul",
           "ReLU", "ReduceMax", "ReduceMean", "ReduceSum", "Reshape", "Sigmoid", "Softmax",
           "Sqrt", "Square", "Sub", "Tanh", "Transpose", "matmul", "relu", "softmax", "cast",
           "reshape", "transpose", "concat", "exp", "log", "sqrt", "square", "sigmoid", "tanh",
           "mean", "sum"]


class _Primitive:
    """A MindSpore primitive: configured when built, applied when called."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _unary(name, fn):
    return type(name, (_Primitive,), {"__call__": lambda self, x: fn(x),
                                      "__doc__": f"``ops.{name}()(x)``: ``F.{fn.__name__}``."})


def _binary(name, fn):
    return type(name, (_Primitive,), {"__call__": lambda self, x, y: fn(x, y),
                                      "__doc__": f"``ops.{name}()(x, y)``: ``F.{fn.__name__}``."})


ReLU, Exp, Log, Sqrt, Square, Sigmoid, Tanh = (
    _unary(n, f) for n, f in (("ReLU", F.relu), ("Exp", F.exp), ("Log", F.log),
                              ("Sqrt", F.sqrt), ("Square", F.square), ("Sigmoid", F.sigmoid),
                              ("Tanh", F.tanh)))
Add, Sub, Mul, Maximum, Minimum = (
    _binary(n, f) for n, f in (("Add", F.add), ("Sub", F.sub), ("Mul", F.mul),
                               ("Maximum", F.maximum), ("Minimum", F.minimum)))


class MatMul(_Primitive):
    """``ops.MatMul(transpose_a=False, transpose_b=False)(a, b)`` on 2-D inputs."""

    def __init__(self, transpose_a: bool = False, transpose_b: bool = False):
        self.transpose_a, self.transpose_b = bool(transpose_a), bool(transpose_b)

    def __call__(self, a, b):
        return matmul(a.T if self.transpose_a else a, b.T if self.transpose_b else b)


class _Reduce(_Primitive):
    _fn = None

    def __init__(self, keep_dims: bool = False):
        self.keep_dims = bool(keep_dims)

    def __call__(self, x, axis=()):
        axis = None if axis in ((), []) else (tuple(axis) if isinstance(axis, list) else axis)
        return type(self)._fn(x, axis=axis, keepdims=self.keep_dims)


class ReduceMean(_Reduce):
    """``ops.ReduceMean(keep_dims=False)(x, axis=())`` (``()``: every axis)."""
    _fn = staticmethod(F.mean)


class ReduceSum(_Reduce):
    """``ops.ReduceSum(keep_dims=False)(x, axis=())`` (``()``: every axis)."""
    _fn = staticmethod(F.sum)


class ReduceMax(_Reduce):
    """``ops.ReduceMax(keep_dims=False)(x, axis=())``: the values (MindSpore's)."""
    _fn = staticmethod(F.max)


class Softmax(_Primitive):
    def __init__(self, axis: int = -1):
        self.axis = axis

    def __call__(self, x):
        return F.softmax(x, axis=self.axis)


class Cast(_Primitive):
    def __call__(self, x, dtype):
        return cast(x, dtype)


class Reshape(_Primitive):
    def __call__(self, x, shape):
        return F.reshape(x, tuple(shape))


class Transpose(_Primitive):
    def __call__(self, x, perm):
        return F.permute(x, tuple(perm))


class Concat(_Primitive):
    def __init__(self, axis: int = 0):
        self.axis = axis

    def __call__(self, tensors):
        return F.concat(list(tensors), axis=self.axis)


def matmul(a, b):
    """``ops.matmul``: ``F.matmul``."""
    return F.matmul(a, b)


def cast(x, dtype):
    """``ops.cast(x, dtype)``: ``x.astype(dtype)`` (differentiable)."""
    return x.astype(normalize_dtype(dtype))


def reshape(x, shape):
    return F.reshape(x, tuple(shape))


def transpose(x, perm):
    return F.permute(x, tuple(perm))


def concat(tensors, axis: int = 0):
    return F.concat(list(tensors), axis=axis)


def softmax(x, axis: int = -1):
    return F.softmax(x, axis=axis)


def mean(x, axis=None, keep_dims: bool = False):
    return F.mean(x, axis=axis, keepdims=keep_dims)


def sum(x, axis=None, keepdims: bool = False):  # noqa: A001 - MindSpore's name
    return F.sum(x, axis=axis, keepdims=keepdims)


relu, exp, log, sqrt, square, sigmoid, tanh = (F.relu, F.exp, F.log, F.sqrt, F.square,
                                               F.sigmoid, F.tanh)
