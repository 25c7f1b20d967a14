"""``Tensor`` and ``Parameter``, the user-facing array types, and the creation functions.

Operators and methods are thin sugar over ``minigrad.functional``; all differentiation goes
through ``Function.apply``. ``_version`` counts in-place modifications so backward can refuse
to use a saved tensor that changed after the forward; a view, a detached alias and their base
share one counter (``_vc``), so a change through any of them is seen by all.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import _backend as B
from .._backend.dtypes import (
    category,
    float_result_type,
    get_default_dtype,
    is_floating,
    is_numeric,
    normalize_dtype,
    result_type,
)
from .._backend.sync_debug import check as _sync_check
from .._backend.sync_debug import sync_mode as _sync_mode
from .device import Device, as_device
from .errors import broadcast_shape
from .size import ElementCount
from .modes import grad_enabled

__all__ = ["Parameter", "Tensor"]

def _to_array(data, dtype, device, copy=True):
    """``data`` as a backend array; a new one unless ``copy`` is False (``as_tensor``), so a
    Tensor made by ``tensor()`` never aliases its source (PyTorch's ``torch.tensor`` copies)."""
    if isinstance(data, Tensor):
        data = data._data
    if copy and hasattr(data, "dtype") and hasattr(data, "shape"):
        arr = _to_array(data, dtype, device, copy=False)
        return arr.copy() if arr is data or getattr(arr, "base", None) is data else arr
    if dtype is None and not hasattr(data, "dtype"):
        # Python floats (and lists of them) get the default float dtype (float32 unless
        # set_default_dtype changed it), as in PyTorch; NumPy would make them float64. A
        # float64 element (np.float64(1.5), a float64 array) keeps the list float64, as in
        # PyTorch: mg.tensor([np.mean(a)]) is not rounded to float32.
        seq = data
        data = np.asarray(data)
        if data.dtype == np.float64 and not (type(seq) in _SEQUENCES and _holds_float64(seq)):
            dtype = get_default_dtype()
    return B.asarray(data, dtype=dtype, device=device)


_SEQUENCES = (list, tuple)


def _holds_float64(seq) -> bool:
    """Whether the (nested) Python sequence ``seq`` holds a float64 NumPy value; an iterative
    walk that stops at the first one (Python numbers cost one type check each)."""
    stack = [seq]
    while stack:
        for v in stack.pop():
            t = type(v)
            if t is float or t is int or t is bool:
                continue
            if t is list or t is tuple:
                stack.append(v)
            elif getattr(v, "dtype", None) == np.float64:
                return True
    return False


def _torch_dims(op, axis, keepdims, dim, keepdim):
    """PyTorch's ``dim``/``keepdim`` for ``axis``/``keepdims`` (giving both is an error)."""
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{op}: got both axis={axis!r} and dim={dim!r}; they are one "
                            "argument (dim is PyTorch's spelling of axis): pass one of them")
        axis = dim
    return axis, bool(keepdims if keepdim is None else keepdim)


class Tensor:
    """An n-dimensional array on a device, optionally recording operations for backward.

    Args:
        data: a list, scalar, NumPy or CuPy array, or Tensor.
        dtype: e.g. ``mg.float32``, ``"float16"``; Python floats get the default dtype
            (float32 unless ``mg.set_default_dtype`` changed it).
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
    # ``_found_inf`` is set on gradients only, and only by a sync-free loss scaler's
    # ``unscale()``: the device flag (nonzero: inf/NaN) of the check this gradient went
    # through, which ``Optimizer.step`` reads and clears. It travels with the gradient it
    # describes (a new, accumulated gradient has none) and dies with it. None everywhere else:
    # set once at creation (one store) so the optimizer's per-parameter read is a plain slot
    # load, not an AttributeError caught behind ``getattr``'s default (~6x slower).
    __slots__ = ("_data", "requires_grad", "_grad", "creator", "_vc", "_out_index", "name",
                 "_found_inf", "__weakref__")
    __array_ufunc__ = None  # make NumPy defer to our reflected operators
    __hash__ = object.__hash__

    def __init__(self, data, dtype=None, device=None, requires_grad: bool = False, *,
                 copy: bool = True):
        dtype = normalize_dtype(dtype)
        if device is None:
            device = B.device_of(data._data if isinstance(data, Tensor) else data)
        self._data = _to_array(data, dtype, B.normalize_device(device), copy)
        if not is_numeric(self._data.dtype):
            raise TypeError(
                f"tensor: unsupported dtype {self._data.dtype} (from {type(data).__name__}); "
                "tensors hold bool, integer or floating data -- convert strings/objects first")
        if requires_grad and not is_floating(self._data.dtype):
            raise TypeError(f"only floating tensors can require grad, got {self._data.dtype}")
        self.requires_grad = bool(requires_grad)
        self._grad = None
        self.creator = None
        self._vc = None
        self._out_index = 0
        self.name = None
        self._found_inf = None

    @classmethod
    def _make(cls, data, requires_grad, creator, index):
        # The hot path of every op: no checks, no conversions.
        t = object.__new__(Tensor)
        t._data = data
        t.requires_grad = requires_grad
        t._grad = None
        t.creator = creator
        t._vc = None
        t._out_index = index
        t.name = None
        t._found_inf = None
        return t

    # ----------------------------------------------------------------- properties
    @property
    def data(self) -> "Tensor":
        """PyTorch's ``.data``: a tensor on the same memory, outside autograd.

        Writes through it (``p.data.add_(g, alpha=-lr)``, ``p.data.uniform_(-0.1, 0.1)``) change
        ``self`` without being recorded or counted as an in-place change of ``self``, as in
        PyTorch; ``t.detach()`` is the safe spelling (its writes are checked). Assigning
        (``p.data = t``) makes ``self`` hold ``t``'s memory: shape, dtype and device included.
        The raw NumPy/CuPy array is ``t.numpy()`` (CPU) or ``cupy.from_dlpack(t)``."""
        return Tensor._make(self._data, False, None, 0)

    @data.setter
    def data(self, value):
        if isinstance(value, Tensor):
            value = value._data
        elif not B.is_array(value):
            raise TypeError(f"Tensor.data: assigned a {type(value).__name__}; assign a Tensor "
                            "(or a NumPy/CuPy array)")
        if not is_numeric(value.dtype) or (self.requires_grad and not is_floating(value.dtype)):
            raise TypeError(f"Tensor.data: can't hold {value.dtype} data"
                            + (" in a tensor that requires grad" if is_numeric(value.dtype)
                               else ""))
        self._data = value

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
            if value._data.shape != self._data.shape:
                raise ValueError(
                    f"grad: assigned gradient has shape {value._data.shape} but the tensor has "
                    f"shape {self._data.shape}; assign a gradient of the tensor's shape")
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
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def device(self) -> Device:
        """Where the data lives: a :class:`~minigrad.core.device.Device` (``.type``,
        ``.index``) equal to its string (``"cpu"``, ``"cuda:0"``)."""
        return as_device(B.device_of(self._data))

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> ElementCount:
        """The number of elements (an int, MegEngine's property), callable as PyTorch's method:
        ``x.size()`` is the shape (a ``Size``), ``x.size(d)`` dimension ``d``'s length."""
        return ElementCount(self._data.shape)

    def numel(self) -> int:
        return self._data.size

    def dim(self) -> int:
        return self._data.ndim

    @property
    def is_leaf(self) -> bool:
        return self.creator is None

    @property
    def grad_fn(self):
        return self.creator

    @property
    def is_cuda(self) -> bool:
        return self.device != "cpu"

    # ----------------------------------------------------------------- conversion
    def numpy(self) -> np.ndarray:
        """A NumPy copy (or view, on the CPU) of the data; copies from the GPU."""
        d = self._data
        if _sync_mode.get():  # mg.cuda.set_sync_debug_mode: every host read passes here
            _sync_check("Tensor.numpy()/item()/tolist()/bool()/float()/int()")
        return d if type(d) is np.ndarray else d.get()

    def item(self):
        """The single value as a Python number."""
        if self._data.size != 1:
            raise ValueError(f"item(): tensor has {self._data.size} elements, expected 1")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self, device="cuda") -> "Tensor":
        return self.to(device)

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (an alias: it shares the version counter)."""
        t = Tensor._make(self._data, False, None, 0)
        t._vc = self._counter()
        return t

    def requires_grad_(self, flag: bool = True) -> "Tensor":
        if flag and not is_floating(self.dtype):
            raise TypeError(f"only floating tensors can require grad, got {self.dtype}")
        self.requires_grad = flag
        return self

    def zero_grad(self) -> None:
        self._grad = None

    # ----------------------------------------------------------------- in place
    def _check_inplace(self, what: str):
        if self.requires_grad and grad_enabled.get():
            raise RuntimeError(
                f"{what}: in-place modification of a tensor that requires grad (shape "
                f"{self.shape}) while recording; wrap it in `with mg.no_grad():` or use the "
                "out-of-place op")
        if B.is_shared_memory(self._data):
            # read-only memory, or an expanded (broadcast) view whose elements share memory
            raise RuntimeError(
                f"{what}: this tensor (shape {self.shape}) is read-only or an expanded view in "
                "which several elements share one memory location; write to a copy "
                "(t.clone()) instead")

    def _set_data_(self, array) -> "Tensor":
        """Replace the data in place (bumps the version counter; no graph)."""
        xp = B.get_array_module(self._data)
        if array is not self._data:
            xp.copyto(self._data, array, casting="unsafe")
        self._version += 1
        return self

    def copy_(self, src) -> "Tensor":
        self._check_inplace("copy_")
        src = src._data if isinstance(src, Tensor) else src
        return self._set_data_(B.to_device(B.get_array_module(src).asarray(src),
                                           self.device) if not np.isscalar(src) else src)

    def fill_(self, value) -> "Tensor":
        self._check_inplace("fill_")
        self._data[...] = value
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
            other = other._data
        self._check_operand(other, what, true_div)
        op(self._data, other, out=self._data, casting="unsafe")
        self._version += 1
        return self

    def _check_operand(self, other, what, true_div):
        # PyTorch's rules for ``self op= other``: the promoted result must fit self's dtype
        # category (no float result into an int tensor) and broadcast to self's shape.
        d = self._data.dtype
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
        if o is not None and other.shape != self._data.shape and \
                broadcast_shape(what, self._data.shape, other.shape) != self._data.shape:
            raise ValueError(f"{what}: operand of shape {tuple(other.shape)} does not broadcast "
                             f"to the tensor's shape {self.shape} (an in-place result keeps "
                             "the tensor's shape)")

    def add_(self, other, alpha=1.0) -> "Tensor":
        if alpha != 1.0:  # through mul, so the operand's dtype and grad rules still apply
            other = other * alpha
        return self._binary_inplace(other, B.get_array_module(self._data).add, "add_")

    def sub_(self, other) -> "Tensor":
        return self._binary_inplace(other, B.get_array_module(self._data).subtract, "sub_")

    def mul_(self, other) -> "Tensor":
        return self._binary_inplace(other, B.get_array_module(self._data).multiply, "mul_")

    def div_(self, other) -> "Tensor":
        return self._binary_inplace(other, B.get_array_module(self._data).divide, "div_", True)

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
        return self._augmented(other, self.add_, operator.add)

    def __isub__(self, other):
        return self._augmented(other, self.sub_, operator.sub)

    def __imul__(self, other):
        return self._augmented(other, self.mul_, operator.mul)

    def __itruediv__(self, other):
        return self._augmented(other, self.div_, operator.truediv)

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
            index = index._data
        elif isinstance(index, tuple):
            index = tuple(i._data if isinstance(i, Tensor) else i for i in index)
        self._data[index] = value._data if isinstance(value, Tensor) else value
        self._version += 1

    def __pos__(self):
        return self

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self._data.size} elements is ambiguous; use "
                ".any() or .all()")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __format__(self, spec: str) -> str:
        # PyTorch's rule: a 0-d tensor formats as its value (f"{loss:>7f}"); others only with
        # an empty spec (their repr)
        if self._data.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} passed to Tensor.__format__: "
                            f"only 0-d tensors take one (this one has shape {self.shape}); "
                            "format t.item() or t.tolist()")
        return str(self)

    def __index__(self) -> int:
        if is_floating(self.dtype):
            raise TypeError("only integer tensors can be used as an index")
        return int(self.item())

    def any(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        axis, keepdims = _torch_dims("any", axis, keepdims, dim, keepdim)
        xp = B.get_array_module(self._data)  # asarray: NumPy returns a scalar over all axes
        return Tensor._make(xp.asarray(xp.any(self._data, axis, keepdims=keepdims)), False,
                            None, 0)

    def all(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        axis, keepdims = _torch_dims("all", axis, keepdims, dim, keepdim)
        xp = B.get_array_module(self._data)
        return Tensor._make(xp.asarray(xp.all(self._data, axis, keepdims=keepdims)), False,
                            None, 0)

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
    """A Tensor that is a trainable weight: requires grad by default, kept by Modules.

    ``name`` is a label (MindSpore's ``Parameter(data, name=...)``); state dicts name a
    parameter by where its module holds it.
    """

    __slots__ = ()

    def __init__(self, data, dtype=None, device=None, requires_grad: bool = True,
                 name: str | None = None):
        if isinstance(data, Tensor) and _same_array(data, dtype, device):
            # PyTorch's Parameter(t) shares t's memory and its version counter: changing t in
            # place before a backward that needs the parameter raises, as there.
            super().__init__(data._data, requires_grad=requires_grad, copy=False)
            if data._vc is None:
                data._vc = [0]
            self._vc = data._vc
        else:
            super().__init__(data, dtype=dtype, device=device, requires_grad=requires_grad)
        self.name = name


def _same_array(t: Tensor, dtype, device) -> bool:
    """Whether ``t``'s array already has ``dtype`` and lives on ``device`` (None: any)."""
    return ((dtype is None or normalize_dtype(dtype) == t.dtype)
            and (device is None or B.normalize_device(device) == t.device))
