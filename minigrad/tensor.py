"""``Tensor`` and ``Parameter``, the user-facing array types, and the creation functions.

Operators and methods are thin sugar over ``minigrad.functional``; all differentiation goes
through ``Function.apply``. ``_version`` counts in-place modifications so backward can refuse
to use a saved tensor that changed after the forward; a view, a detached alias and their base
share one counter (``_vc``), so a change through any of them is seen by all.
"""

from __future__ import annotations

from contextvars import ContextVar

import numpy as np

from . import _backend as B
from ._backend import random as _random
from ._backend.dtypes import (
    category,
    float32,
    float_result_type,
    is_floating,
    is_numeric,
    normalize_dtype,
    result_type,
)
from ._backend.sync_debug import check as _sync_check
from ._backend.sync_debug import sync_mode as _sync_mode

__all__ = [
    "Tensor", "Parameter", "tensor", "zeros", "ones", "full", "empty", "arange", "linspace",
    "eye", "randn", "rand", "randint", "normal", "uniform", "zeros_like", "ones_like",
    "full_like", "manual_seed", "from_dlpack", "from_numpy", "as_tensor",
]

# A training step that owns the backward of its loss (``nn.Graph`` scales ``loss.backward()``
# called inside ``build``) installs ``fn(tensor, dy, retain_graph, create_graph)`` here.
backward_override: ContextVar = ContextVar("minigrad_backward_override", default=None)


def _to_array(data, dtype, device, copy=True):
    """``data`` as a backend array; a new one unless ``copy`` is False (``as_tensor``), so a
    Tensor made by ``tensor()`` never aliases its source (PyTorch's ``torch.tensor`` copies)."""
    if isinstance(data, Tensor):
        data = data.data
    if copy and hasattr(data, "dtype") and hasattr(data, "shape"):
        arr = _to_array(data, dtype, device, copy=False)
        return arr.copy() if arr is data or getattr(arr, "base", None) is data else arr
    if dtype is None and not hasattr(data, "dtype"):
        # Python floats (and lists of them) default to float32, as in PyTorch and MegEngine.
        data = np.asarray(data)
        if data.dtype == np.float64:
            dtype = float32
    return B.asarray(data, dtype=dtype, device=device)


class Tensor:
    """An n-dimensional array on a device, optionally recording operations for backward.

    Args:
        data: a list, scalar, NumPy or CuPy array, or Tensor.
        dtype: e.g. ``mg.float32``, ``"float16"``; Python floats default to float32.
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.
        requires_grad: record ops on this tensor so backward reaches it.
        copy: copy an array (or Tensor) given as ``data`` (default, as ``torch.tensor``);
            ``False`` shares it when no conversion is needed (``as_tensor``/``from_numpy``).

    Example:
        >>> import minigrad as mg
        >>> x = mg.tensor([[1.0, 2.0]], requires_grad=True)
        >>> y = (x * x).sum()
        >>> y.backward()
        >>> x.grad.numpy().tolist()
        [[2.0, 4.0]]
    """

    # ``_vc`` is the version counter: None until first needed (the hot path allocates nothing),
    # then a one-element list shared by every tensor aliasing the same memory.
    __slots__ = ("data", "requires_grad", "_grad", "creator", "_vc", "_out_index", "name",
                 "__weakref__")
    __array_ufunc__ = None  # make NumPy defer to our reflected operators
    __hash__ = object.__hash__

    def __init__(self, data, dtype=None, device=None, requires_grad: bool = False, *,
                 copy: bool = True):
        dtype = normalize_dtype(dtype)
        if device is None:
            device = B.device_of(data.data if isinstance(data, Tensor) else data)
        self.data = _to_array(data, dtype, B.normalize_device(device), copy)
        if not is_numeric(self.data.dtype):
            raise TypeError(
                f"tensor: unsupported dtype {self.data.dtype} (from {type(data).__name__}); "
                "tensors hold bool, integer or floating data -- convert strings/objects first")
        if requires_grad and not is_floating(self.data.dtype):
            raise TypeError(f"only floating tensors can require grad, got {self.data.dtype}")
        self.requires_grad = bool(requires_grad)
        self._grad = None
        self.creator = None
        self._vc = None
        self._out_index = 0
        self.name = None

    @classmethod
    def _make(cls, data, requires_grad, creator, index):
        # The hot path of every op: no checks, no conversions.
        t = object.__new__(Tensor)
        t.data = data
        t.requires_grad = requires_grad
        t._grad = None
        t.creator = creator
        t._vc = None
        t._out_index = index
        t.name = None
        return t

    # ----------------------------------------------------------------- properties
    @property
    def grad(self):
        """The accumulated gradient (a Tensor of this tensor's shape) or None."""
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"grad: assigned a {type(value).__name__}; assign a Tensor of "
                                f"shape {self.shape} or None")
            if value.data.shape != self.data.shape:
                raise ValueError(
                    f"grad: assigned gradient has shape {value.data.shape} but the tensor has "
                    f"shape {self.data.shape}; assign a gradient of the tensor's shape")
        self._grad = value

    @property
    def _version(self) -> int:
        """How many times this tensor's memory was modified in place (through any alias)."""
        vc = self._vc
        return 0 if vc is None else vc[0]

    @_version.setter
    def _version(self, value: int):
        vc = self._vc
        if vc is None:
            self._vc = [value]
        else:
            vc[0] = value

    def _counter(self) -> list:
        """The shared version counter, created on first use (for views and saved outputs)."""
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        return vc

    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def device(self) -> str:
        return B.device_of(self.data)

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    def numel(self) -> int:
        return self.data.size

    def dim(self) -> int:
        return self.data.ndim

    @property
    def is_leaf(self) -> bool:
        return self.creator is None

    @property
    def grad_fn(self):
        return self.creator

    @property
    def T(self) -> "Tensor":
        return F.transpose(self)

    @property
    def is_cuda(self) -> bool:
        return self.device != "cpu"

    # ----------------------------------------------------------------- conversion
    def numpy(self) -> np.ndarray:
        """A NumPy copy (or view, on the CPU) of the data; copies from the GPU."""
        d = self.data
        if _sync_mode.get():  # mg.cuda.set_sync_debug_mode: every host read passes here
            _sync_check("Tensor.numpy()/item()/tolist()/bool()/float()/int()")
        return d if type(d) is np.ndarray else d.get()

    def item(self):
        """The single value as a Python number."""
        if self.data.size != 1:
            raise ValueError(f"item(): tensor has {self.data.size} elements, expected 1")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __dlpack__(self, *args, **kwargs):
        return self.data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()

    def astype(self, dtype) -> "Tensor":
        """Differentiable cast; the gradient is cast back to this tensor's dtype."""
        return F.cast(self, dtype)

    def float(self) -> "Tensor":
        return F.cast(self, float32)

    def half(self) -> "Tensor":
        return F.cast(self, B.float16)

    def bfloat16(self) -> "Tensor":
        return F.cast(self, B.bfloat16)

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
            out = F.to_device(out, device)
        if dtype is not None:
            out = F.cast(out, dtype)
        if copy and out is self:
            out = F.clone(self)
        return out

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self, device="cuda") -> "Tensor":
        return self.to(device)

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (an alias: it shares the version counter)."""
        t = Tensor._make(self.data, False, None, 0)
        t._vc = self._counter()
        return t

    def clone(self) -> "Tensor":
        return F.clone(self)

    def requires_grad_(self, flag: bool = True) -> "Tensor":
        if flag and not is_floating(self.dtype):
            raise TypeError(f"only floating tensors can require grad, got {self.dtype}")
        self.requires_grad = flag
        return self

    # ----------------------------------------------------------------- autodiff
    def backward(self, dy=None, retain_graph: bool | None = None, create_graph: bool = False):
        """Accumulate d(self)/d(leaf) into ``.grad`` of every leaf that requires grad."""
        override = backward_override.get()
        if override is not None:
            return override(self, dy, retain_graph, create_graph)
        self._plain_backward(dy, retain_graph, create_graph)

    def _plain_backward(self, dy=None, retain_graph=None, create_graph=False):
        from .autodiff.engine import default_grad, run_backward

        dy = default_grad(self, dy, "Tensor.backward")
        if retain_graph is None:
            retain_graph = create_graph
        run_backward([self], [dy], retain_graph=retain_graph, create_graph=create_graph)

    def zero_grad(self) -> None:
        self._grad = None

    # ----------------------------------------------------------------- in place
    def _check_inplace(self, what: str):
        if self.requires_grad and grad_enabled.get():
            raise RuntimeError(
                f"{what}: in-place modification of a tensor that requires grad (shape "
                f"{self.shape}) while recording; wrap it in `with mg.no_grad():` or use the "
                "out-of-place op")
        if B.is_shared_memory(self.data):
            # read-only memory, or an expanded (broadcast) view whose elements share memory
            raise RuntimeError(
                f"{what}: this tensor (shape {self.shape}) is read-only or an expanded view in "
                "which several elements share one memory location; write to a copy "
                "(t.clone()) instead")

    def _set_data_(self, array) -> "Tensor":
        """Replace the data in place (bumps the version counter; no graph)."""
        xp = B.get_array_module(self.data)
        if array is not self.data:
            xp.copyto(self.data, array, casting="unsafe")
        self._version += 1
        return self

    def copy_(self, src) -> "Tensor":
        self._check_inplace("copy_")
        src = src.data if isinstance(src, Tensor) else src
        return self._set_data_(B.to_device(B.get_array_module(src).asarray(src),
                                           self.device) if not np.isscalar(src) else src)

    def fill_(self, value) -> "Tensor":
        self._check_inplace("fill_")
        self.data[...] = value
        self._version += 1
        return self

    def zero_(self) -> "Tensor":
        return self.fill_(0)

    def _binary_inplace(self, other, op, what, true_div=False):
        self._check_inplace(what)
        if isinstance(other, Tensor):
            if other.requires_grad:
                if grad_enabled.get():  # the result would depend on `other` with no graph
                    raise RuntimeError(
                        f"{what}: the operand requires grad while recording, but in-place ops "
                        "are not recorded; use the out-of-place op (t = t + other)")
            other = other.data
        self._check_operand(other, what, true_div)
        op(self.data, other, out=self.data, casting="unsafe")
        self._version += 1
        return self

    def _check_operand(self, other, what, true_div):
        # PyTorch's rules for ``self op= other``: the promoted result must fit self's dtype
        # category (no float result into an int tensor) and broadcast to self's shape.
        d = self.data.dtype
        o = getattr(other, "dtype", None)
        if o is None:
            res = (float_result_type if true_div else result_type)([d], [type(other)])
        elif o is d and not true_div:
            res = d
        else:
            res = (float_result_type if true_div else result_type)([d, o])
        if res != d and category(res) > category(d):
            raise TypeError(f"{what}: result type {res} can't be cast to the tensor's dtype {d} "
                            "in place; use the out-of-place op or cast the tensor first")
        if o is not None and other.shape != self.data.shape and \
                F._utils.broadcast_shape(what, self.data.shape, other.shape) != self.data.shape:
            raise ValueError(f"{what}: operand of shape {tuple(other.shape)} does not broadcast "
                             f"to the tensor's shape {self.shape} (an in-place result keeps "
                             "the tensor's shape)")

    def add_(self, other, alpha=1.0) -> "Tensor":
        if alpha != 1.0:  # through mul, so the operand's dtype and grad rules still apply
            other = F.mul(other, alpha) if isinstance(other, Tensor) else other * alpha
        return self._binary_inplace(other, B.get_array_module(self.data).add, "add_")

    def sub_(self, other) -> "Tensor":
        return self._binary_inplace(other, B.get_array_module(self.data).subtract, "sub_")

    def mul_(self, other) -> "Tensor":
        return self._binary_inplace(other, B.get_array_module(self.data).multiply, "mul_")

    def div_(self, other) -> "Tensor":
        return self._binary_inplace(other, B.get_array_module(self.data).divide, "div_", True)

    # Augmented assignment (``t += x``) is in place, as in PyTorch, whenever nothing needs
    # recording: under no_grad, or when neither side requires grad. A leaf that requires grad
    # raises while recording (PyTorch's rule, the error of add_). A non-leaf, or a tensor that
    # would start depending on a recorded operand (``total += loss``), gets the recorded
    # out-of-place result and the name is rebound: minigrad does not record in-place ops, and
    # this keeps every gradient right (other references keep the old value).
    def _augmented(self, other, inplace, op):
        if grad_enabled.get() and (self.requires_grad or (
                isinstance(other, Tensor) and other.requires_grad)):
            if self.creator is not None or not self.requires_grad:
                return op(self, other)
        return inplace(other)

    def __iadd__(self, other):
        return self._augmented(other, self.add_, F.add)

    def __isub__(self, other):
        return self._augmented(other, self.sub_, F.sub)

    def __imul__(self, other):
        return self._augmented(other, self.mul_, F.mul)

    def __itruediv__(self, other):
        return self._augmented(other, self.div_, F.div)

    def __setitem__(self, index, value):
        self._check_inplace("__setitem__")
        if isinstance(value, Tensor) and value.requires_grad and grad_enabled.get():
            # In-place writes are not recorded: the value's gradient would be silently lost.
            raise RuntimeError(
                f"__setitem__: the value (shape {value.shape}) requires grad while recording, "
                "but in-place writes are not recorded and its gradient would be lost; use the "
                "out-of-place F.index_put(x, indices, value) or F.where(mask, value, x), or "
                "write value.detach() if no gradient should flow")
        if isinstance(index, Tensor):
            index = index.data
        elif isinstance(index, tuple):
            index = tuple(i.data if isinstance(i, Tensor) else i for i in index)
        self.data[index] = value.data if isinstance(value, Tensor) else value
        self._version += 1

    # ----------------------------------------------------------------- operators
    def __add__(self, other):
        return F.add(self, other)

    def __radd__(self, other):
        return F.add(other, self)

    def __sub__(self, other):
        return F.sub(self, other)

    def __rsub__(self, other):
        return F.sub(other, self)

    def __mul__(self, other):
        return F.mul(self, other)

    def __rmul__(self, other):
        return F.mul(other, self)

    def __truediv__(self, other):
        return F.div(self, other)

    def __rtruediv__(self, other):
        return F.div(other, self)

    def __pow__(self, other):
        return F.pow(self, other)

    def __rpow__(self, other):
        return F.pow(other, self)

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __neg__(self):
        return F.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return F.abs(self)

    def __eq__(self, other):
        return F.equal(self, other)

    def __ne__(self, other):
        return F.not_equal(self, other)

    def __lt__(self, other):
        return F.less(self, other)

    def __le__(self, other):
        return F.less_equal(self, other)

    def __gt__(self, other):
        return F.greater(self, other)

    def __ge__(self, other):
        return F.greater_equal(self, other)

    def __invert__(self):
        return F.logical_not(self)

    def __and__(self, other):
        return F.logical_and(self, other)

    def __or__(self, other):
        return F.logical_or(self, other)

    def __getitem__(self, index):
        return F.getitem(self, index)

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self.data.size} elements is ambiguous; use "
                ".any() or .all()")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if is_floating(self.dtype):
            raise TypeError("only integer tensors can be used as an index")
        return int(self.item())

    # ----------------------------------------------------------------- methods
    def reshape(self, *shape):
        return F.reshape(self, shape[0] if len(shape) == 1 else shape)

    view = reshape

    def flatten(self, start_axis=0, end_axis=-1):
        return F.flatten(self, start_axis, end_axis)

    def transpose(self, *axes):
        if len(axes) == 2 and all(isinstance(a, int) for a in axes):
            return F.swapaxes(self, axes[0], axes[1])
        return F.transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    def swapaxes(self, axis1, axis2):
        return F.swapaxes(self, axis1, axis2)

    def permute(self, *axes):
        return F.transpose(self, axes[0] if len(axes) == 1 else axes)

    def squeeze(self, axis=None):
        return F.squeeze(self, axis)

    def unsqueeze(self, axis):
        return F.expand_dims(self, axis)

    expand_dims = unsqueeze

    def broadcast_to(self, *shape):
        return F.broadcast_to(self, shape[0] if len(shape) == 1 else shape)

    expand = broadcast_to

    def sum(self, axis=None, keepdims=False):
        return F.sum(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return F.mean(self, axis, keepdims)

    def var(self, axis=None, keepdims=False, ddof=0):
        return F.var(self, axis, keepdims, ddof=ddof)

    def std(self, axis=None, keepdims=False, ddof=0):
        return F.std(self, axis, keepdims, ddof=ddof)

    def max(self, axis=None, keepdims=False):
        return F.max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return F.min(self, axis, keepdims)

    def argmax(self, axis=None, keepdims=False):
        return F.argmax(self, axis, keepdims)

    def argmin(self, axis=None, keepdims=False):
        return F.argmin(self, axis, keepdims)

    def prod(self, axis=None, keepdims=False):
        return F.prod(self, axis, keepdims)

    def any(self, axis=None, keepdims=False):
        xp = B.get_array_module(self.data)  # asarray: NumPy returns a scalar over all axes
        return Tensor._make(xp.asarray(xp.any(self.data, axis, keepdims=keepdims)), False,
                            None, 0)

    def all(self, axis=None, keepdims=False):
        xp = B.get_array_module(self.data)
        return Tensor._make(xp.asarray(xp.all(self.data, axis, keepdims=keepdims)), False,
                            None, 0)

    def exp(self):
        return F.exp(self)

    def log(self):
        return F.log(self)

    def sqrt(self):
        return F.sqrt(self)

    def abs(self):
        return F.abs(self)

    def relu(self):
        return F.relu(self)

    def sigmoid(self):
        return F.sigmoid(self)

    def tanh(self):
        return F.tanh(self)

    def clip(self, lower=None, upper=None):
        return F.clip(self, lower, upper)

    clamp = clip

    def matmul(self, other):
        return F.matmul(self, other)

    def pow(self, exponent):
        return F.pow(self, exponent)

    def softmax(self, axis=-1):
        return F.softmax(self, axis)

    def __repr__(self) -> str:
        body = np.array2string(self.numpy().astype(np.float32) if self.dtype == B.bfloat16
                               else self.numpy(), separator=", ", precision=4,
                               threshold=64, edgeitems=3, prefix=" " * 7)
        extra = f", dtype={self.dtype}"
        if self.device != "cpu":
            extra += f", device={self.device}"
        if self.creator is not None:
            extra += f", grad_fn={self.creator.name}"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"{type(self).__name__}({body}{extra})"


class Parameter(Tensor):
    """A Tensor that is a trainable weight: requires grad by default, kept by Modules."""

    __slots__ = ()

    def __init__(self, data, dtype=None, device=None, requires_grad: bool = True):
        if isinstance(data, Tensor) and _same_array(data, dtype, device):
            # PyTorch's Parameter(t) shares t's memory and its version counter: changing t in
            # place before a backward that needs the parameter raises, as there.
            super().__init__(data.data, requires_grad=requires_grad, copy=False)
            if data._vc is None:
                data._vc = [0]
            self._vc = data._vc
            return
        super().__init__(data, dtype=dtype, device=device, requires_grad=requires_grad)


def _same_array(t: Tensor, dtype, device) -> bool:
    """Whether ``t``'s array already has ``dtype`` and lives on ``device`` (None: any)."""
    return ((dtype is None or normalize_dtype(dtype) == t.dtype)
            and (device is None or B.normalize_device(device) == t.device))


def from_numpy(array) -> Tensor:
    """A Tensor sharing ``array``'s memory (PyTorch's ``torch.from_numpy``): writes through
    either are seen by both."""
    if type(array) is not np.ndarray:
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    return Tensor(array, copy=False)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a Tensor without a copy when it is already an array (or Tensor) of
    ``dtype`` on ``device``, sharing its memory (and a Tensor's version counter); a new Tensor
    otherwise (PyTorch's ``torch.as_tensor``)."""
    if isinstance(data, Tensor):
        if _same_array(data, dtype, device):
            return data
        return data.to(device or data.device).astype(dtype or data.dtype)
    return Tensor(data, dtype=dtype, device=device, copy=False)


# --------------------------------------------------------------------- creation functions
def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Create a Tensor from a list, scalar, NumPy or CuPy array (see :class:`Tensor`)."""
    return Tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def _shape(shape, op: str = "tensor creation"):
    """``shape`` (``*ints`` or one tuple/list) as a tuple of non-negative ints, or a clear error."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    try:
        dims = tuple(d.__index__() for d in shape)  # ints, NumPy ints; not floats
    except (AttributeError, TypeError):
        raise TypeError(f"{op}: sizes must be ints, got shape {tuple(shape)!r}") from None
    for d in dims:
        if d < 0:
            raise ValueError(f"{op}: negative dimension {d} in shape {dims}; every size must be "
                             ">= 0")
    return dims


def _size(size, op: str):
    return _shape((size,) if isinstance(size, int) else size, op)


def _xp(device):
    device = B.normalize_device(device)
    if device == "cpu":
        return np, device
    B._require_cuda(device)
    return B.cupy, device


def _created(arr, device, requires_grad):
    if device != "cpu":
        arr = B.to_device(arr, device)
    return Tensor(arr, requires_grad=requires_grad) if requires_grad else Tensor._make(
        arr, False, None, 0)


def zeros(*shape, dtype=float32, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros."""
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.zeros(_shape(shape, "zeros"), dtype=normalize_dtype(dtype)), device,
                        requires_grad)


def ones(*shape, dtype=float32, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones."""
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.ones(_shape(shape, "ones"), dtype=normalize_dtype(dtype)), device,
                        requires_grad)


def empty(*shape, dtype=float32, device=None, requires_grad=False) -> Tensor:
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.empty(_shape(shape, "empty"), dtype=normalize_dtype(dtype)), device,
                        requires_grad)


def full(shape, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value`` (float32 for a Python float)."""
    if dtype is None:
        dtype = float32 if isinstance(fill_value, float) else np.asarray(fill_value).dtype
    xp, device = _xp(device)
    shape = _size(shape, "full")
    with _on(device):
        return _created(xp.full(shape, fill_value, dtype=normalize_dtype(dtype)), device,
                        requires_grad)


def arange(start, stop=None, step=1, dtype=None, device=None) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` (int64 for ints, float32 for floats)."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = np.int64 if all(isinstance(v, int) for v in (start, stop, step)) else float32
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.arange(start, stop, step, dtype=normalize_dtype(dtype)), device, False)


def linspace(start, stop, num, dtype=float32, device=None) -> Tensor:
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.linspace(start, stop, num, dtype=normalize_dtype(dtype)), device, False)


def eye(n, m=None, dtype=float32, device=None) -> Tensor:
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.eye(n, m, dtype=normalize_dtype(dtype)), device, False)


def _random_array(device, draw, dtype):
    device = B.normalize_device(device)
    gen = _random.generator(device)
    arr = draw(gen)
    return arr.astype(normalize_dtype(dtype), copy=False)


def randn(*shape, dtype=float32, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples from the global generator (see ``mg.manual_seed``)."""
    arr = _random_array(device,
                        lambda g: g.standard_normal(_shape(shape, "randn"), dtype=np.float32),
                        dtype)
    return _created(arr, B.device_of(arr), requires_grad)


def rand(*shape, dtype=float32, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1)."""
    arr = _random_array(device, lambda g: g.random(_shape(shape, "rand"), dtype=np.float32), dtype)
    return _created(arr, B.device_of(arr), requires_grad)


def normal(mean=0.0, std=1.0, size=(), dtype=float32, device=None) -> Tensor:
    """Samples of ``N(mean, std**2)`` from the global generator."""
    size = _size(size, "normal")
    arr = _random_array(device, lambda g: _random.normal(g, mean, std, size), dtype)
    return _created(arr, B.device_of(arr), False)


def uniform(low=0.0, high=1.0, size=(), dtype=float32, device=None) -> Tensor:
    """Samples of ``U[low, high)`` from the global generator."""
    size = _size(size, "uniform")
    arr = _random_array(device, lambda g: _random.uniform(g, low, high, size), dtype)
    return _created(arr, B.device_of(arr), False)


def randint(low, high=None, size=(), dtype=np.int64, device=None) -> Tensor:
    if high is None:
        low, high = 0, low
    size = _size(size, "randint")
    arr = _random_array(device, lambda g: g.integers(low, high, size), dtype)
    return _created(arr, B.device_of(arr), False)


def zeros_like(t: Tensor, dtype=None, requires_grad=False) -> Tensor:
    return zeros(t.shape, dtype=dtype or t.dtype, device=t.device, requires_grad=requires_grad)


def ones_like(t: Tensor, dtype=None, requires_grad=False) -> Tensor:
    return ones(t.shape, dtype=dtype or t.dtype, device=t.device, requires_grad=requires_grad)


def full_like(t: Tensor, fill_value, dtype=None) -> Tensor:
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=t.device)


def manual_seed(seed: int) -> None:
    """Seed minigrad's random generators (CPU and GPU)."""
    _random.manual_seed(seed)


def from_dlpack(obj) -> Tensor:
    """Wrap a DLPack-exporting array (NumPy, CuPy, PyTorch...) as a Tensor without copying."""
    return Tensor._make(B.from_dlpack(obj), False, None, 0)


class _on:
    """Make ``device`` current for CuPy allocations (no-op on the CPU)."""

    __slots__ = ("ctx",)

    def __init__(self, device):
        self.ctx = None if device == "cpu" else B.cupy.cuda.Device(int(device.split(":")[1]))

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)


from . import functional as F  # noqa: E402  (operators are sugar over F; F needs Tensor first)
from .autodiff.grad_mode import grad_enabled  # noqa: E402  (autodiff needs Tensor first)
