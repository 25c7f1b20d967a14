"""The Tensor methods PyTorch code calls (``x.long()``, ``x.new_zeros(...)``, ``x.masked_fill``,
``x.gather(dim, idx)``, ``x.split(2, dim=1)``, ...): sugar over ``minigrad.functional``, copied onto
``Tensor`` by ``_tensor_methods.install`` next to the operators.

Each is PyTorch's signature and semantics over minigrad's one op; ``split``/``chunk`` are the
PyTorch meanings (chunk sizes, counts rounded up) also used by ``mg.split``/``mg.chunk``, while
``F.split`` keeps MegEngine's (a number of equal parts, or split points).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _backend as B
from .._backend import random as _random
from .._backend.dtypes import bfloat16, float64, is_floating, normalize_dtype
from ..core import creation as _creation
from ..core.cast import cast as _to_dtype
from ..core.cast import to_device as _to_device
from ..core.tensor import Tensor
from . import activation as _activation
from . import elementwise as _elementwise
from . import matmul as _matmul
from . import reduction as _reduction
from . import scan as _scan
from . import shape as _shape
from . import transcendental as _transcendental
from ._axes import check_axis, one_of

__all__ = ["TorchMethods", "TENSOR_TYPES", "torch_chunk", "torch_split"]

# dtype -> PyTorch's legacy tensor-type name (``x.type()``)
TENSOR_TYPES = {
    np.dtype(np.float32): "FloatTensor", np.dtype(np.float64): "DoubleTensor",
    np.dtype(np.float16): "HalfTensor", bfloat16: "BFloat16Tensor",
    np.dtype(np.int64): "LongTensor", np.dtype(np.int32): "IntTensor",
    np.dtype(np.int16): "ShortTensor", np.dtype(np.int8): "CharTensor",
    np.dtype(np.uint8): "ByteTensor", np.dtype(np.bool_): "BoolTensor",
}
_TYPE_DTYPES = {name: dtype for dtype, name in TENSOR_TYPES.items()}


def _shape_arg(size, op):
    """``(2, 3)``, ``[2, 3]`` or ``2, 3`` (PyTorch takes all three) as a tuple."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(f"{op}: sizes must be ints, got {size!r}")
    return tuple(int(s) for s in size)


def torch_split(x: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """PyTorch's ``split``: pieces of ``split_size`` along ``dim`` (the last may be smaller), or
    pieces of the listed sizes (which must add up to the dimension's length)."""
    if x.ndim == 0:
        raise ValueError("split: expects at least a 1-D tensor; reshape a 0-d one first")
    dim = check_axis(dim, x.ndim, "split")
    n = x.shape[dim]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise ValueError(f"split: section sizes {sizes} must be >= 0 and add up to the "
                             f"length {n} of dim {dim} (shape {x.shape})")
    else:
        size = int(split_size_or_sections)
        if size <= 0 and n:
            raise ValueError(f"split: split_size must be a positive int, got {size}")
        sizes = [min(size, n - i) for i in range(0, n, size)] if n else [0]
    points, at = [], 0
    for s in sizes[:-1]:
        at += s
        points.append(at)
    return tuple(_shape.split(x, points, dim)) if points else (x,)


def torch_chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple:
    """PyTorch's ``chunk``: ``chunks`` pieces of ``ceil(n / chunks)`` along ``dim`` (fewer when
    they run out)."""
    if int(chunks) <= 0:
        raise ValueError(f"chunk: chunks must be a positive int, got {chunks}")
    if x.ndim == 0:
        raise ValueError("chunk: expects at least a 1-D tensor")
    n = x.shape[check_axis(dim, x.ndim, "chunk")]
    return torch_split(x, max(1, math.ceil(n / int(chunks))), dim)


def _parse_type(name: str):
    """``"torch.FloatTensor"`` / ``"minigrad.cuda.LongTensor"`` -> (dtype, cuda?)."""
    parts = name.split(".")
    cuda = "cuda" in parts[:-1]
    dtype = _TYPE_DTYPES.get(parts[-1])
    if dtype is None:
        raise TypeError(f"type({name!r}): unknown tensor type; use a dtype (mg.float32) or one "
                        f"of {sorted(_TYPE_DTYPES)} (optionally 'torch.'/'minigrad.[cuda.]')")
    return dtype, cuda


class TorchMethods:
    """Method bodies copied onto ``Tensor`` (never instantiated)."""

    # ------------------------------------------------------------------ casts
    def double(self) -> Tensor:
        return _to_dtype(self, float64)

    def long(self) -> Tensor:
        return _to_dtype(self, np.int64)

    def int(self) -> Tensor:
        return _to_dtype(self, np.int32)

    def short(self) -> Tensor:
        return _to_dtype(self, np.int16)

    def char(self) -> Tensor:
        return _to_dtype(self, np.int8)

    def byte(self) -> Tensor:
        return _to_dtype(self, np.uint8)

    def bool(self) -> Tensor:
        return _to_dtype(self, np.bool_)

    def type(self, dtype=None, non_blocking: bool = False):
        """``x.type()``: the type name (``"minigrad.FloatTensor"``, ``"minigrad.cuda.LongTensor"``);
        ``x.type(dtype)`` / ``x.type("torch.DoubleTensor")``: the cast (a ``cuda.`` name also
        moves to the GPU)."""
        if dtype is None:
            where = "cuda." if self.device != "cpu" else ""
            return f"minigrad.{where}{TENSOR_TYPES.get(self.dtype, str(self.dtype))}"
        if isinstance(dtype, str) and dtype.rsplit(".", 1)[-1] in _TYPE_DTYPES:
            dtype, cuda = _parse_type(dtype)
            out = _to_device(self, "cuda") if cuda and self.device == "cpu" else self
            return _to_dtype(out, dtype)
        return _to_dtype(self, normalize_dtype(dtype))

    def type_as(self, other) -> Tensor:
        return _to_dtype(self, other.dtype)

    def is_floating_point(self) -> bool:
        return is_floating(self.dtype)

    # ------------------------------------------------------------------ facts
    def ndimension(self) -> int:
        return self._data.ndim

    def nelement(self) -> int:
        return self._data.size

    def element_size(self) -> int:
        return self._data.dtype.itemsize

    def get_device(self) -> int:
        """The GPU index, or -1 on the CPU (PyTorch's convention)."""
        index = self.device.index
        return -1 if index is None else index

    def is_contiguous(self, memory_format=None) -> bool:
        return bool(self._data.flags.c_contiguous)

    def contiguous(self, memory_format=None) -> Tensor:
        """``self`` when its memory is C-contiguous, else a contiguous copy (differentiable)."""
        if self._data.flags.c_contiguous:
            return self
        # reshaping a non-contiguous array to 1-D copies it in C order; back to the shape is
        # a view of that copy
        return _shape.reshape(_shape.reshape(self, (-1,)), self.shape)

    # ------------------------------------------------------------------ new tensors like self
    def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
        return _creation.zeros(_shape_arg(size, "new_zeros"), dtype=dtype or self.dtype,
                               device=device or self.device, requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
        return _creation.ones(_shape_arg(size, "new_ones"), dtype=dtype or self.dtype,
                              device=device or self.device, requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
        return _creation.empty(_shape_arg(size, "new_empty"), dtype=dtype or self.dtype,
                               device=device or self.device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None,
                 requires_grad: bool = False) -> Tensor:
        out = _creation.full(_shape_arg((size,), "new_full"), fill_value,
                             dtype=dtype or self.dtype, device=device or self.device)
        return out.requires_grad_(True) if requires_grad else out

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
        """A copy of ``data`` with this tensor's dtype and device unless given."""
        return _creation.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                                requires_grad=requires_grad)

    # ------------------------------------------------------------------ shape
    def t(self) -> Tensor:
        """Transpose of a 2-D tensor (0-d and 1-D tensors come back as they are)."""
        if self.ndim > 2:
            raise ValueError(f"t(): expects a tensor with <= 2 dimensions, got shape "
                             f"{self.shape}; use transpose(dim0, dim1) or permute")
        return _shape.swapaxes(self, 0, 1) if self.ndim == 2 else self

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """The view ``self[..., start:start + length, ...]`` along ``dim``."""
        dim = check_axis(dim, self.ndim, "narrow")
        n = self.shape[dim]
        if start < 0:
            start += n
        if not (0 <= start <= n and 0 <= length and start + length <= n):
            raise IndexError(f"narrow: start {start} and length {length} exceed dim {dim} of "
                             f"size {n} (shape {self.shape})")
        index = (slice(None),) * dim + (slice(start, start + length),)
        return _shape.getitem(self, index)

    def view_as(self, other) -> Tensor:
        return _shape.reshape(self, other.shape)

    reshape_as = view_as

    def expand_as(self, other) -> Tensor:
        return _shape.broadcast_to(self, other.shape)

    def split(self, split_size_or_sections, dim: int = 0) -> tuple:
        return torch_split(self, split_size_or_sections, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        return torch_chunk(self, chunks, dim)

    def repeat(self, *sizes) -> Tensor:
        """PyTorch's ``repeat``: tile the tensor ``sizes[i]`` times along dim ``i`` (NumPy's
        ``tile``; ``repeat_interleave`` repeats elements)."""
        sizes = _shape_arg(sizes, "repeat")
        if len(sizes) < self.ndim:
            raise ValueError(f"repeat: {len(sizes)} repeat counts for a {self.ndim}-D tensor; "
                             "give at least one per dimension")
        return _shape.tile(self, sizes)

    def repeat_interleave(self, repeats, dim=None) -> Tensor:
        return _shape.repeat(self, repeats, dim)

    # ------------------------------------------------------------------ indexing
    def gather(self, dim: int, index) -> Tensor:
        return _shape.gather(self, dim, index)

    def index_select(self, dim: int, index) -> Tensor:
        return _shape.index_select(self, dim, index)

    def masked_fill(self, mask, value) -> Tensor:
        """``value`` where ``mask`` (broadcast) is True, else ``self``; keeps ``self``'s dtype."""
        out = _elementwise.where(mask, value, self)
        return out if out.dtype == self.dtype else _to_dtype(out, self.dtype)

    # ------------------------------------------------------------------ arithmetic, comparison
    def add(self, other, *, alpha=1) -> Tensor:
        return _elementwise.add(self, other if alpha == 1 else other * alpha)

    def sub(self, other, *, alpha=1) -> Tensor:
        return _elementwise.sub(self, other if alpha == 1 else other * alpha)

    def mul(self, other) -> Tensor:
        return _elementwise.mul(self, other)

    def div(self, other) -> Tensor:
        return _elementwise.div(self, other)

    def neg(self) -> Tensor:
        return _elementwise.neg(self)

    def square(self) -> Tensor:
        return _elementwise.square(self)

    def rsqrt(self) -> Tensor:
        return _elementwise.rsqrt(self)

    def reciprocal(self) -> Tensor:
        return _elementwise.reciprocal(self)

    def sign(self) -> Tensor:
        return _elementwise.sign(self)

    def sin(self) -> Tensor:
        return _transcendental.sin(self)

    def cos(self) -> Tensor:
        return _transcendental.cos(self)

    def log1p(self) -> Tensor:
        return _transcendental.log1p(self)

    def eq(self, other) -> Tensor:
        return _elementwise.equal(self, other)

    def ne(self, other) -> Tensor:
        return _elementwise.not_equal(self, other)

    def lt(self, other) -> Tensor:
        return _elementwise.less(self, other)

    def le(self, other) -> Tensor:
        return _elementwise.less_equal(self, other)

    def gt(self, other) -> Tensor:
        return _elementwise.greater(self, other)

    def ge(self, other) -> Tensor:
        return _elementwise.greater_equal(self, other)

    def mm(self, other) -> Tensor:
        return _matmul.mm(self, other)

    def bmm(self, other) -> Tensor:
        return _matmul.bmm(self, other)

    # ------------------------------------------------------------------ along a dim
    def log_softmax(self, dim=None, *, axis=None, dtype=None) -> Tensor:
        dim = one_of("log_softmax", dim, axis, ("dim", "axis"))
        x = self if dtype is None else _to_dtype(self, dtype)
        return _activation.log_softmax(x, -1 if dim is None else dim)

    def cumsum(self, dim=None, *, axis=None) -> Tensor:
        dim = one_of("cumsum", dim, axis, ("dim", "axis"))
        if dim is None:
            raise TypeError("cumsum: missing dim (PyTorch's cumsum needs one)")
        return _scan.cumsum(self, dim)

    def norm(self, p="fro", dim=None, keepdim: bool = False) -> Tensor:
        return _reduction.norm(self, 2 if p in ("fro", None) else p, dim, keepdim)

    # ------------------------------------------------------------------ in place (not recorded)
    def uniform_(self, a: float = 0.0, b: float = 1.0) -> Tensor:
        """Fill with samples of U(a, b) from minigrad's generator (``mg.manual_seed``)."""
        return self._set_data_(_draw(self, "uniform_").random(self.shape, dtype=_draw_dtype(
            self)) * (b - a) + a)

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> Tensor:
        """Fill with samples of N(mean, std**2) from minigrad's generator."""
        return self._set_data_(_draw(self, "normal_").standard_normal(
            self.shape, dtype=_draw_dtype(self)) * std + mean)

    def clamp_(self, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's names
        if min is None and max is None:
            raise ValueError("clamp_: at least one of min and max must be given")
        self._check_inplace("clamp_")
        return self._set_data_(B.get_array_module(self._data).clip(self._data, min, max))

    clip_ = clamp_

    def masked_fill_(self, mask, value) -> Tensor:
        self._check_inplace("masked_fill_")
        xp = B.get_array_module(self._data)
        m = mask._data if isinstance(mask, Tensor) else xp.asarray(mask)
        v = value._data if isinstance(value, Tensor) else value
        return self._set_data_(xp.where(m, v, self._data))


def _draw_dtype(t: Tensor):
    # float64 tensors get float64 draws; float16/bfloat16 get float32 draws rounded on write
    return np.float64 if t.dtype == float64 else np.float32


def _draw(t: Tensor, op: str):
    if not is_floating(t.dtype):
        raise TypeError(f"{op}: fills floating tensors, got {t.dtype}")
    t._check_inplace(op)
    return _random.generator(t.device)

