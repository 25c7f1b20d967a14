"""Distances: cdist, pdist, dist.

All are float32 rows of the AMP policy (AMP_REFERENCE section 1): a distance is a reduction of
squared differences, which overflows float16 for modest values. They are composites of
``norm`` (float32 accumulation, subgradient 0 at zero distance) and shape ops.
"""

from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor
from ._composite import composite
from ._utils import check_floating, const, op_error
from .reduction import norm, norm_order, vector_norm

__all__ = ["cdist", "dist", "pairwise_distance", "pdist"]


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
    p = norm_order("cdist", p)
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
    p = norm_order("pdist", p)
    if input.ndim != 2:
        raise op_error("pdist", "expected a 2-D input (N, M)", input=input.shape)
    rows, cols = np.triu_indices(input.shape[0], k=1)
    return _PDist.apply(input, kw={"rows": rows, "cols": cols, "p": p})


_Dist = composite("dist", lambda a, b, p: norm(a - b, ord=p))


def dist(input: Tensor, other: Tensor, p=2.0) -> Tensor:
    """p-norm of ``input - other`` over all elements (the two broadcast); a 0-d tensor."""
    check_floating("dist", input, other)
    p = norm_order("dist", p)
    if not isinstance(other, Tensor):
        other = const(np.asarray(other, dtype=input.dtype))
    return _Dist.apply(input, other, kw={"p": p})


_PairwiseDistance = composite("pairwise_distance", lambda x1, x2, p, eps, keepdim: vector_norm(
    x1 - x2 + eps, p, dim=-1, keepdim=keepdim))


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` over the last axis (PyTorch's formula: ``eps``
    keeps the gradient finite at equal rows); ``x1`` and ``x2`` broadcast. Integer input
    gives a float32 result (PyTorch)."""
    return _PairwiseDistance.apply(x1, x2, kw={"p": p, "eps": eps, "keepdim": keepdim})
