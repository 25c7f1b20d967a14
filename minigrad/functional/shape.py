"""Shape and indexing ops (reshapes, transposes, joins, ``flip``/``roll``, ``pixel_shuffle``,
padding, tiling) and gathers/scatters (``gather``, ``take_along_axis``, ``index_select``,
``index_add``, ``scatter_add``, ``one_hot``).

Scatter-style gradients (integer-array indexing, ``gather``, ``index_select``) accumulate repeated
indices with a bincount over the unique targets (``_utils.scatter_add_flat``/``scatter_add_rows``),
which is fast on NumPy and CuPy alike. Every backward here is itself differentiable: the adjoint
of a gather is a scatter and the adjoint of that scatter is the gather again.
"""

from __future__ import annotations

import numpy as np

from .._backend import get_array_module
from .._backend.dtypes import int64, result_type
from ..core.cast import cast
from ..core.function import Function
from ..core.modes import grad_enabled
from ..core.tensor import Tensor
from ._axes import DimensionOutOfRange, check_axis
from ._utils import (
    along_axis_linear_index,
    broadcast_shape,
    check_index_range,
    const,
    normalize_axes,
    normalize_axis,
    op_error,
    owned_for_backward,
    poison,
    scatter_add_flat,
    scatter_add_rows,
    sum_to_shape,
)

__all__ = [
    "broadcast_to",
    "concat",
    "expand_dims",
    "flatten",
    "flip",
    "gather",
    "getitem",
    "index_add",
    "index_select",
    "one_hot",
    "pad",
    "permute",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "repeat",
    "reshape",
    "roll",
    "scatter_add",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "take_along_axis",
    "tile",
    "transpose",
]


# --------------------------------------------------------------------------- views
def _view(out: Tensor, x: Tensor) -> Tensor:
    """Let ``out`` share ``x``'s version counter when its array aliases ``x``'s memory.

    NumPy and CuPy point a view's ``base`` at the array owning the memory, so a view of ``x``
    has ``x`` or ``x``'s own base there; a copy (reshape of a non-contiguous array, advanced
    indexing) does not. An in-place change through any alias then reaches every saved alias.
    """
    a = out._data
    b = a.base
    if b is not None and (b is x._data or b is x._data.base):
        out._vc = x._counter()
    return out


class Reshape(Function):
    name = "reshape"

    def forward(self, x, shape):
        self.in_shape = x.shape
        try:
            return x.reshape(shape)
        except ValueError:
            raise op_error(self.name, f"cannot reshape {x.size} elements into {shape}",
                           shape=x.shape) from None

    def backward(self, gy):
        return gy.reshape(self.in_shape)


class ExpandDims(Reshape):
    name = "expand_dims"


class Squeeze(Reshape):
    name = "squeeze"


class FlattenFunction(Reshape):
    name = "flatten"


class Transpose(Function):
    name = "transpose"

    def forward(self, x, axes, op="transpose"):
        self.axes = axes
        try:
            return get_array_module(x).transpose(x, axes)
        except ValueError:  # NumPy's AxisError too; explained only once NumPy refuses
            raise _permutation_error(op, axes, x.ndim) from None

    def backward(self, gy):
        if self.axes is None:
            return transpose(gy)
        return transpose(gy, tuple(int(i) for i in np.argsort([a % len(self.axes)
                                                               for a in self.axes])))


class BroadcastTo(Function):
    name = "broadcast_to"

    def forward(self, x, shape):
        self.in_shape = x.shape
        try:
            return get_array_module(x).broadcast_to(x, shape)
        except ValueError:
            raise op_error(self.name, f"cannot broadcast shape {x.shape} to {shape}") from None

    def backward(self, gy):
        return sum_to_shape(gy, self.in_shape)


def _permutation_error(op, axes, ndim):
    for a in axes:
        check_axis(a, ndim, op)  # raises PyTorch's "Dimension out of range"
    return op_error(op, f"axes {axes} are not a permutation of the {ndim} axes of the input; "
                    "list each axis once")


def reshape(x: Tensor, shape) -> Tensor:
    """``x`` with a new shape (one ``-1`` allowed)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if shape == x.shape:
        return x
    return _view(Reshape.apply(x, shape=shape), x)


def transpose(x: Tensor, axes=None) -> Tensor:
    """Permute axes (reverse them when ``axes`` is None)."""
    return _view(Transpose.apply(x, axes=None if axes is None else tuple(axes)), x)


def permute(x: Tensor, axes) -> Tensor:
    """Reorder axes: output axis ``i`` is input axis ``axes[i]`` (alias of :func:`transpose`,
    recorded as a ``transpose`` op)."""
    return _view(Transpose.apply(x, axes=tuple(axes), op="permute"), x)


def broadcast_to(x: Tensor, shape) -> Tensor:
    """``x`` broadcast to ``shape`` (a view; the gradient is summed back)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if shape == x.shape:
        return x
    return _view(BroadcastTo.apply(x, shape=shape), x)


def swapaxes(x: Tensor, axis1: int, axis2: int) -> Tensor:
    """Exchange two axes."""
    axis1, axis2 = check_axis(axis1, x.ndim, "swapaxes"), check_axis(axis2, x.ndim, "swapaxes")
    axes = list(range(x.ndim))
    if axes:  # a 0-d tensor has nothing to swap (axes 0 and -1 are allowed, as in PyTorch)
        axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return _view(Transpose.apply(x, axes=tuple(axes), op="swapaxes"), x)


def expand_dims(x: Tensor, axis) -> Tensor:
    """Insert size-1 axes at ``axis`` (int or tuple, positions in the output)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out_ndim = x.ndim + len(axes)
    axes = normalize_axes(axes, out_ndim, "expand_dims")
    dims = iter(x.shape)
    shape = tuple(1 if i in axes else next(dims) for i in range(out_ndim))
    return _view(ExpandDims.apply(x, shape=shape), x)


def squeeze(x: Tensor, axis=None) -> Tensor:
    """Remove size-1 axes (all of them for None; the given ones must have size 1)."""
    if axis is None:
        axes = tuple(i for i, s in enumerate(x.shape) if s == 1)
    else:
        axes = normalize_axes(axis, x.ndim, "squeeze") if x.ndim else ()  # 0-d: nothing to do
        for a in axes:
            if x.shape[a] != 1:
                raise op_error("squeeze", f"axis {a} has size {x.shape[a]}, not 1",
                               shape=x.shape)
    if not axes:
        return x
    return _view(Squeeze.apply(x, shape=tuple(s for i, s in enumerate(x.shape) if i not in axes)),
                 x)


def flatten(x: Tensor, start_axis: int = 0, end_axis: int = -1) -> Tensor:
    """Merge axes ``start_axis..end_axis`` (inclusive) into one."""
    if x.ndim == 0:
        return _view(FlattenFunction.apply(x, shape=(1,)), x)
    s = normalize_axis(start_axis, x.ndim, "flatten")
    e = normalize_axis(end_axis, x.ndim, "flatten")
    if s > e:
        raise op_error("flatten", f"start_axis {start_axis} comes after end_axis {end_axis}",
                       shape=x.shape)
    n = 1
    for d in x.shape[s:e + 1]:
        n *= d
    shape = x.shape[:s] + (n,) + x.shape[e + 1:]
    return x if shape == x.shape else _view(FlattenFunction.apply(x, shape=shape), x)


# --------------------------------------------------------------------------- join / split
class Concat(Function):
    name = "concat"

    def forward(self, *xs, axis):
        xp = get_array_module(xs[0])
        ref = xs[0].shape
        for i, x in enumerate(xs):
            if x.ndim != len(ref) or any(a != b for d, (a, b) in enumerate(zip(x.shape, ref))
                                         if d != axis):
                raise op_error(self.name, f"tensor {i} has shape {x.shape} but tensor 0 has "
                               f"{ref}; all sizes except axis {axis} must match")
        self.axis = axis
        self.points = [int(p) for p in np.cumsum([x.shape[axis] for x in xs[:-1]])]
        return xp.concatenate(xs, axis=axis)

    def backward(self, gy):
        return tuple(split(gy, self.points, self.axis))


class Stack(Function):
    name = "stack"

    def forward(self, *xs, axis):
        for i, x in enumerate(xs):
            if x.shape != xs[0].shape:
                raise op_error(self.name, f"tensor {i} has shape {x.shape} but tensor 0 has "
                               f"{xs[0].shape}; stack needs equal shapes")
        self.axis = axis
        return get_array_module(xs[0]).stack(xs, axis=axis)

    def backward(self, gy):
        lead = (slice(None),) * self.axis
        return tuple(getitem(gy, lead + (i,)) for i in range(gy.shape[self.axis]))


class Split(Function):
    name = "split"

    def forward(self, x, points, axis):
        self.axis = axis
        return tuple(get_array_module(x).split(x, points, axis=axis))

    def backward(self, *gys):
        return concat(list(gys), self.axis)


def _tensors(tensors, op):
    tensors = list(tensors)
    if not tensors:
        raise op_error(op, "needs at least one tensor")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected Tensors, got {type(t).__name__}")
    return tensors


def _common_dtype(tensors):
    """The tensors cast to PyTorch's promotion of their dtypes (int64 with float32 gives
    float32, not NumPy's float64; float16 with bfloat16 gives float32, not an error)."""
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) == 1:
        return tensors
    target = result_type(list(dtypes))
    return [cast(t, target) for t in tensors]


def concat(tensors, axis: int = 0) -> Tensor:
    """Join tensors along an existing ``axis``."""
    tensors = _common_dtype(_tensors(tensors, "concat"))
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise op_error("concat", f"the tensor at position {i} is 0-d and cannot be joined "
                           "along an axis; use stack, or reshape it to (1,)")
    axis = normalize_axis(axis, tensors[0].ndim, "concat")
    if len(tensors) == 1:
        return tensors[0]
    return Concat.apply(*tensors, axis=axis)


def stack(tensors, axis: int = 0) -> Tensor:
    """Join equally shaped tensors along a new ``axis``."""
    tensors = _common_dtype(_tensors(tensors, "stack"))
    axis = normalize_axis(axis, tensors[0].ndim + 1, "stack")
    return Stack.apply(*tensors, axis=axis)


def split(x: Tensor, nsplits_or_sections, axis: int = 0) -> list:
    """Split ``x`` along ``axis``.

    Args:
        x: input.
        nsplits_or_sections: an int N (N equal parts; the size must divide) or a list of split
            points, as in ``numpy.split``.
        axis: the axis to cut.

    Returns:
        A list of Tensors.
    """
    if x.ndim == 0:
        raise op_error("split", "expects at least a 1-D tensor; reshape a 0-d one first")
    axis = normalize_axis(axis, x.ndim, "split")
    n = x.shape[axis]
    if isinstance(nsplits_or_sections, int):
        k = nsplits_or_sections
        if k <= 0 or n % k:
            raise op_error("split", f"cannot split an axis of size {n} into {k} equal parts; "
                           "pass a list of split points instead", shape=x.shape, axis=axis)
        points = [n // k * i for i in range(1, k)]
    else:
        points = [int(p) for p in nsplits_or_sections]
    out = Split.apply(x, points=points, axis=axis)
    return [_view(o, x) for o in out] if isinstance(out, tuple) else [_view(out, x)]


# --------------------------------------------------------------------------- indexing
def _index_data(index, xp, needed=False):
    """Unwrap Tensors (copied when a backward will read them) and lists in an index; report
    whether it holds integer arrays."""
    items = index if isinstance(index, tuple) else (index,)
    out, has_int_array, advanced = [], False, False
    for it in items:
        if isinstance(it, Tensor):
            it = owned_for_backward(it, needed)
        elif isinstance(it, list):
            it = xp.asarray(it)
        if hasattr(it, "dtype") and hasattr(it, "ndim") and not isinstance(it, np.generic):
            advanced = True
            if it.dtype.kind != "b":
                has_int_array = True
        out.append(it)
    return (tuple(out) if isinstance(index, tuple) else out[0]), advanced, has_int_array


class GetItem(Function):
    name = "getitem"

    def forward(self, x, index, advanced, has_int):
        self.in_shape, self.index, self.has_int = x.shape, index, has_int
        try:
            return x[index]
        except IndexError as e:  # still an IndexError (iteration relies on it), named
            raise IndexError(f"getitem: {e} (tensor shape={x.shape})") from None

    def backward(self, gy):
        return GetItemBackward.apply(gy, shape=self.in_shape, index=self.index,
                                     has_int=self.has_int)


class GetItemBackward(Function):
    name = "getitem_backward"

    def forward(self, g, shape, index, has_int):
        self.index, self.has_int = index, has_int
        xp = get_array_module(g)
        if not has_int:  # slices, ints, masks: every target is hit at most once
            out = xp.zeros(shape, dtype=g.dtype)
            out[index] = g
            return out
        items = index if isinstance(index, tuple) else (index,)
        if len(items) == 1 and hasattr(items[0], "ndim"):  # x[idx]: the embedding case
            rows = items[0] % shape[0] if shape else items[0]
            # rows.size, not -1: with a zero-size row shape, -1 is ambiguous and NumPy refuses.
            return scatter_add_rows(xp, shape[0], rows, g.reshape((rows.size,) + shape[1:]),
                                    g.dtype)
        # General mixed index: gather each element's flat position through zero-stride views.
        size = int(np.prod(shape, dtype=np.int64))
        lin, stride = None, 1
        for d in range(len(shape) - 1, -1, -1):
            coord = xp.arange(shape[d], dtype=np.int64) * stride
            coord = xp.broadcast_to(coord.reshape((-1,) + (1,) * (len(shape) - d - 1)), shape)
            part = coord[index]
            lin = part if lin is None else lin + part
            stride *= shape[d]
        return scatter_add_flat(xp, size, lin, g, g.dtype).reshape(shape)

    def backward(self, gg):
        return GetItem.apply(gg, index=self.index, advanced=True, has_int=self.has_int)


def getitem(x: Tensor, index) -> Tensor:
    """``x[index]`` with NumPy semantics: ints, slices, None, Ellipsis, integer arrays/Tensors
    and bool masks. Repeated integer indices accumulate their gradients."""
    index, advanced, has_int = _index_data(index, get_array_module(x._data),
                                           grad_enabled.get() and x.requires_grad)
    out = GetItem.apply(x, index=index, advanced=advanced, has_int=has_int)
    return out if advanced else _view(out, x)


class Pad(Function):
    name = "pad"

    def forward(self, x, widths, value):
        self.slices = tuple(slice(b, b + n) for (b, _), n in zip(widths, x.shape))
        return get_array_module(x).pad(x, widths, mode="constant",
                                       constant_values=x.dtype.type(value))

    def backward(self, gy):
        return getitem(gy, self.slices)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "symmetric": "symmetric",
              "edge": "edge", "replicate": "edge", "wrap": "wrap", "circular": "wrap"}


def pad(x: Tensor, pad_width, mode: str = "constant", value: float = 0.0) -> Tensor:
    """Pad ``x`` with NumPy-style ``pad_width``.

    Args:
        x: input.
        pad_width: ``n``, ``(before, after)`` or one ``(before, after)`` pair per axis.
        mode: ``"constant"`` (fill with ``value``), ``"reflect"``, ``"symmetric"``, ``"edge"``
            (alias ``"replicate"``) or ``"wrap"`` (alias ``"circular"``).
        value: the fill value of constant mode.
    """
    if mode not in _PAD_MODES:
        raise op_error("pad", f"unknown mode {mode!r}; use one of {sorted(_PAD_MODES)}")
    w = np.asarray(pad_width, dtype=np.int64)
    # One pair per axis, or a single n / (before, after) for every axis (NumPy). Fewer pairs
    # than axes is refused rather than broadcast: PyTorch's F.pad would pad only the trailing
    # axes, so either reading would silently surprise someone.
    if w.ndim == 2 and w.shape[0] != x.ndim and not (w.shape[0] == 1 and x.ndim <= 1):
        raise op_error("pad", f"pad_width {pad_width!r} has {w.shape[0]} (before, after) pairs "
                       f"for a {x.ndim}-D tensor; give one pair per axis, e.g. "
                       f"{((0, 0),) * (x.ndim - 1) + ((1, 1),)} to pad only the last axis",
                       shape=x.shape)
    try:
        widths = np.broadcast_to(w, (x.ndim, 2))
    except ValueError:
        raise op_error("pad", f"pad_width {pad_width!r} does not fit a {x.ndim}-D tensor; "
                       "give n, (before, after) or one pair per axis") from None
    if (widths < 0).any():
        raise op_error("pad", f"negative pad widths {pad_width!r}")
    widths = tuple((int(b), int(a)) for b, a in widths)
    mode = _PAD_MODES[mode]
    if mode == "constant":
        return Pad.apply(x, widths=widths, value=value)
    # Other modes are gathers along each padded axis, so their gradient is a scatter-add.
    for axis, (b, a) in enumerate(widths):
        if b or a:
            if x.shape[axis] == 0:
                raise op_error("pad", f"mode {mode!r} cannot pad the empty axis {axis} (there "
                               "is nothing to reflect or repeat); use mode='constant'",
                               shape=x.shape)
            idx = np.pad(np.arange(x.shape[axis]), (b, a), mode=mode)
            x = index_select(x, axis, idx)
    return x


class Repeat(Function):
    name = "repeat"

    def forward(self, x, repeats, axis):
        self.repeats, self.axis, self.in_shape = repeats, axis, x.shape
        return get_array_module(x).repeat(x, repeats, axis=axis)

    def backward(self, gy):
        a, s = self.axis, self.in_shape
        return gy.reshape(s[:a] + (s[a], self.repeats) + s[a + 1:]).sum(a + 1)


def repeat(x: Tensor, repeats, axis=None) -> Tensor:
    """Repeat each element ``repeats`` times (an int or one count per element) along ``axis``;
    the flattened tensor when ``axis`` is None (NumPy semantics)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = normalize_axis(axis, x.ndim, "repeat")
    if isinstance(repeats, (int, np.integer)):
        if repeats < 0:
            raise op_error("repeat", f"repeats must be non-negative, got {repeats}",
                           shape=x.shape)
        return Repeat.apply(x, repeats=int(repeats), axis=axis)
    counts = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
    if counts.shape != (x.shape[axis],):
        raise op_error("repeat", f"need one count per element of axis {axis}",
                       shape=x.shape, repeats=counts.shape)
    if (counts < 0).any():
        raise op_error("repeat", f"repeats must be non-negative, got {counts.min()}",
                       shape=x.shape)
    return index_select(x, axis, np.repeat(np.arange(x.shape[axis]), counts))


class Tile(Function):
    name = "tile"

    def forward(self, x, reps):
        self.in_shape = x.shape
        d = max(len(reps), x.ndim)
        self.reps = (1,) * (d - len(reps)) + reps
        self.full = (1,) * (d - x.ndim) + x.shape
        return get_array_module(x).tile(x, reps)

    def backward(self, gy):
        inter = tuple(v for r, s in zip(self.reps, self.full) for v in (r, s))
        g = gy.reshape(inter).sum(tuple(range(0, len(inter), 2)))
        return g.reshape(self.in_shape)


def tile(x: Tensor, reps) -> Tensor:
    """Repeat the whole tensor ``reps`` times per axis (NumPy semantics)."""
    reps = (reps,) if isinstance(reps, int) else tuple(int(r) for r in reps)
    if any(r < 0 for r in reps):
        raise op_error("tile", f"reps must be non-negative, got {reps}", shape=x.shape)
    return Tile.apply(x, reps=reps)


# --------------------------------------------------------------------------- gather / scatter
def _index_array(index, x, op, *others):
    xp = get_array_module(x._data)
    needed = grad_enabled.get() and any(t.requires_grad for t in (x, *others)
                                        if isinstance(t, Tensor))
    idx = owned_for_backward(index, needed) if isinstance(index, Tensor) else xp.asarray(index)
    if idx.dtype.kind not in "iu":
        raise op_error(op, f"index must be integer, got {idx.dtype}")
    return idx


def _check_along(op, x_shape, idx, axis, src_shape=None):
    if idx.ndim != len(x_shape):
        raise op_error(op, "index must have the same number of dimensions as the input",
                       input_shape=x_shape, index_shape=idx.shape)
    if src_shape is not None and len(src_shape) != idx.ndim:
        raise op_error(op, "index must have the same number of dimensions as src",
                       index_shape=idx.shape, src_shape=src_shape)
    for d, n in enumerate(idx.shape):
        if d != axis and n > x_shape[d]:
            raise op_error(op, f"index is larger than the input on axis {d}",
                           input_shape=x_shape, index_shape=idx.shape)
        if src_shape is not None and n > src_shape[d]:
            raise op_error(op, f"index is larger than src on axis {d}",
                           index_shape=idx.shape, src_shape=src_shape)


class Gather(Function):
    name = "gather"

    def forward(self, x, idx, axis):
        xp = get_array_module(x)
        self.axis, self.in_shape = axis, x.shape
        idx, bad = check_index_range(xp, idx, x.shape[axis], self.name)
        part = x[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(idx.shape))]
        self.idx = idx
        return poison(xp, xp.take_along_axis(part, idx, axis=axis), bad)

    def backward(self, gy):
        return GatherBackward.apply(gy, const(self.idx), axis=self.axis,
                                    shape=self.in_shape), None


class GatherBackward(Function):
    name = "gather_backward"

    def forward(self, g, idx, axis, shape):
        self.axis = axis
        xp = get_array_module(g)
        lin = along_axis_linear_index(xp, idx, axis, shape)
        size = int(np.prod(shape, dtype=np.int64))
        return scatter_add_flat(xp, size, lin, g, g.dtype).reshape(shape)

    def backward(self, gg):
        return Gather.apply(gg, self.inputs[1], axis=self.axis), None


def gather(x: Tensor, axis: int, index) -> Tensor:
    """``torch.gather``: ``out[i][j] = x[index[i][j]][j]`` for ``axis=0`` (and so on).

    ``index`` has ``x``'s number of dimensions and may be smaller than ``x`` on the other axes;
    the output has ``index``'s shape. A 0-d ``x`` takes a 0-d (or one-element) index of 0,
    as in PyTorch.
    """
    if x.ndim == 0:
        idx = index if isinstance(index, Tensor) else const(_index_array(index, x, "gather"))
        if idx.ndim > 1 or idx.size != 1:
            raise op_error("gather", "a 0-d input takes a 0-d or one-element index",
                           index_shape=idx.shape)
        return gather(x.reshape((1,)), 0, idx.reshape((1,))).reshape(idx.shape)
    axis = normalize_axis(axis, x.ndim, "gather")
    idx = _index_array(index, x, "gather")
    _check_along("gather", x.shape, idx, axis)
    return Gather.apply(x, const(idx), axis=axis)


class IndexSelect(Function):
    name = "index_select"

    def forward(self, x, idx, axis):
        xp = get_array_module(x)
        self.axis, self.n = axis, x.shape[axis]
        self.idx, bad = check_index_range(xp, idx, x.shape[axis], self.name)
        out = xp.take(x, self.idx, axis=axis)
        if bad is not None:  # the mask along the selected axis
            bad = bad.reshape((-1,) + (1,) * (x.ndim - axis - 1))
        return poison(xp, out, bad)

    def backward(self, gy):
        return IndexSelectBackward.apply(gy, const(self.idx), axis=self.axis, n=self.n), None


class IndexSelectBackward(Function):
    name = "index_select_backward"

    def forward(self, g, idx, axis, n):
        self.axis = axis
        xp = get_array_module(g)
        front = xp.moveaxis(g, axis, 0)
        out = scatter_add_rows(xp, n, idx, front, g.dtype)
        return xp.moveaxis(out, 0, axis)

    def backward(self, gg):
        return IndexSelect.apply(gg, self.inputs[1], axis=self.axis), None


def index_select(x: Tensor, axis: int, index) -> Tensor:
    """Pick entries ``index`` (1-D or 0-d integers, may repeat) along ``axis``; as in PyTorch a
    0-d ``x`` is a vector of one entry, and ``index`` must then hold one value."""
    axis = normalize_axis(axis, x.ndim, "index_select")
    idx = _index_array(index, x, "index_select")
    if idx.ndim > 1:
        raise op_error("index_select", "index must be 1-D or 0-d", index_shape=idx.shape)
    if x.ndim == 0:
        if idx.size != 1:
            raise op_error("index_select", "a 0-d input takes exactly one index",
                           index_shape=idx.shape)
        return IndexSelect.apply(x.reshape((1,)), const(idx.reshape(1)), axis=0).reshape(())
    return IndexSelect.apply(x, const(idx.reshape(-1)), axis=axis)


class ScatterAdd(Function):
    name = "scatter_add"

    def forward(self, x, idx, src, axis):
        xp = get_array_module(x)
        self.axis, self.src_shape = axis, src.shape
        idx, bad = check_index_range(xp, idx, x.shape[axis], self.name)
        self.idx = idx
        part = src[tuple(slice(0, n) for n in idx.shape)]
        lin = along_axis_linear_index(xp, idx, axis, x.shape)
        delta = scatter_add_flat(xp, x.size, lin, part, x.dtype).reshape(x.shape)
        # an out-of-range index (GPU, no host check) was clipped: its value went to the wrong
        # element, so the whole result is NaN rather than silently wrong
        return poison(xp, x + delta, None if bad is None else bad.any())

    def backward(self, gy):
        nx, _, nsrc = self.needs_input_grad
        gsrc = None
        if nsrc:
            gsrc = Gather.apply(gy, const(self.idx), axis=self.axis)
            if gsrc.shape != self.src_shape:
                gsrc = pad(gsrc, [(0, s - n) for s, n in zip(self.src_shape, gsrc.shape)])
        return (gy if nx else None), None, gsrc


def scatter_add(x: Tensor, axis: int, index, src: Tensor) -> Tensor:
    """Out-of-place ``torch.Tensor.scatter_add_``: ``out[index[i][j]][j] += src[i][j]`` for
    ``axis=0``; repeated indices accumulate. ``index`` may be smaller than ``src``."""
    axis = normalize_axis(axis, x.ndim, "scatter_add")
    idx = _index_array(index, x, "scatter_add", src)
    _check_along("scatter_add", x.shape, idx, axis, src.shape)
    return ScatterAdd.apply(x, const(idx), src, axis=axis)


class OneHot(Function):
    name = "one_hot"

    def forward(self, labels, num_classes):
        xp = get_array_module(labels)
        return (labels[..., None] == xp.arange(num_classes)).astype(int64)  # PyTorch: int64

    def backward(self, gy):
        return None


def one_hot(labels, num_classes: int | None = None) -> Tensor:
    """int64 one-hot encoding of integer ``labels`` (shape ``labels.shape + (num_classes,)``),
    as PyTorch's; cast it (``.astype("float32")``) to use it as soft targets.

    ``num_classes`` defaults to ``labels.max() + 1`` (None, or PyTorch's -1). Not
    differentiable.
    """
    lab = labels._data if isinstance(labels, Tensor) else np.asarray(labels)
    if lab.dtype.kind not in "iu":
        raise op_error("one_hot", f"labels must be integers, got {lab.dtype}")
    hi = int(lab.max()) if lab.size else -1
    lo = int(lab.min()) if lab.size else 0
    if num_classes is None or num_classes == -1:  # PyTorch's default is -1: infer it
        num_classes = hi + 1
    if lo < 0 or hi >= num_classes:
        raise op_error("one_hot", f"labels in [{lo}, {hi}] do not fit num_classes={num_classes}")
    return OneHot.apply(const(lab), num_classes=num_classes)


# --------------------------------------------------------------------------- flip / roll
class Flip(Function):
    name = "flip"

    def forward(self, x, axes):
        self.axes = axes
        return get_array_module(x).flip(x, axes).copy()  # a copy, as torch.flip

    def backward(self, gy):
        return Flip.apply(gy, axes=self.axes)


class Roll(Function):
    name = "roll"

    def forward(self, x, shifts, axes):
        self.shifts, self.axes = shifts, axes
        return get_array_module(x).roll(x, shifts, axes)

    def backward(self, gy):
        back = -self.shifts if isinstance(self.shifts, int) else tuple(-s for s in self.shifts)
        return Roll.apply(gy, shifts=back, axes=self.axes)


def flip(x: Tensor, axis=None) -> Tensor:
    """``x`` with the order of the entries along ``axis`` (an int or a tuple; None: every axis)
    reversed (``torch.flip(x, dims)``; a copy, not a view)."""
    if axis is None:
        axes = tuple(range(x.ndim))
    else:
        axes = normalize_axes(axis, x.ndim, "flip")
    # a 0-d tensor accepts axis 0 (one entry: nothing to reverse)
    return Flip.apply(x, axes=axes if x.ndim else ())


def roll(x: Tensor, shifts, axis=None) -> Tensor:
    """Shift the entries of ``x`` cyclically by ``shifts`` along ``axis`` (``torch.roll``):
    ints, or tuples of equal length; ``axis=None`` rolls the flattened tensor and restores the
    shape."""
    if x.ndim == 0:  # as PyTorch (NumPy would return the one entry)
        raise DimensionOutOfRange("roll: a 0-d tensor has no dimension to roll -- Dimension "
                                  "out of range; reshape it to 1-D first")
    if axis is None:
        if not isinstance(shifts, int):
            shifts = tuple(shifts)
            if len(shifts) != 1:
                raise op_error("roll", "without axis, shifts must be one int", shifts=shifts)
            shifts = shifts[0]
        return Roll.apply(x, shifts=int(shifts), axes=None)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shifts_t = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if len(shifts_t) != len(axes):
        raise op_error("roll", "shifts and axis must have the same length",
                       shifts=shifts, axis=axis)
    axes = tuple(check_axis(a, x.ndim, "roll") for a in axes)
    return Roll.apply(x, shifts=tuple(int(s) for s in shifts_t), axes=axes)


# --------------------------------------------------------------------------- take_along_axis
class TakeAlongAxis(Gather):
    name = "take_along_axis"


def take_along_axis(x: Tensor, indices, axis=None) -> Tensor:
    """``out[..., i, ...] = x[..., indices[..., i, ...], ...]`` along ``axis`` (NumPy's
    ``take_along_axis``, ``torch.take_along_dim``).

    ``indices`` has ``x``'s number of dimensions; the other axes broadcast against ``x``'s. With
    ``axis=None`` both are flattened first. The gradient scatters back (repeats accumulate).
    """
    idx = _index_array(indices, x, "take_along_axis")
    if axis is None:
        x, idx, axis = reshape(x, (-1,)), idx.reshape(-1), 0
    if idx.ndim != x.ndim:
        raise op_error("take_along_axis", "indices must have the same number of dimensions "
                       "as the input", input_shape=x.shape, indices_shape=idx.shape)
    if x.ndim == 0:
        return take_along_axis(reshape(x, (1,)), idx.reshape(1), 0).reshape(())
    axis = normalize_axis(axis, x.ndim, "take_along_axis")
    others = [(s, t) for d, (s, t) in enumerate(zip(x.shape, idx.shape)) if d != axis]
    common = broadcast_shape("take_along_axis", tuple(s for s, _ in others),
                             tuple(t for _, t in others))
    common = list(common)
    x_shape = tuple(common[:axis] + [x.shape[axis]] + common[axis:])
    i_shape = tuple(common[:axis] + [idx.shape[axis]] + common[axis:])
    if x_shape != x.shape:
        x = broadcast_to(x, x_shape)
    if i_shape != idx.shape:
        idx = get_array_module(idx).broadcast_to(idx, i_shape)
    return TakeAlongAxis.apply(x, const(idx), axis=axis)


# --------------------------------------------------------------------------- index_add
class IndexAdd(Function):
    name = "index_add"

    def forward(self, x, idx, src, axis, alpha):
        if x.dtype != src.dtype:  # after autocast's casts (a promote row): PyTorch's rule
            raise op_error("index_add", "input and source must have the same dtype; cast one",
                           input_dtype=x.dtype, source_dtype=src.dtype)
        xp = get_array_module(x)
        self.axis, self.alpha = axis, alpha
        idx, bad = check_index_range(xp, idx, x.shape[axis], self.name, allow_negative=False)
        self.idx = idx
        rows = xp.moveaxis(src, axis, 0)
        if alpha != 1:
            rows = rows * x.dtype.type(alpha)
        delta = scatter_add_rows(xp, x.shape[axis], idx, rows, x.dtype)
        if x.dtype.kind == "b":
            return poison(xp, x | xp.moveaxis(delta, 0, axis), None)
        return poison(xp, x + xp.moveaxis(delta, 0, axis), None if bad is None else bad.any())

    def backward(self, gy):
        nx, _, nsrc = self.needs_input_grad
        gsrc = None
        if nsrc:
            gsrc = IndexSelect.apply(gy, const(self.idx), axis=self.axis)
            if self.alpha != 1:
                gsrc = gsrc * self.alpha
        return (gy if nx else None), None, gsrc


def index_add(x: Tensor, axis: int, index, source: Tensor, *, alpha=1) -> Tensor:
    """Out-of-place ``torch.Tensor.index_add_``: ``out = x`` with ``alpha * source[i]`` added
    to entry ``index[i]`` along ``axis`` (repeated indices accumulate).

    ``index`` is 1-D (or 0-d) with one entry per slice of ``source`` along ``axis``; ``source``
    has ``x``'s shape elsewhere and ``x``'s dtype. The gradient of ``x`` passes through; that
    of ``source`` is ``alpha`` times the gathered output gradient.
    """
    if x.ndim == 0:
        check_axis(axis, 0, "index_add")
        return index_add(x.reshape((1,)), 0, index, source.reshape((-1,)),
                         alpha=alpha).reshape(())
    axis = normalize_axis(axis, x.ndim, "index_add")
    idx = _index_array(index, x, "index_add", source)
    if idx.ndim > 1:
        raise op_error("index_add", "index must be 1-D or 0-d", index_shape=idx.shape)
    idx = idx.reshape(-1)
    want = x.shape[:axis] + (idx.size,) + x.shape[axis + 1:]
    if tuple(source.shape) != want:
        raise op_error("index_add", "source must have x's shape with len(index) entries along "
                       "axis", x_shape=x.shape, index_shape=idx.shape, source_shape=source.shape,
                       expected=want)
    if x.dtype.kind in "biu" and float(alpha) != int(alpha):
        raise op_error("index_add", "a fractional alpha cannot scale an integer tensor; cast "
                       "it to a float dtype first", alpha=alpha, dtype=x.dtype)
    return IndexAdd.apply(x, const(idx), source, axis=axis, alpha=alpha)


# --------------------------------------------------------------------------- pixel_shuffle
class PixelShuffleFunction(Function):
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``; with ``inverse`` the adjoint rearrangement
    (PyTorch's pixel_unshuffle), which is also its backward."""

    name = "pixel_shuffle"

    def forward(self, x, factor, inverse=False):
        self.factor, self.inverse = factor, inverse
        r, k = factor, x.ndim - 3
        lead, (c, h, w) = x.shape[:k], x.shape[k:]
        xp = get_array_module(x)
        ax = tuple(range(k))
        if not inverse:
            y = x.reshape(lead + (c // (r * r), r, r, h, w))
            y = xp.transpose(y, ax + (k, k + 3, k + 1, k + 4, k + 2))
            return y.reshape(lead + (c // (r * r), h * r, w * r))
        y = x.reshape(lead + (c, h // r, r, w // r, r))
        y = xp.transpose(y, ax + (k, k + 2, k + 4, k + 1, k + 3))
        return y.reshape(lead + (c * r * r, h // r, w // r))

    def backward(self, gy):
        return PixelShuffleFunction.apply(gy, factor=self.factor, inverse=not self.inverse)


def pixel_shuffle(x: Tensor, upscale_factor: int) -> Tensor:
    """Rearrange ``(*, C*r*r, H, W)`` into ``(*, C, H*r, W*r)`` with ``r = upscale_factor``
    (``F.pixel_shuffle``, sub-pixel convolution): output pixel ``(c, h*r + i, w*r + j)`` is
    input channel ``c*r*r + i*r + j`` at ``(h, w)``."""
    r = upscale_factor
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise op_error("pixel_shuffle", "upscale_factor must be a positive int",
                       upscale_factor=r)
    if x.ndim < 3 or x.shape[-3] % (r * r):
        raise op_error("pixel_shuffle", "expects (*, C, H, W) input with C divisible by "
                       "upscale_factor**2", shape=x.shape, upscale_factor=r)
    return PixelShuffleFunction.apply(x, factor=r)


class PixelUnshuffleFunction(PixelShuffleFunction):
    name = "pixel_unshuffle"


def pixel_unshuffle(x: Tensor, downscale_factor: int) -> Tensor:
    """Rearrange ``(*, C, H*r, W*r)`` into ``(*, C*r*r, H, W)`` with ``r = downscale_factor``
    (``F.pixel_unshuffle``, the inverse of :func:`pixel_shuffle`)."""
    r = downscale_factor
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise op_error("pixel_unshuffle", "downscale_factor must be a positive int",
                       downscale_factor=r)
    if x.ndim < 3 or x.shape[-1] % r or x.shape[-2] % r:
        raise op_error("pixel_unshuffle", "expects (*, C, H, W) input with H and W divisible "
                       "by downscale_factor", shape=x.shape, downscale_factor=r)
    return PixelUnshuffleFunction.apply(x, factor=r, inverse=True)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """Interleave the ``groups`` channel groups of ``(N, C, *)`` input: ``(N, g, C/g, *)``
    with its two group axes swapped (ShuffleNet). A composite of views."""
    g = groups
    if isinstance(g, bool) or not isinstance(g, int) or g < 1:
        raise op_error("channel_shuffle", "groups must be a positive int", groups=g)
    if input.ndim < 3 or input.shape[1] % g:
        raise op_error("channel_shuffle", "expects (N, C, *) input with C divisible by groups",
                       shape=input.shape, groups=g)
    n, c, rest = input.shape[0], input.shape[1], tuple(input.shape[2:])
    y = swapaxes(reshape(input, (n, g, c // g) + rest), 1, 2)
    return reshape(y, (n, c) + rest)
