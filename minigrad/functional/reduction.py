"""Reductions: sum, mean, var, std, max, min, argmax, argmin, logsumexp, prod, and the norms
(``norm``, ``torch.linalg``'s ``vector_norm`` and ``matrix_norm``). They accumulate in float32 or
wider whatever the input dtype (invariant 3) and return the input's dtype, so a float16 sum of
4096 ones is exactly 4096.

Backward passes are written with ops (double backward works); the piecewise-constant selections
(argmax masks, signs) enter them as constants.
"""

from __future__ import annotations

import builtins
import math
import operator

from .._backend import get_array_module, kernels
from .._backend.dtypes import float32, float64, is_floating
from .._backend.kernels import sum_fp32
from ..core.cast import cast
from ..core.function import Function
from ..core.tensor import Tensor
from ._axes import check_axis, reduction_axes
from ._composite import composite
from ._utils import (acc_dtype, check_floating, const, cpu_wide, fast_backward, normalize_axes,
                     op_error, product_acc_dtype, to_dtype)
from .elementwise import abs as _abs
from .elementwise import pow as _pow
from .elementwise import where as _where
from .transcendental import exp as _exp

__all__ = [
    "argmax",
    "argmin",
    "logsumexp",
    "matrix_norm",
    "max",
    "mean",
    "min",
    "norm",
    "prod",
    "std",
    "sum",
    "var",
    "vector_norm",
]


def _axes(axis, ndim, op="reduction"):
    return reduction_axes(axis, ndim, op)


def _nan_like(xp, out):
    """All-nan array shaped like ``out``: the mean/variance of no elements (PyTorch)."""
    return xp.full(out.shape, math.nan, dtype=out.dtype)


def _count(shape, axes) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _keep(shape, axes):
    """``shape`` with the reduced ``axes`` set to 1 (the keepdims shape)."""
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand_grad(gy: Tensor, shape, axes, keepdims) -> Tensor:
    if not keepdims and axes:
        gy = gy.reshape(_keep(shape, axes))
    return gy.broadcast_to(shape)


def _to_dtype(out, dtype):
    return out if out.dtype == dtype or dtype.kind in "biu" else to_dtype(out, dtype)


class Sum(Function):
    name = "sum"

    def forward(self, x, axis, keepdims):
        self.axes = _axes(axis, x.ndim, "sum")
        self.keepdims = keepdims
        self.in_shape = x.shape
        return _to_dtype(sum_fp32(x, axis=self.axes, keepdims=keepdims), x.dtype)

    def backward(self, gy):
        return _expand_grad(gy, self.in_shape, self.axes, self.keepdims)


class Mean(Function):
    name = "mean"

    def forward(self, x, axis, keepdims):
        self.axes = _axes(axis, x.ndim, "mean")
        self.keepdims = keepdims
        self.in_shape = x.shape
        count = _count(x.shape, self.axes)
        self.count = builtins.max(count, 1)
        out = sum_fp32(x, axis=self.axes, keepdims=keepdims) / self.count
        if count == 0:  # nan, not 0: the mean of nothing is undefined
            out = _nan_like(get_array_module(out), out)
        return to_dtype(out, x.dtype if is_floating(x.dtype) else float32)

    def backward(self, gy):
        return _expand_grad(gy, self.in_shape, self.axes, self.keepdims) / self.count


class Var(Function):
    name = "var"

    def forward(self, x, axis, keepdims, ddof):
        self.axes = _axes(axis, x.ndim, self.name)
        self.keepdims, self.in_shape = keepdims, x.shape
        self.denom = _count(x.shape, self.axes) - ddof
        self.save_for_backward(x)
        z = to_dtype(x, acc_dtype(x.dtype))
        count = builtins.max(_count(x.shape, self.axes), 1)
        d = z - sum_fp32(z, axis=self.axes, keepdims=True) / count
        out = sum_fp32(d * d, axis=self.axes, keepdims=keepdims)
        # N - ddof <= 0 (empty input, or one element with ddof=1): nan, as in PyTorch.
        out = out / self.denom if self.denom > 0 else _nan_like(get_array_module(out), out)
        return to_dtype(out, x.dtype)

    def _centered(self, x):
        return x - mean(x, self.axes, keepdims=True)

    def backward(self, gy):
        (x,) = self.saved_tensors
        g = _expand_grad(gy, self.in_shape, self.axes, self.keepdims)
        return g * self._centered(x) * (2.0 / self.denom if self.denom > 0 else math.nan)


class Std(Var):
    name = "std"

    def forward(self, x, axis, keepdims, ddof):
        # In float64: the squares of float32 values above ~1.8e19 overflow while their std is
        # representable (std of [1e38, 0] is 5e37, as PyTorch gives).
        v = super().forward(to_dtype(x, float64), axis, keepdims, ddof)
        y = to_dtype(get_array_module(x).sqrt(v), x.dtype)
        self.save_for_backward(x, y)
        return y

    def backward(self, gy):
        x, y = self.saved_tensors
        # In float64, as the forward: a float32 mean of values near the largest overflows
        # (x - mean would be -inf where the std, and its gradient, are representable).
        # A zero std (one element, a constant slice) has the subgradient 0, as in PyTorch: not
        # 0/0 = NaN, which would make a GradScaler skip every step.
        # Unrecorded (fast_backward), the casts are made on the arrays: NumPy's float16 <->
        # float64 casts convert element by element (slowest on the subnormals small gradients
        # are); the same values either way.
        fast = fast_backward()

        def f64(t):
            return const(to_dtype(t._data, float64)) if fast else t.astype(float64)

        safe = _where(const(y._data == 0), math.inf, f64(y))
        g = _expand_grad(f64(gy) / safe, self.in_shape, self.axes, self.keepdims)
        gx = g * self._centered(f64(x)) * (
            1.0 / self.denom if self.denom > 0 else math.nan)
        return const(to_dtype(gx._data, x.dtype)) if fast else gx.astype(x.dtype)


def _move_to_end(x, axes):
    """View ``x`` with ``axes`` flattened into one trailing axis (for arg-reductions)."""
    xp = get_array_module(x)
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = xp.transpose(x, rest + list(axes)) if list(axes) != list(range(
        x.ndim - len(axes), x.ndim)) else x
    # The size spelled out: NumPy cannot infer -1 beside a 0 (max over axis 1 of a (0, 4)).
    return moved.reshape(tuple(x.shape[i] for i in rest) + (_count(x.shape, axes),)), rest


def _first_hit_mask(x, axes, idx):
    """Bool mask of ``x``'s shape marking, per reduced slice, the element at flat ``idx``."""
    xp = get_array_module(x)
    rest = [i for i in range(x.ndim) if i not in axes]
    k = _count(x.shape, axes)
    hit = xp.arange(k) == idx[..., None]  # (rest..., k)
    hit = hit.reshape(tuple(x.shape[i] for i in rest) + tuple(x.shape[a] for a in axes))
    order = rest + list(axes)
    inverse = [0] * x.ndim
    for pos, a in enumerate(order):
        inverse[a] = pos
    return xp.transpose(hit, inverse)


class Max(Function):
    name = "max"
    _arg = "argmax"

    def forward(self, x, axis, keepdims, return_indices):
        xp = get_array_module(x)
        self.axes = _axes(axis, x.ndim, self.name)
        if x.size == 0 and _count(x.shape, self.axes) == 0:  # (0, 4) over axis 1 is fine
            raise op_error(self.name, "reduction of an empty tensor has no identity",
                           shape=x.shape)
        self.keepdims, self.in_shape = keepdims, x.shape
        flat, _ = _move_to_end(x, self.axes)
        # float16/bfloat16 on the CPU compared in float32 (exact; the same first maximum)
        idx = getattr(xp, self._arg)(cpu_wide(flat), axis=-1)
        self.idx = idx
        y = xp.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]
        if keepdims:
            y = y.reshape(_keep(x.shape, self.axes))
            idx = idx.reshape(y.shape)
        if return_indices:
            return y, idx.astype("int64", copy=False)
        return y

    def backward(self, gy, *_):
        (x,) = self.inputs
        mask = _first_hit_mask(x._data, self.axes, self.idx)
        g = _expand_grad(gy, self.in_shape, self.axes, self.keepdims)
        if fast_backward():
            # float16/bfloat16 on the CPU in float32 (NumPy's float16 product with a bool mask
            # runs element by element); exact either way
            return const(kernels.binary(operator.mul, g._data, mask))
        return g * const(mask.astype(gy.dtype))


class Min(Max):
    name = "min"
    _arg = "argmin"


class ArgMax(Function):
    name = "argmax"
    _arg = "argmax"

    def forward(self, x, axis, keepdims):
        xp = get_array_module(x)
        if x.size == 0 and (axis is None or x.shape[check_axis(axis, x.ndim, self.name)] == 0):
            raise op_error(self.name, "the index of an extremum over no elements is undefined; "
                           "reduce over a non-empty axis", shape=x.shape, axis=axis)
        if axis is None or x.ndim == 0:
            if axis is not None:
                check_axis(axis, 0, self.name)
            # float16/bfloat16 on the CPU compared in float32 (exact; the same first index)
            idx = getattr(xp, self._arg)(cpu_wide(x).reshape(-1))
            return idx.reshape((1,) * x.ndim) if keepdims else idx
        axis = check_axis(axis, x.ndim, self.name)
        idx = getattr(xp, self._arg)(cpu_wide(x), axis=axis)
        return xp.expand_dims(idx, axis) if keepdims else idx

    def backward(self, gy):
        return None


class ArgMin(ArgMax):
    name = "argmin"
    _arg = "argmin"


class LogSumExp(Function):
    name = "logsumexp"

    def forward(self, x, axis, keepdims):
        xp = get_array_module(x)
        self.axes = _axes(axis, x.ndim, "logsumexp")
        self.keepdims, self.in_shape = keepdims, x.shape
        z = to_dtype(x, acc_dtype(x.dtype))
        if _count(x.shape, self.axes):
            m = xp.max(z, axis=self.axes, keepdims=True)
            m = xp.where(xp.isfinite(m), m, 0)  # all -inf, inf or nan slices: no shift
        else:  # empty slices: the sum of no exps is 0, so the result is -inf (PyTorch)
            m = xp.zeros(_keep(x.shape, self.axes), dtype=z.dtype)
        s = xp.sum(xp.exp(z - m), axis=self.axes, keepdims=True)
        # An all -inf (or empty) slice sums to 0: its result is -inf, without a log(0)
        # warning. A nan anywhere makes s nan, and the result stays nan.
        none = s == 0
        y = xp.log(xp.where(none, 1, s)) + xp.where(none, -math.inf, m)
        if not keepdims:
            y = y.reshape(tuple(n for i, n in enumerate(x.shape) if i not in self.axes))
        y = to_dtype(y, x.dtype)
        self.save_for_backward(x, y)
        return y

    def backward(self, gy):
        x, y = self.saved_tensors
        g = _expand_grad(gy, self.in_shape, self.axes, self.keepdims)
        ye = _expand_grad(y, self.in_shape, self.axes, self.keepdims)
        return g * _exp(x - ye)


class Prod(Function):
    name = "prod"

    def forward(self, x, axis, keepdims):
        xp = get_array_module(x)
        self.axes = _axes(axis, x.ndim, "prod")
        self.keepdims, self.in_shape = keepdims, x.shape
        # CPU float16/bfloat16 widened first by the vectorised cast: prod's dtype=float32 casts
        # element by element in its buffered loop. A C- or F-ordered array keeps its layout
        # through cpu_wide, so NumPy's iterator multiplies each product's factors in the same
        # order (bit-identical; tests/test_lowp_slow_paths.py); other strides would be copied
        # to C order, which can reorder the factors, so they keep the casting reduction.
        xin = cpu_wide(x) if x.flags.c_contiguous or x.flags.f_contiguous else x
        y = _to_dtype(xp.prod(xin, axis=self.axes, keepdims=keepdims,
                              dtype=product_acc_dtype(x.dtype)), x.dtype)
        self.save_for_backward(x, y)
        return y

    def backward(self, gy):
        x, y = self.saved_tensors
        g = _expand_grad(gy, self.in_shape, self.axes, self.keepdims)
        if _count(self.in_shape, self.axes) == 1:
            return g  # a product of one element is that element (y / x is NaN at inf, NaN)
        xp = get_array_module(x._data)
        # (CPU float16/bfloat16 compared in float32: the same bools, without NumPy's
        # element-by-element float16 comparison)
        if not bool(xp.any(cpu_wide(x._data) == 0)):
            return g * _expand_grad(y, self.in_shape, self.axes, self.keepdims) / x
        if not fast_backward():
            raise RuntimeError("prod: double backward through a product containing zeros is "
                               "not supported; perturb the zeros or avoid create_graph=True")
        return g * const(self._others(x._data))

    def _others(self, x):
        """Product of every other element of each slice, exact with zeros (prefix * suffix)."""
        xp = get_array_module(x)
        flat, rest = _move_to_end(x, self.axes)
        z = to_dtype(flat, acc_dtype(x.dtype))
        ones = xp.ones(z.shape[:-1] + (1,), dtype=z.dtype)
        before = xp.cumprod(xp.concatenate([ones, z[..., :-1]], axis=-1), axis=-1)
        after = xp.flip(xp.cumprod(xp.flip(xp.concatenate([z[..., 1:], ones], axis=-1), -1),
                                   axis=-1), -1)
        return to_dtype(_unflatten(before * after, x.shape, self.axes, rest), x.dtype)


def _unflatten(flat, shape, axes, rest):
    """Inverse of :func:`_move_to_end`."""
    xp = get_array_module(flat)
    full = flat.reshape(tuple(shape[i] for i in rest) + tuple(shape[a] for a in axes))
    inverse = [0] * len(shape)
    for pos, a in enumerate(list(rest) + list(axes)):
        inverse[a] = pos
    return xp.transpose(full, inverse)


class Norm(Function):
    name = "norm"

    def forward(self, x, ord, axis, keepdims):
        xp = get_array_module(x)
        self.axes = _axes(axis, x.ndim, "norm")
        self.keepdims, self.in_shape, self.ord = keepdims, x.shape, ord
        z = xp.abs(to_dtype(x, acc_dtype(x.dtype)))
        if ord == math.inf:
            if _count(x.shape, self.axes) == 0:
                raise op_error("norm", "the inf-norm over no elements is undefined",
                               shape=x.shape)
            flat, _ = _move_to_end(z, self.axes)
            self.idx = xp.argmax(flat, axis=-1)
            y = xp.max(z, axis=self.axes, keepdims=keepdims)
        elif ord == 1 or _count(x.shape, self.axes) == 1:
            # one element: its magnitude, as PyTorch's (its square over- or underflows)
            y = xp.sum(z, axis=self.axes, keepdims=keepdims)
        elif ord == 2:
            y = xp.sqrt(xp.sum(z * z, axis=self.axes, keepdims=keepdims))
        else:
            y = xp.sum(z ** ord, axis=self.axes, keepdims=keepdims) ** (1.0 / ord)
        y = to_dtype(y, x.dtype)
        self.save_for_backward(x, y)
        return y

    def backward(self, gy):
        x, y = self.saved_tensors
        xp = get_array_module(x._data)
        g = _expand_grad(gy, self.in_shape, self.axes, self.keepdims)
        # through the low-precision policy, as Sign.forward: bfloat16's own sign of -0 is -0 (a
        # -0 gradient where PyTorch's is +0), and float16's runs element by element
        sgn_data = kernels.unary(xp.sign, x._data)
        sgn = const(sgn_data)
        if self.ord == 1:
            return g * sgn
        if self.ord == math.inf:
            mask = _first_hit_mask(x._data, self.axes, self.idx)
            return g * const(kernels.binary(operator.mul, sgn_data, mask).astype(gy.dtype))
        ye = _expand_grad(y, self.in_shape, self.axes, self.keepdims)
        # At y == 0 every x is 0: use the subgradient 0 rather than 0/0 = nan (a NaN norm
        # keeps its NaN gradient, as PyTorch's). x / y is at most 1 in magnitude: dividing
        # first neither overflows (g / y) nor underflows (g * x).
        safe = _where(const(ye._data == 0), 1.0, ye)
        if self.ord == 2:
            return g * (x / safe)
        p = self.ord
        r = _abs(x) / safe
        if p < 1:  # r^(p-1) is inf at x == 0, where sgn is 0: the subgradient there is 0
            r = _where(const(x._data == 0), 1.0, r)
        return g * sgn * _pow(r, p - 1)


def sum(x: Tensor, axis=None, keepdims: bool = False) -> Tensor:
    """Sum over ``axis`` (int, tuple, or None for all), accumulated in float32."""
    return Sum.apply(x, axis=axis, keepdims=keepdims)


def mean(x: Tensor, axis=None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (all axes when None), accumulated in float32."""
    return Mean.apply(x, axis=axis, keepdims=keepdims)


def var(x: Tensor, axis=None, keepdims: bool = False, ddof: int = 0) -> Tensor:
    """Variance over ``axis``, divided by ``N - ddof`` (two-pass, in float32 or wider).

    ``N`` by default, as MegEngine's ``F.var`` and NumPy; PyTorch's ``torch.var`` /
    ``Tensor.var`` (:func:`torch_var`) divide by ``N - 1``."""
    check_floating("var", x)  # PyTorch refuses integers too: no truncated integer variance
    return Var.apply(x, axis=axis, keepdims=keepdims, ddof=ddof)


def std(x: Tensor, axis=None, keepdims: bool = False, ddof: int = 0) -> Tensor:
    """Standard deviation ``sqrt(var(x, axis, keepdims, ddof))``: ``ddof=0`` by default, as
    MegEngine's ``F.std``; ``Tensor.std`` (:func:`torch_std`) is PyTorch's, ``N - 1``."""
    check_floating("std", x)
    return Std.apply(x, axis=axis, keepdims=keepdims, ddof=ddof)


def _correction(op, unbiased, correction, ddof) -> int:
    given = [(n, v) for n, v in (("unbiased", unbiased), ("correction", correction),
                                  ("ddof", ddof)) if v is not None]
    if len(given) > 1:
        raise TypeError(f"{op}: got {' and '.join(n for n, _ in given)}; they are one argument "
                        "(unbiased=True is correction=1, unbiased=False correction=0): pass one")
    if not given:
        return 1  # PyTorch's and OneFlow's default: Bessel's correction, N - 1
    name, v = given[0]
    return (1 if v else 0) if name == "unbiased" else v


def _torch_spread(op, fn, x, dim, unbiased, keepdim, correction, axis, keepdims, ddof):
    if isinstance(dim, bool):  # torch.var(input, unbiased): the old overload
        if unbiased is not None:
            raise TypeError(f"{op}: unbiased given twice")
        dim, unbiased = None, dim
    if dim is not None and axis is not None:
        raise TypeError(f"{op}: got both dim={dim!r} and axis={axis!r}; pass one")
    if keepdim is not None and keepdims is not None:
        raise TypeError(f"{op}: got both keepdim and keepdims; pass one")
    dim = axis if dim is None else dim
    keep = bool(keepdims if keepdim is None else keepdim)
    return fn(x, dim, keep, ddof=_correction(op, unbiased, correction, ddof))


def torch_var(input: Tensor, dim=None, unbiased=None, keepdim=None, *,  # noqa: A002
              correction=None, axis=None, keepdims=None, ddof=None) -> Tensor:
    """``torch.var`` / ``Tensor.var``: divides by ``N - correction``, Bessel's ``N - 1`` by
    default (``unbiased=False`` or ``correction=0`` divide by ``N``). ``F.var`` is MegEngine's
    and divides by ``N``."""
    return _torch_spread("var", var, input, dim, unbiased, keepdim, correction, axis,
                         keepdims, ddof)


def torch_std(input: Tensor, dim=None, unbiased=None, keepdim=None, *,  # noqa: A002
              correction=None, axis=None, keepdims=None, ddof=None) -> Tensor:
    """``torch.std`` / ``Tensor.std``: ``sqrt`` of :func:`torch_var` (``N - 1`` by default)."""
    return _torch_spread("std", std, input, dim, unbiased, keepdim, correction, axis,
                         keepdims, ddof)


def max(x: Tensor, axis=None, keepdims: bool = False, return_indices: bool = False):
    """Maximum over ``axis``; the gradient goes to the first maximal element of each slice.

    Args:
        x: input.
        axis: int, tuple of ints, or None (all axes).
        keepdims: keep reduced axes as size 1.
        return_indices: also return the int64 position of the maximum (flat within the reduced
            axes when several are reduced).

    Returns:
        ``values`` or ``(values, indices)``.
    """
    return Max.apply(x, axis=axis, keepdims=keepdims, return_indices=return_indices)


def min(x: Tensor, axis=None, keepdims: bool = False, return_indices: bool = False):
    """Minimum over ``axis``; like :func:`max`."""
    return Min.apply(x, axis=axis, keepdims=keepdims, return_indices=return_indices)


def argmax(x: Tensor, axis=None, keepdims: bool = False) -> Tensor:
    """Index (int64) of the first maximum along ``axis`` (of the flattened tensor for None)."""
    return ArgMax.apply(x, axis=axis, keepdims=keepdims)


def argmin(x: Tensor, axis=None, keepdims: bool = False) -> Tensor:
    """Index (int64) of the first minimum along ``axis``."""
    return ArgMin.apply(x, axis=axis, keepdims=keepdims)


def logsumexp(x: Tensor, axis=None, keepdims: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, max-shifted and accumulated in float32; integer and
    bool input is computed in float32 (PyTorch's default float), never truncated."""
    if not is_floating(x.dtype):
        x = cast(x, float32)
    return LogSumExp.apply(x, axis=axis, keepdims=keepdims)


def prod(x: Tensor, axis=None, keepdims: bool = False) -> Tensor:
    """Product over ``axis`` (float32 accumulation); the gradient is exact with zeros."""
    return Prod.apply(x, axis=axis, keepdims=keepdims)


def norm(x: Tensor, ord=2, axis=None, keepdims: bool = False) -> Tensor:
    """Vector norm of the elements over ``axis`` (all elements for None), in float32 or wider.

    Args:
        x: input.
        ord: 1, 2 (default), ``math.inf``/``"inf"``, ``"fro"`` (same as 2 over the axes), or
            any other positive number p for ``(sum |x|^p)^(1/p)``. Matrix-induced norms are not
            offered: this is always the elementwise norm.
        axis: int, tuple, or None.
        keepdims: keep reduced axes as size 1.

    The gradient of the 2-norm at 0 is 0 (a subgradient), never NaN.
    """
    if ord == "fro" or ord is None:
        ord = 2
    elif ord in ("inf", float("inf")):
        ord = math.inf
    if not isinstance(ord, (int, float)) or ord <= 0:
        raise op_error("norm", f"unsupported ord {ord!r}; use 1, 2, inf, 'fro' or p > 0")
    check_floating("norm", x)
    return Norm.apply(x, ord=ord, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------- torch.linalg norms
# float32 rows of the AMP policy (AMP_REFERENCE section 1), as norm: a sum of squares overflows
# float16 for modest values.
def norm_order(op, p):
    """``p`` of a p-norm (``torch.linalg`` spelling): a positive number, or inf (``"inf"``)."""
    if p in ("inf", float("inf")):
        return math.inf
    if not isinstance(p, (int, float)) or isinstance(p, bool) or p <= 0:
        raise op_error(op, f"p must be a positive number or inf, got {p!r} (p = 0, which "
                       "counts non-zeros, has no gradient and is not offered)")
    return p


class VectorNorm(Norm):
    name = "vector_norm"


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, axis=None,
                keepdims=None) -> Tensor:
    """``torch.linalg.vector_norm``: the p-norm of the elements over ``dim`` (all for None).

    ``ord``: p > 0 or inf. ``axis``/``keepdims`` are accepted as synonyms.
    """
    check_floating("vector_norm", x)
    ord = norm_order("vector_norm", ord)
    dim = axis if dim is None else dim
    keep = keepdim if keepdims is None else keepdims
    return VectorNorm.apply(x, ord=ord, axis=dim, keepdims=bool(keep))


def _matrix_norm_impl(a, ord, axes, keepdim):
    r, c = axes
    if ord == "fro":
        return norm(a, ord=2, axis=axes, keepdims=keepdim)
    # Induced 1/inf norms: largest (or smallest, for -1/-inf) absolute column/row sum.
    sum_axis, pick_axis = (r, c) if abs(ord) == 1 else (c, r)
    s = a.abs().sum(axis=sum_axis, keepdims=True)
    s = max(s, pick_axis, keepdims=True) if ord > 0 else min(s, pick_axis, keepdims=True)
    return s if keepdim else s.squeeze(axis=axes)


_MatrixNorm = composite("matrix_norm", _matrix_norm_impl)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False) -> Tensor:
    """``torch.linalg.matrix_norm`` over the two axes ``dim``.

    ``ord``: ``"fro"``, 1, -1, ``inf``, ``-inf``. The spectral and nuclear norms (2, -2,
    ``"nuc"``) need an SVD, which minigrad does not have: they raise.
    """
    check_floating("matrix_norm", A)
    if ord in ("inf", float("inf")):
        ord = math.inf
    elif ord in ("-inf", float("-inf")):
        ord = -math.inf
    if ord not in ("fro", 1, -1, math.inf, -math.inf):
        raise op_error("matrix_norm", f"ord={ord!r} is not supported (no SVD in minigrad); "
                       "use 'fro', 1, -1, inf or -inf")
    if A.ndim < 2:
        raise op_error("matrix_norm", "expected at least a 2-D input", input=A.shape)
    if len(normalize_axes(dim, A.ndim, "matrix_norm")) != 2:
        raise op_error("matrix_norm", "dim must name two distinct axes", dim=dim)
    axes = tuple(d % A.ndim for d in dim)  # the (rows, cols) order the caller gave
    return _MatrixNorm.apply(A, kw={"ord": ord, "axes": axes, "keepdim": bool(keepdim)})
