"""Dense layers: ``Linear`` and ``Bilinear``, plus the shape-only ``Identity``, ``Flatten`` and
``Unflatten``."""

from __future__ import annotations

import math

from .. import functional as F
from . import init
from .module import Module

__all__ = ["Bilinear", "Flatten", "Identity", "Linear", "Unflatten"]


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` of shape ``(out_features, in_features)``.

    Weights start as kaiming_uniform(a=sqrt(5)) (= U(+-1/sqrt(in_features))), the bias as
    U(+-1/sqrt(in_features)), as in PyTorch.

    Args:
        in_features: size of the last input axis.
        out_features: size of the last output axis.
        bias: learn an additive bias.
        device, dtype: where and in which dtype to create the parameters (default: the
            default device and dtype, ``mg.get_default_device()``/``mg.get_default_dtype()``).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        for what, v in (("in_features", in_features), ("out_features", out_features)):
            if not hasattr(v, "__index__") or isinstance(v, bool) or v < 0:
                raise ValueError(f"Linear: {what} must be a non-negative int, got {v!r}")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = init._empty_param((out_features, in_features), device, dtype)
        if bias:
            self.bias = init._empty_param((out_features,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # in_features == 0 (as PyTorch allows): an empty weight, the output is the bias.
        if self.weight.size:
            init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")



class Flatten(Module):
    """Flatten axes ``start_dim..end_dim`` into one (default: all but the batch axis)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x):
        return F.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split axis ``dim`` into ``unflattened_size`` (which may hold one -1)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, x):
        dim = self.dim + x.ndim if self.dim < 0 else self.dim
        if not 0 <= dim < x.ndim:
            raise ValueError(f"Unflatten: dim {self.dim} is out of range for shape {x.shape}")
        return x.reshape(tuple(x.shape[:dim]) + self.unflattened_size
                         + tuple(x.shape[dim + 1:]))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Bilinear(Module):
    """``y = x1 @ weight @ x2 + bias`` per output feature: ``weight`` is
    ``(out_features, in1_features, in2_features)``; weight and bias start as
    U(+-1/sqrt(in1_features)), as in PyTorch."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = init._empty_param((out_features, in1_features, in2_features), device,
                                        dtype)
        if bias:
            self.bias = init._empty_param((out_features,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x1, x2):
        return F.bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
