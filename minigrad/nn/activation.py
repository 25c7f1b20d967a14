"""Activation layers: thin Modules over the ``F`` activations."""

from __future__ import annotations

from .. import functional as F
from . import init
from .module import Module

__all__ = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
           "LeakyReLU", "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "RReLU", "ReLU", "ReLU6",
           "SELU", "SiLU", "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink",
           "Softsign", "Tanh", "Tanhshrink", "Threshold"]


class ReLU(Module):
    """``max(x, 0)``. ``inplace`` is accepted for PyTorch compatibility and ignored."""

    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x):
        return F.relu(x)


class LeakyReLU(Module):
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)):
            raise TypeError(f"LeakyReLU: negative_slope must be a number, got "
                            f"{negative_slope!r}")
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class PReLU(Module):
    """Leaky ReLU with a learned slope: one shared (``num_parameters=1``) or one per channel.

    Args:
        num_parameters: 1 or the number of channels (axis 1 of the input).
        init: initial slope.
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init_value = init
        self.weight = _init.constant_(_init._empty_param((num_parameters,), device, dtype), init)

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


_init = init  # PReLU's ``init`` argument shadows the module name inside __init__


class GELU(Module):
    """Gaussian error linear unit; ``approximate="tanh"`` uses the tanh formula."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x * sigmoid(x)`` (swish)."""

    def forward(self, x):
        return F.silu(x)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``."""

    def forward(self, x):
        return F.sigmoid(x)


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, x):
        return F.tanh(x)


class Softmax(Module):
    """Softmax along ``dim`` (MegEngine: ``axis``); accumulates in float32.

    Args:
        dim: the axis that sums to one. None: PyTorch's and MegEngine's implicit choice
            (0 for 0-, 1- and 3-D input, 1 otherwise), decided per call.
        axis: alias of ``dim``.
    """

    def __init__(self, dim: int | None = None, axis: int | None = None):
        super().__init__()
        if dim is not None and axis is not None:
            raise TypeError("Softmax: got both dim and axis; they are one argument")
        self.dim = dim if dim is not None else axis

    def forward(self, x):
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class ELU(Module):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise. ``inplace`` is accepted and
    ignored."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``. ``inplace`` is ignored."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return F.celu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class SELU(Module):
    """Self-normalising ELU (PyTorch's constants). ``inplace`` is ignored."""

    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x):
        return F.selu(x)


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``. ``inplace`` is ignored."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) cannot be greater than max_val "
                             f"({max_val})")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``: a Hardtanh on [0, 6], as in PyTorch. ``inplace`` is ignored."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0)

    def forward(self, x):
        return F.relu6(x)

    def extra_repr(self) -> str:
        return ""


class Hardsigmoid(Module):
    """``relu6(x + 3) / 6``. ``inplace`` is ignored."""

    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x):
        return F.hardsigmoid(x)


class Hardswish(Module):
    """``x * relu6(x + 3) / 6``. ``inplace`` is ignored."""

    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x):
        return F.hardswish(x)


class Mish(Module):
    """``x * tanh(softplus(x))``. ``inplace`` is ignored."""

    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x):
        return F.mish(x)


class LogSigmoid(Module):
    """``log(sigmoid(x))``, computed without overflow."""

    def forward(self, x):
        return F.logsigmoid(x)


class Softmin(Module):
    """``softmax(-x)`` along ``dim``; accumulates in float32.

    Args:
        dim: the axis that sums to one (None: what ``F.softmin`` does without one).
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmin(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log(softmax(x))`` along ``dim``, computed stably; accumulates in float32.

    Args:
        dim: the axis normalised (None: PyTorch's implicit choice, decided per call).
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.log_softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)`` input at every
    position."""

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected a 3-D or 4-D input, got shape {x.shape}")
        return F.softmax(x, -3)


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold`` (in ``beta * x``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, x):
        return F.softsign(x)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, x):
        return F.tanhshrink(x)


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 in between (the
    gradient is 0 on ``[-lambd, lambd]``, as PyTorch's)."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        if lambd < 0:
            raise ValueError(f"Softshrink: lambd must be >= 0, got {lambd}")
        self.lambd = lambd

    def forward(self, x):
        return F.softshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        return F.hardshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``. ``inplace`` is ignored."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value = threshold, value

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class GLU(Module):
    """Gated linear unit: ``a * sigmoid(b)`` with ``a, b`` the halves of ``x`` along ``dim``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class RReLU(Module):
    """Randomised leaky ReLU: while training each negative element gets a slope drawn from
    ``U(lower, upper)``; in evaluation the slope is ``(lower + upper) / 2``. ``inplace`` is
    ignored."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        if not lower <= upper:
            raise ValueError(f"RReLU: lower ({lower}) must not exceed upper ({upper})")
        self.lower, self.upper = lower, upper

    def forward(self, x):
        return F.rrelu(x, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}"
