"""Distances and norms: cdist, pdist, dist, renorm, vector_norm, matrix_norm.

All are float32 rows of the AMP policy (AMP_REFERENCE section 1): a distance is a reduction of
squared differences, which overflows float16 for modest values. They are composites of
``norm`` (float32 accumulation, subgradient 0 at zero distance) and shape ops.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.tensor import Tensor
from ._composite import composite
from ._utils import check_floating, const, normalize_axes, normalize_axis, op_error
from .reduction import Norm, norm

__all__ = ["cdist", "dist", "matrix_norm", "pdist", "renorm", "vector_norm"]


def _ord(op, p):
    if p in ("inf", float("inf")):
        return math.inf
    if not isinstance(p, (int, float)) or isinstance(p, bool) or p <= 0:
        raise op_error(op, f"p must be a positive number or inf, got {p!r} (p = 0, which "
                       "counts non-zeros, has no gradient and is not offered)")
    return p


def _cdist_impl(x1, x2, p):
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    return norm(diff, ord=p, axis=-1)


_CDist = composite("cdist", _cdist_impl)


def cdist(x1: Tensor, x2: Tensor, p=2.0, compute_mode=None) -> Tensor:
    """Pairwise p-norm distances between the rows of ``x1 (..., P, M)`` and ``x2 (..., R, M)``.

    Returns ``(..., P, R)``. ``compute_mode`` is accepted for PyTorch compatibility; distances
    are always computed from differences (never the less accurate ``|a|^2 + |b|^2 - 2ab``).
    """
    check_floating("cdist", x1, x2)
    p = _ord("cdist", p)
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise op_error("cdist", "expected x1 (..., P, M) and x2 (..., R, M) with equal M",
                       x1=x1.shape, x2=x2.shape)
    return _CDist.apply(x1, x2, kw={"p": p})


def _pdist_impl(x, rows, cols, p):
    return norm(x[rows] - x[cols], ord=p, axis=-1)


_PDist = composite("pdist", _pdist_impl)


def pdist(input: Tensor, p=2.0) -> Tensor:
    """p-norm distances between every pair of rows ``i < j`` of ``input (N, M)``, in the order
    of the upper triangle (row-major): shape ``(N * (N - 1) / 2,)``."""
    check_floating("pdist", input)
    p = _ord("pdist", p)
    if input.ndim != 2:
        raise op_error("pdist", "expected a 2-D input (N, M)", input=input.shape)
    rows, cols = np.triu_indices(input.shape[0], k=1)
    return _PDist.apply(input, kw={"rows": rows, "cols": cols, "p": p})


_Dist = composite("dist", lambda a, b, p: norm(a - b, ord=p))


def dist(input: Tensor, other: Tensor, p=2.0) -> Tensor:
    """p-norm of ``input - other`` over all elements (the two broadcast); a 0-d tensor."""
    check_floating("dist", input, other)
    p = _ord("dist", p)
    if not isinstance(other, Tensor):
        other = const(np.asarray(other, dtype=input.dtype))
    return _Dist.apply(input, other, kw={"p": p})


def _renorm_impl(x, p, axis, maxnorm):
    from .elementwise import where

    others = tuple(i for i in range(x.ndim) if i != axis)
    n = norm(x, ord=p, axis=others, keepdims=True)
    # PyTorch's formula: slices above maxnorm are scaled by maxnorm / (norm + 1e-7).
    scale = where(const(n.data > maxnorm), maxnorm / (n + 1e-7), 1.0)
    return x * scale


_Renorm = composite("renorm", _renorm_impl)


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Rescale each slice ``input.select(dim, i)`` whose p-norm exceeds ``maxnorm`` to norm
    ``maxnorm`` (slices under it are unchanged)."""
    p = _ord("renorm", p)
    if maxnorm < 0:
        raise op_error("renorm", "maxnorm must be non-negative", maxnorm=maxnorm)
    axis = normalize_axis(dim, input.ndim, "renorm")
    return _Renorm.apply(input, kw={"p": p, "axis": axis, "maxnorm": float(maxnorm)})


class VectorNorm(Norm):
    name = "vector_norm"


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, axis=None,
                keepdims=None) -> Tensor:
    """``torch.linalg.vector_norm``: the p-norm of the elements over ``dim`` (all for None).

    ``ord``: p > 0 or inf. ``axis``/``keepdims`` are accepted as synonyms.
    """
    check_floating("vector_norm", x)
    ord = _ord("vector_norm", ord)
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
    s = s.max(axis=pick_axis, keepdims=True) if ord > 0 else s.min(axis=pick_axis,
                                                                      keepdims=True)
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
