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
from ..core.device import Device
from ..core.tensor import Tensor
from . import activation as _activation
from . import elementwise as _elementwise
from . import matmul as _matmul
from . import reduction as _reduction
from . import shape as _shape
from . import sorting as _sorting
from . import transcendental as _transcendental
from ._axes import one_of as _one_of
from ._tensor_methods_torch import TorchMethods as _TorchMethods

__all__ = ["install"]


def _dims(op, axis, keepdims, dim, keepdim):
    """(axis, keepdims) from minigrad's and PyTorch's spellings (both given: TypeError)."""
    return (_one_of(op, axis, dim),
            bool(_one_of(op, keepdims, keepdim, ("keepdims", "keepdim"))))


def _size_one_axes(x, axis):
    """PyTorch's ``x.squeeze(dim)`` leaves a named axis whose size is not 1 (MegEngine's
    ``F.squeeze`` raises): the named axes that have size 1 (all of them for None)."""
    if axis is None or x.ndim == 0:
        return axis
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(a for a in axes if -x.ndim <= a < x.ndim and x.shape[a] == 1
                 ) + tuple(a for a in axes if not -x.ndim <= a < x.ndim)  # bad axes still raise

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
            elif isinstance(a, Device) or (
                    isinstance(a, str) and a.split(":", 1)[0] in ("cpu", "cuda", "gpu")):
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

    def flatten(self, start_axis=None, end_axis=None, *, start_dim=None, end_dim=None):
        start = _one_of("flatten", start_axis, start_dim, ("start_axis", "start_dim"))
        end = _one_of("flatten", end_axis, end_dim, ("end_axis", "end_dim"))
        return _shape.flatten(self, 0 if start is None else start, -1 if end is None else end)

    def transpose(self, *axes):
        if len(axes) == 2 and all(isinstance(a, int) for a in axes):
            return _shape.swapaxes(self, axes[0], axes[1])
        return _shape.transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    def swapaxes(self, axis1, axis2):
        return _shape.swapaxes(self, axis1, axis2)

    def permute(self, *axes):
        return _shape.transpose(self, axes[0] if len(axes) == 1 else axes)

    def squeeze(self, axis=None, *, dim=None):
        return _shape.squeeze(self, _size_one_axes(self, _one_of("squeeze", axis, dim)))

    def unsqueeze(self, axis=None, *, dim=None):
        axis = _one_of("unsqueeze", axis, dim)
        if axis is None:
            raise TypeError("unsqueeze: missing the axis (dim) to insert")
        return _shape.expand_dims(self, axis)

    expand_dims = unsqueeze

    def broadcast_to(self, *shape):
        return _shape.broadcast_to(self, shape[0] if len(shape) == 1 else shape)

    def expand(self, *sizes):
        """PyTorch's ``expand``: ``broadcast_to`` where ``-1`` keeps that dimension's size."""
        shape = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) \
            else sizes
        lead = len(shape) - self.ndim
        if lead < 0:
            raise ValueError(f"expand: {len(shape)} sizes for a {self.ndim}-D tensor of shape "
                             f"{self.shape}; give at least one per dimension")
        shape = tuple(self.shape[i - lead] if s == -1 and i >= lead else s
                      for i, s in enumerate(shape))
        return _shape.broadcast_to(self, shape)

    def sum(self, axis=None, keepdims=None, *, dim=None, keepdim=None, dtype=None):
        x = self if dtype is None else _to_dtype(self, dtype)  # PyTorch: sums in dtype
        return _reduction.sum(x, *_dims("sum", axis, keepdims, dim, keepdim))

    def mean(self, axis=None, keepdims=None, *, dim=None, keepdim=None, dtype=None):
        x = self if dtype is None else _to_dtype(self, dtype)
        return _reduction.mean(x, *_dims("mean", axis, keepdims, dim, keepdim))

    # PyTorch's meanings (the Tensor method is PyTorch's spelling; F.var/F.max are MegEngine's):
    # var/std divide by N - 1 by default; max/min along one dim return (values, indices).
    def var(self, dim=None, unbiased=None, keepdim=None, *, correction=None, axis=None,
            keepdims=None, ddof=None):
        return _reduction.torch_var(self, dim, unbiased, keepdim, correction=correction,
                                    axis=axis, keepdims=keepdims, ddof=ddof)

    def std(self, dim=None, unbiased=None, keepdim=None, *, correction=None, axis=None,
            keepdims=None, ddof=None):
        return _reduction.torch_std(self, dim, unbiased, keepdim, correction=correction,
                                    axis=axis, keepdims=keepdims, ddof=ddof)

    def max(self, dim=None, keepdim=None, *, axis=None, keepdims=None, other=None):
        return _sorting.torch_max(self, dim, keepdim, axis=axis, keepdims=keepdims, other=other)

    def min(self, dim=None, keepdim=None, *, axis=None, keepdims=None, other=None):
        return _sorting.torch_min(self, dim, keepdim, axis=axis, keepdims=keepdims, other=other)

    def sort(self, dim=-1, descending=False, *, stable=False, axis=None):
        return _sorting.torch_sort(self, dim, descending, stable=stable, axis=axis)

    def argsort(self, dim=-1, descending=False, *, stable=False, axis=None):
        return _sorting.torch_argsort(self, dim, descending, stable=stable, axis=axis)

    def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's name
        return _sorting.torch_topk(self, k, dim, largest, sorted)

    def kthvalue(self, k, dim=-1, keepdim=False):
        return _sorting.torch_kthvalue(self, k, dim, keepdim)

    def median(self, dim=None, keepdim=False):
        return _sorting.torch_median(self, dim, keepdim)

    def mode(self, dim=-1, keepdim=False):
        return _sorting.torch_mode(self, dim, keepdim)

    def argmax(self, axis=None, keepdims=None, *, dim=None, keepdim=None):
        return _reduction.argmax(self, *_dims("argmax", axis, keepdims, dim, keepdim))

    def argmin(self, axis=None, keepdims=None, *, dim=None, keepdim=None):
        return _reduction.argmin(self, *_dims("argmin", axis, keepdims, dim, keepdim))

    def amax(self, dim=(), keepdim=False):
        """PyTorch's ``amax``: the values of the maximum over ``dim`` (``()``: every axis)."""
        return _reduction.max(self, None if dim in ((), None) else dim, bool(keepdim))

    def amin(self, dim=(), keepdim=False):
        """PyTorch's ``amin``: the values of the minimum over ``dim`` (``()``: every axis)."""
        return _reduction.min(self, None if dim in ((), None) else dim, bool(keepdim))

    def prod(self, axis=None, keepdims=None, *, dim=None, keepdim=None):
        return _reduction.prod(self, *_dims("prod", axis, keepdims, dim, keepdim))

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

    def clip(self, lower=None, upper=None, *, min=None, max=None):  # noqa: A002
        """Clamp to ``[lower, upper]`` (PyTorch's ``min=``/``max=`` keywords too)."""
        return _elementwise.clip(self, _one_of("clip", lower, min, ("lower", "min")),
                                 _one_of("clip", upper, max, ("upper", "max")))

    clamp = clip

    def matmul(self, other):
        return _matmul.matmul(self, other)

    def pow(self, exponent):
        return _elementwise.pow(self, exponent)

    def softmax(self, axis=None, *, dim=None, dtype=None):
        axis = _one_of("softmax", axis, dim)
        x = self if dtype is None else _to_dtype(self, dtype)
        return _activation.softmax(x, -1 if axis is None else axis)


def install() -> None:
    """Copy every method and property of ``_Methods`` and ``_TorchMethods`` onto ``Tensor``."""
    for methods in (_Methods, _TorchMethods):
        for name, attr in vars(methods).items():
            if not (name.startswith("__") and name in ("__module__", "__qualname__", "__doc__",
                                                       "__dict__", "__weakref__")):
                if methods is _TorchMethods and name in vars(_Methods):
                    raise RuntimeError(f"Tensor.{name} is defined twice")  # one body per name
                setattr(Tensor, name, attr)
    # Assigning ``__eq__`` to a class makes CPython drop the inherited hash of the subclasses
    # that already exist (``Parameter``): tensors hash by identity, as in PyTorch.
    stack = [Tensor]
    while stack:
        cls = stack.pop()
        cls.__hash__ = object.__hash__
        stack.extend(cls.__subclasses__())
