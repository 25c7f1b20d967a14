"""MindSpore's initializers (``mindspore.common.initializer``): ``Normal(sigma)``,
``Uniform(scale)``, ``XavierUniform``, ``HeUniform``, ``HeNormal``, ``Zero``, ``One``,
``Constant`` and ``initializer(init, shape, dtype)``, drawn with ``minigrad.nn.init``.

An initializer object fills a Parameter in place when called on it; layers that take
``weight_init=``/``bias_init=`` (``nn.Dense``) accept one, its name (``"normal"``,
``"xavier_uniform"``, ``"he_uniform"``, ``"zeros"``, ...) or a Tensor of the right shape.
"""

from __future__ import annotations

import numpy as np

from ...autodiff import no_grad
from ...core.creation import zeros
from ...core.tensor import Tensor
from ...nn import init

__all__ = ["Constant", "HeNormal", "HeUniform", "Initializer", "Normal", "One", "Uniform",
           "XavierUniform", "Zero", "initializer"]


class Initializer:
    """Base: ``init(param)`` fills ``param`` in place and returns it."""

    def __call__(self, param):
        with no_grad():
            self.fill(param)
        return param

    def fill(self, param) -> None:
        raise NotImplementedError


class Normal(Initializer):
    """N(mean, sigma**2); MindSpore's default sigma is 0.01."""

    def __init__(self, sigma: float = 0.01, mean: float = 0.0):
        self.sigma, self.mean = float(sigma), float(mean)

    def fill(self, param):
        init.normal_(param, self.mean, self.sigma)


class Uniform(Initializer):
    """U(-scale, scale); MindSpore's default scale is 0.07."""

    def __init__(self, scale: float = 0.07):
        self.scale = float(scale)

    def fill(self, param):
        init.uniform_(param, -self.scale, self.scale)


class XavierUniform(Initializer):
    def __init__(self, gain: float = 1.0):
        self.gain = float(gain)

    def fill(self, param):
        init.xavier_uniform_(param, self.gain)


class HeUniform(Initializer):
    def __init__(self, negative_slope: float = 0.0, mode: str = "fan_in",
                 nonlinearity: str = "leaky_relu"):
        self.a, self.mode, self.nonlinearity = negative_slope, mode, nonlinearity

    def fill(self, param):
        init.kaiming_uniform_(param, self.a, self.mode, self.nonlinearity)


class HeNormal(HeUniform):
    def fill(self, param):
        init.kaiming_normal_(param, self.a, self.mode, self.nonlinearity)


class Constant(Initializer):
    def __init__(self, value):
        self.value = value

    def fill(self, param):
        init.constant_(param, self.value)


class Zero(Constant):
    def __init__(self):
        super().__init__(0.0)


class One(Constant):
    def __init__(self):
        super().__init__(1.0)


NAMED = {"normal": Normal, "uniform": Uniform, "xavier_uniform": XavierUniform,
         "xavieruniform": XavierUniform, "he_uniform": HeUniform, "heuniform": HeUniform,
         "he_normal": HeNormal, "henormal": HeNormal, "zeros": Zero, "zero": Zero, "ones": One,
         "one": One}


def fill(param, how, who: str) -> None:
    """Fill ``param`` as ``how`` says: an Initializer, its name, or values of its shape."""
    if how is None:
        return
    if isinstance(how, str):
        make = NAMED.get(how.lower())
        if make is None:
            raise ValueError(f"{who}: unknown initializer {how!r}; minigrad knows "
                             f"{sorted(NAMED)}, an Initializer, or a Tensor of shape "
                             f"{tuple(param.shape)}")
        how = make()
    if isinstance(how, Initializer):
        how(param)
        return
    if isinstance(how, (int, float)) and not isinstance(how, bool):
        Constant(how)(param)
        return
    values = how.numpy() if isinstance(how, Tensor) else np.asarray(how)
    if tuple(values.shape) != tuple(param.shape):
        raise ValueError(f"{who}: initial values have shape {tuple(values.shape)}, the "
                         f"parameter needs {tuple(param.shape)}")
    with no_grad():
        param.copy_(values)


def initializer(init_, shape, dtype="float32") -> Tensor:
    """MindSpore's ``initializer(init, shape, dtype)``: a new Tensor filled as ``init_`` says."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    t = zeros(shape, dtype=dtype)
    fill(t, init_, "initializer")
    return t

