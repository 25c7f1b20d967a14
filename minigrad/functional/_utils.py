"""Helpers shared by the op families (not public API)."""

from __future__ import annotations

import numpy as np

from .._backend import casts, get_array_module, lowp_cpu
from .._backend.casts import to_dtype  # noqa: F401  (re-exported for the op families)
from .._backend.dtypes import (acc_dtype, bfloat16, float32, float64, get_default_dtype, int64,
                               is_floating)
from .._backend.indexing import (  # noqa: F401  (re-exported for the op families)
    check_index_range,
    poison,
    scatter_add_flat,
    scatter_add_rows,
)
from ..core.errors import broadcast_shape, op_error  # noqa: F401  (used by the op families)
from ..core.function import Function
from ..core.modes import dispatch_hooks, grad_enabled
from ..core.tensor import Tensor
from ._axes import check_axis

_make = Tensor._make
_PY_SCALARS = (int, float, bool)


def sum_to_shape(g: Tensor, shape: tuple) -> Tensor:
    """Reduce a broadcast gradient back to ``shape`` (differentiable, for create_graph)."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = g.sum(axes, keepdims=True)  # the method ``functional`` installs: reduction.sum
    if lead:
        g = g.reshape(shape)
    return g


def shape_of(x) -> tuple:
    """Shape of a Tensor or of a Python scalar (``()``)."""
    return x.shape if isinstance(x, Tensor) else ()


def check_floating(op: str, *xs) -> None:
    """Raise, naming ``op``, for a non-floating input of an op that only computes in floats
    (as PyTorch refuses them): a truncated integer result would be silently wrong."""
    for x in xs:
        if not is_floating(x.dtype):
            raise op_error(op, "expects a floating tensor; cast it first, e.g. "
                           "x.astype('float32')", shape=x.shape, dtype=x.dtype)


def refuse_bool_product(op: str, *arrays) -> None:
    """Products of bool tensors are refused, as in PyTorch: NumPy would compute them with
    logical or/and (``[[1, 1], [1, 0]] @ itself`` gives all True), a silently different answer
    from the counts an integer product gives."""
    arrays = [a for a in arrays if a is not None]
    if any(a.size == 0 for a in arrays):
        return   # nothing is multiplied: PyTorch returns the empty or all-False result too
    if any(a.dtype.kind == "b" for a in arrays):
        raise op_error(op, "products of bool tensors are not supported (as in PyTorch); cast "
                       "to an integer or float dtype first",
                       dtypes=tuple(str(a.dtype) for a in arrays))


def const(array) -> Tensor:
    """Wrap an array as a graph constant (no grad, no creator)."""
    return _make(array, False, None, 0)


def owned_for_backward(index, needed: bool):
    """The array of an index or condition Tensor, copied when a backward will read it: the
    backward then scatters by the values the forward used even if the caller changes the
    Tensor in place in between (PyTorch raises there; the deviation is documented). Arrays
    minigrad made itself, and calls whose backward will not run, are passed as they are."""
    if not isinstance(index, Tensor):
        return index
    return index._data.copy() if needed else index._data


def fast_backward() -> bool:
    """True when the backward pass is not itself recorded (``create_graph=False``) and no
    dispatch hook (``amp.debug_overflow``) watches the ops.

    Backward functions then compute their gradient in one fused array expression instead of a
    chain of ops; under ``create_graph=True`` they use ops so higher derivatives work, and under
    a hook so that a report can name the op inside the backward (``matmul inside
    linear.backward``).
    """
    return not grad_enabled.get() and not dispatch_hooks.get()


def lift_scalar(s, like):
    """A Python scalar typed as ``like``'s dtype when NumPy's weak-scalar rule does not apply.

    NumPy 2 keeps ``float16_array + 1.5`` in float16, but bfloat16 is an extension dtype (from
    ml_dtypes) outside NEP 50: ``bf16_array + 1.5`` would silently widen to float32/float64.
    """
    if type(s) in _PY_SCALARS and getattr(like, "dtype", None) == bfloat16:
        return like.dtype.type(s)
    return s


def as_operand(x, op: str):
    """Tensors and Python scalars pass through; arrays/NumPy scalars become constants."""
    if isinstance(x, Tensor) or type(x) in _PY_SCALARS:
        return x
    if isinstance(x, np.generic):
        return x.item()  # weakly typed, like a Python scalar
    if hasattr(x, "__array_interface__") or hasattr(x, "__cuda_array_interface__"):
        return const(x)
    if isinstance(x, (list, tuple)):
        return const(np.asarray(x))
    raise TypeError(f"{op}: unsupported operand type {type(x).__name__}; pass a Tensor, an "
                    "array or a Python number")


def wide(x):
    """Array ``x`` in float32 (float64 stays): NumPy's float16/bfloat16 math is slow and
    imprecise, so the transcendental functions and activations compute there and round once
    (:func:`narrow` rounds back; both use the backend's vectorised casts)."""
    return x if x.dtype == float64 or x.dtype == float32 else casts.astype(x, float32)


def narrow(y, dtype):
    """Array ``y`` (computed by :func:`wide` means) rounded once to ``dtype``; ``y`` itself when
    it has that dtype."""
    return casts.to_dtype(y, dtype)


def cpu_wide(x):
    """A CPU float16/bfloat16 array widened to float32 (exact; the backend's vectorised cast),
    else ``x`` itself: for code that must keep GPU arrays as they are. Selections (max, min,
    argmax) may compare it instead of ``x``: it orders, ties and propagates NaN as ``x`` does,
    while NumPy's own float16 comparisons convert element by element."""
    return lowp_cpu.widen(x) if lowp_cpu.is_low(x) else x


def scalar_like(value, like):
    """``value`` as a scalar of array ``like``'s dtype (keeps bfloat16/float16 from widening)."""
    return like.dtype.type(value)


class WideUnary(Function):
    """Base of ``y = f(x)`` ops computed in float32 or wider (:func:`wide`) and returned in
    ``x``'s dtype; an integer input gives the default float dtype (float32 unless
    ``mg.set_default_dtype`` changed it), as in PyTorch.

    Subclasses set ``name``, ``f = staticmethod(lambda xp, x: ...)``, ``keep`` (what backward
    reads: the input ``"x"`` or the output ``"y"``) and ``backward``.
    """

    keep = "x"

    def forward(self, x):
        if x.dtype.kind != "f" and x.dtype.kind != "V":
            x = x.astype(get_default_dtype())
        y = narrow(self.f(get_array_module(x), wide(x)), x.dtype)
        self.save_for_backward(x if self.keep == "x" else y)
        return y


def product_acc_dtype(dtype):
    """What prod, cumsum and cumprod accumulate in: floats as :func:`acc_dtype`, integers and
    bools in int64 as in PyTorch (NumPy would give unsigned inputs uint64)."""
    return int64 if dtype.kind in "biu" else acc_dtype(dtype)


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """``axis`` in ``[0, ndim)``; PyTorch's "Dimension out of range" naming the op otherwise
    (:func:`._axes.check_axis`)."""
    return check_axis(axis, ndim, op)


def normalize_axes(axis, ndim: int, op: str) -> tuple:
    """Sorted tuple of non-negative axes (all axes for None)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    axes = tuple(sorted({normalize_axis(a, ndim, op) for a in axis}))
    if len(axes) != len(tuple(axis)):
        raise op_error(op, f"repeated axis in {axis}")
    return axes


def along_axis_linear_index(xp, idx, axis: int, shape: tuple):
    """Flat indices into an array of ``shape`` for torch.gather-style ``idx`` along ``axis``.

    Element ``i`` of ``idx`` (same ndim as ``shape``) addresses coordinate ``idx[i]`` on ``axis``
    and its own coordinate on every other axis. The result has ``idx``'s shape; nothing of
    ``shape``'s size is allocated.
    """
    lin = None
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        if d == axis:
            coord = idx * stride
        else:
            n = idx.shape[d]
            coord = (xp.arange(n, dtype=np.int64) * stride).reshape(
                (1,) * d + (n,) + (1,) * (idx.ndim - d - 1))
        lin = coord if lin is None else lin + coord
        stride *= shape[d]
    return xp.broadcast_to(lin, idx.shape) if lin is not None else idx


_HOST_BLOCK = 1 << 15


def blockwise(fn, x):
    """``fn(x)`` for an elementwise ``fn``, run in cache-sized blocks on the host.

    Long elementwise formulas (erf: ~40 passes) are memory-bound on the CPU once their
    temporaries leave the cache; 32K-element blocks keep them in L2 (about 3x faster). On the
    GPU one launch per op is what matters, so CuPy arrays go through whole. (Backend-specific
    by nature: a candidate for ``_backend.kernels``.) ``fn`` may update its temporaries in
    place: it always receives an array of at least one dimension.
    """
    if x.ndim == 0:  # NumPy ufuncs turn 0-d arrays into scalars, which ``out=`` refuses
        return fn(x.reshape(1)).reshape(())
    if type(x) is not np.ndarray or x.size <= 2 * _HOST_BLOCK:
        return fn(x)
    flat = x.reshape(-1)
    first = fn(flat[:_HOST_BLOCK])
    out = np.empty(flat.shape, dtype=first.dtype)
    out[:_HOST_BLOCK] = first
    for i in range(_HOST_BLOCK, flat.size, _HOST_BLOCK):
        out[i:i + _HOST_BLOCK] = fn(flat[i:i + _HOST_BLOCK])
    return out.reshape(x.shape)

