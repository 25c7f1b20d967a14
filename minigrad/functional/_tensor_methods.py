"""The Tensor's operators and op methods (``x + y``, ``x.sum()``, ``x.astype(...)``): sugar over
``minigrad.functional``, installed on ``Tensor`` when ``minigrad.functional`` is imported.

``Tensor`` lives on the floor below the ops (``minigrad.core``) and so cannot import them;
the ops' floor adds the methods instead (as Chainer's ``install_variable_arithmetics`` does).
"""

from __future__ import annotations

from .. import _backend as B
from .._backend.dtypes import float32, normalize_dtype
from ..core.cast import cast as _to_dtype
from ..core.cast import clone as _clone
from ..core.cast import to_device as _to_device
from ..core.tensor import Tensor
from . import activation as _activation
from . import elementwise as _elementwise
from . import matmul as _matmul
from . import reduction as _reduction
from . import shape as _shape
from . import transcendental as _transcendental

__all__ = ["install"]


class _Methods:
    """Method bodies copied onto ``Tensor`` by :func:`install` (never instantiated)."""

    @property
    def T(self) -> "Tensor":
        return _shape.transpose(self)

    def astype(self, dtype) -> "Tensor":
        """Differentiable cast; the gradient is cast back to this tensor's dtype."""
        return _to_dtype(self, dtype)

    def float(self) -> "Tensor":
        return _to_dtype(self, float32)

    def half(self) -> "Tensor":
        return _to_dtype(self, B.float16)

    def bfloat16(self) -> "Tensor":
        return _to_dtype(self, B.bfloat16)

    def to(self, *args, device=None, dtype=None, copy: bool = False,
           non_blocking: bool = False) -> "Tensor":
        """Move to a device and/or cast to a dtype (differentiable), in PyTorch's spellings.

        ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)`` (its device
        and dtype) and the keywords ``device=``/``dtype=``. Returns ``self`` when nothing
        changes, unless ``copy=True``. ``non_blocking`` is accepted (copies are synchronous).
        """
        for a in args:
            if isinstance(a, Tensor):
                got = {"device": a.device, "dtype": a.dtype}
            elif isinstance(a, str) and a.split(":", 1)[0] in ("cpu", "cuda", "gpu"):
                got = {"device": a}
            elif a is not None:
                got = {"dtype": normalize_dtype(a)}  # raises TypeError naming valid dtypes
            else:
                continue
            for k, v in got.items():
                if (device if k == "device" else dtype) is not None:
                    raise TypeError(f"Tensor.to: {k} given twice (in {args!r} and keywords)")
                if k == "device":
                    device = v
                else:
                    dtype = v
        out = self
        if device is not None and B.normalize_device(device) != self.device:
            out = _to_device(out, device)
        if dtype is not None:
            out = _to_dtype(out, dtype)
        if copy and out is self:
            out = _clone(self)
        return out

    def clone(self) -> "Tensor":
        return _clone(self)

    def __add__(self, other):
        return _elementwise.add(self, other)

    def __radd__(self, other):
        return _elementwise.add(other, self)

    def __sub__(self, other):
        return _elementwise.sub(self, other)

    def __rsub__(self, other):
        return _elementwise.sub(other, self)

    def __mul__(self, other):
        return _elementwise.mul(self, other)

    def __rmul__(self, other):
        return _elementwise.mul(other, self)

    def __truediv__(self, other):
        return _elementwise.div(self, other)

    def __rtruediv__(self, other):
        return _elementwise.div(other, self)

    def __pow__(self, other):
        return _elementwise.pow(self, other)

    def __rpow__(self, other):
        return _elementwise.pow(other, self)

    def __matmul__(self, other):
        return _matmul.matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul.matmul(other, self)

    def __neg__(self):
        return _elementwise.neg(self)

    def __abs__(self):
        return _elementwise.abs(self)

    def __eq__(self, other):
        return _elementwise.equal(self, other)

    def __ne__(self, other):
        return _elementwise.not_equal(self, other)

    def __lt__(self, other):
        return _elementwise.less(self, other)

    def __le__(self, other):
        return _elementwise.less_equal(self, other)

    def __gt__(self, other):
        return _elementwise.greater(self, other)

    def __ge__(self, other):
        return _elementwise.greater_equal(self, other)

    def __invert__(self):
        return _elementwise.logical_not(self)

    def __and__(self, other):
        return _elementwise.logical_and(self, other)

    def __or__(self, other):
        return _elementwise.logical_or(self, other)

    def __getitem__(self, index):
        return _shape.getitem(self, index)

    def reshape(self, *shape):
        return _shape.reshape(self, shape[0] if len(shape) == 1 else shape)

    view = reshape

    def flatten(self, start_axis=0, end_axis=-1):
        return _shape.flatten(self, start_axis, end_axis)

    def transpose(self, *axes):
        if len(axes) == 2 and all(isinstance(a, int) for a in axes):
            return _shape.swapaxes(self, axes[0], axes[1])
        return _shape.transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    def swapaxes(self, axis1, axis2):
        return _shape.swapaxes(self, axis1, axis2)

    def permute(self, *axes):
        return _shape.transpose(self, axes[0] if len(axes) == 1 else axes)

    def squeeze(self, axis=None):
        return _shape.squeeze(self, axis)

    def unsqueeze(self, axis):
        return _shape.expand_dims(self, axis)

    expand_dims = unsqueeze

    def broadcast_to(self, *shape):
        return _shape.broadcast_to(self, shape[0] if len(shape) == 1 else shape)

    expand = broadcast_to

    def sum(self, axis=None, keepdims=False):
        return _reduction.sum(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return _reduction.mean(self, axis, keepdims)

    def var(self, axis=None, keepdims=False, ddof=0):
        return _reduction.var(self, axis, keepdims, ddof=ddof)

    def std(self, axis=None, keepdims=False, ddof=0):
        return _reduction.std(self, axis, keepdims, ddof=ddof)

    def max(self, axis=None, keepdims=False):
        return _reduction.max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return _reduction.min(self, axis, keepdims)

    def argmax(self, axis=None, keepdims=False):
        return _reduction.argmax(self, axis, keepdims)

    def argmin(self, axis=None, keepdims=False):
        return _reduction.argmin(self, axis, keepdims)

    def prod(self, axis=None, keepdims=False):
        return _reduction.prod(self, axis, keepdims)

    def exp(self):
        return _transcendental.exp(self)

    def log(self):
        return _transcendental.log(self)

    def sqrt(self):
        return _elementwise.sqrt(self)

    def abs(self):
        return _elementwise.abs(self)

    def relu(self):
        return _activation.relu(self)

    def sigmoid(self):
        return _activation.sigmoid(self)

    def tanh(self):
        return _activation.tanh(self)

    def clip(self, lower=None, upper=None):
        return _elementwise.clip(self, lower, upper)

    clamp = clip

    def matmul(self, other):
        return _matmul.matmul(self, other)

    def pow(self, exponent):
        return _elementwise.pow(self, exponent)

    def softmax(self, axis=-1):
        return _activation.softmax(self, axis)


def install() -> None:
    """Copy every method and property of ``_Methods`` onto ``Tensor``."""
    for name, attr in vars(_Methods).items():
        if not (name.startswith("__") and name in ("__module__", "__qualname__", "__doc__",
                                                   "__dict__", "__weakref__")):
            setattr(Tensor, name, attr)
    # Assigning ``__eq__`` to a class makes CPython drop the inherited hash of the subclasses
    # that already exist (``Parameter``): tensors hash by identity, as in PyTorch.
    stack = [Tensor]
    while stack:
        cls = stack.pop()
        cls.__hash__ = object.__hash__
        stack.extend(cls.__subclasses__())
