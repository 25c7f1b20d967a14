"""Losses beyond the core set: huber, Poisson NLL, and the margin / embedding losses
(hinge_embedding, margin_ranking, soft_margin, multilabel_margin, multi_margin,
triplet_margin, cosine_embedding), with PyTorch's signatures and formulas.

Every loss is a float32 row of the AMP policy and a composite (see ``_composite``): autocast
hands it float32 inputs, and outside autocast float16/bfloat16 inputs are widened here, so the
loss is always computed and returned in float32 (float64 stays float64), like the core losses.
"""

from __future__ import annotations

import math

from .._backend import get_array_module
from .._backend.dtypes import float32, is_low_precision
from ..core.tensor import Tensor
from ._composite import composite
from ._utils import broadcast_shape, const, op_error
from .activation import logsigmoid, relu, softplus
from .distance import pairwise_distance
from .elementwise import clip, minimum, where
from .reduction import norm
from .transcendental import exp as _exp
from .transcendental import log

__all__ = [
    "cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss",
    "margin_ranking_loss", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "poisson_nll_loss", "soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss",
]

_REDUCTIONS = ("mean", "sum", "none")


def _check(op, reduction):
    if reduction not in _REDUCTIONS:
        raise op_error(op, f"reduction must be one of {_REDUCTIONS}", reduction=repr(reduction))


def _wide(t):
    return t.astype(float32) if isinstance(t, Tensor) and is_low_precision(t.dtype) else t


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _tensor(t, like, op, what):
    if isinstance(t, Tensor):
        return t
    if t is None:
        raise op_error(op, f"{what} is required")
    # A plain array/list target takes the input's dtype (a float64 NumPy target must not widen
    # a float32 loss).
    xp = get_array_module(like._data)
    return const(xp.asarray(t).astype(like.dtype))


def _broadcastable(op, *tensors):
    """Shapes that do not broadcast raise naming the loss (not the sub or mul inside it)."""
    shapes = [t.shape for t in tensors]
    if any(s != shapes[0] for s in shapes):
        broadcast_shape(op, *shapes)


def _same_shape(op, **tensors):
    shapes = {k: tuple(v.shape) for k, v in tensors.items()}
    if len(set(shapes.values())) != 1:
        raise op_error(op, "inputs must have the same shape", **shapes)


# ----------------------------------------------------------------------------- regression
def _huber_impl(x, y, reduction, delta):
    x, y = _wide(x), _wide(y)
    d = x - y
    a = d.abs()
    small = const(a._data < delta)
    dq = where(small, d, 0.0)  # the square only where it is taken: no 0 * inf in backward
    loss = where(small, 0.5 * dq * dq, delta * (a - 0.5 * delta))
    return _reduce(loss, reduction)


_Huber = composite("huber_loss", _huber_impl)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0):
    """``0.5 d^2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 delta)``, ``d = input -
    target`` (``smooth_l1_loss`` times ``beta`` when ``delta == beta``)."""
    _check("huber_loss", reduction)
    if delta <= 0:
        raise op_error("huber_loss", "delta must be positive", delta=delta)
    target = _tensor(target, input, "huber_loss", "target")
    _broadcastable("huber_loss", input, target)
    return _Huber.apply(input, target, kw={"reduction": reduction, "delta": float(delta)})


def _poisson_impl(x, y, log_input, full, eps, reduction):
    x, y = _wide(x), _wide(y)
    loss = _exp(x) - y * x if log_input else x - y * log(x + eps)
    if full:
        # Stirling's term y log y - y + 0.5 log(2 pi y), only where y > 1 (PyTorch).
        big = const(y._data > 1)
        ys = where(big, y, 2.0)
        loss = loss + where(big, ys * log(ys) - ys + 0.5 * log(2 * math.pi * ys), 0.0)
    return _reduce(loss, reduction)


_PoissonNll = composite("poisson_nll_loss", _poisson_impl)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of a Poisson target.

    ``exp(input) - target * input`` when ``log_input`` (input is a log-rate), else
    ``input - target * log(input + eps)``; ``full`` adds Stirling's approximation of
    ``log(target!)``. ``size_average``/``reduce`` are PyTorch's deprecated flags and must be None.
    """
    if size_average is not None or reduce is not None:
        raise op_error("poisson_nll_loss", "size_average/reduce are deprecated; use reduction=")
    _check("poisson_nll_loss", reduction)
    target = _tensor(target, input, "poisson_nll_loss", "target")
    _broadcastable("poisson_nll_loss", input, target)
    return _PoissonNll.apply(input, target, kw={"log_input": bool(log_input), "full": bool(full),
                                                "eps": float(eps), "reduction": reduction})


# ----------------------------------------------------------------------------- margins
def _hinge(z):
    """``max(z, 0)`` as PyTorch's margin losses take it (``clamp_min``): the gradient passes
    at 0 itself and stops at NaN (relu's passes NaN and stops at 0)."""
    return clip(z, lower=0.0)


def _hinge_impl(x, y, margin, reduction):
    x = _wide(x)
    yd = y._data
    loss = where(const(yd != 1), _hinge(margin - x), 0.0) + where(const(yd != -1), x, 0.0)
    return _reduce(loss, reduction)


_HingeEmbedding = composite("hinge_embedding_loss", _hinge_impl)


def hinge_embedding_loss(input: Tensor, target, margin: float = 1.0,
                         reduction: str = "mean") -> Tensor:
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``."""
    _check("hinge_embedding_loss", reduction)
    y = _tensor(target, input, "hinge_embedding_loss", "target")
    _broadcastable("hinge_embedding_loss", input, y)
    return _HingeEmbedding.apply(input, kw={"y": y, "margin": float(margin),
                                            "reduction": reduction})


def _ranking_impl(x1, x2, y, margin, reduction):
    x1, x2, y = _wide(x1), _wide(x2), _wide(y)
    return _reduce(_hinge(-y * (x1 - x2) + margin), reduction)


_MarginRanking = composite("margin_ranking_loss", _ranking_impl)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target, margin: float = 0.0,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)`` with ``target`` in {1, -1}."""
    _check("margin_ranking_loss", reduction)
    y = _tensor(target, input1, "margin_ranking_loss", "target")
    _broadcastable("margin_ranking_loss", input1, input2, y)
    return _MarginRanking.apply(input1, input2, y,
                                kw={"margin": float(margin), "reduction": reduction})


_SoftMargin = composite("soft_margin_loss", lambda x, y, reduction: _reduce(
    softplus(-_wide(y) * _wide(x)), reduction))


def soft_margin_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))``, ``target`` in {1, -1}."""
    _check("soft_margin_loss", reduction)
    target = _tensor(target, input, "soft_margin_loss", "target")
    _broadcastable("soft_margin_loss", input, target)
    return _SoftMargin.apply(input, target, kw={"reduction": reduction})


def _rows(op, x):
    """``(x, target)`` as (N, C) rows; whether the input was a single unbatched sample."""
    if x.ndim not in (1, 2):
        raise op_error(op, "expected input (C,) or (N, C)", input=x.shape)
    single = x.ndim == 1
    return single, (x.reshape((1, -1)) if single else x)


def _multilabel_impl(x, mask, reduction):
    x = _wide(x)
    n, c = x.shape
    # pairs (j target, i non-target): max(0, 1 - (x_j - x_i)), summed and divided by C.
    m = const((mask[:, :, None] & ~mask[:, None, :]).astype(x.dtype))
    margins = relu(1.0 - (x.reshape((n, c, 1)) - x.reshape((n, 1, c))))
    return _reduce((margins * m).sum(axis=(1, 2)) / c, reduction)


_MultilabelMargin = composite("multilabel_margin_loss", _multilabel_impl)


def multilabel_margin_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:
    """Multi-class multi-label hinge loss.

    Args:
        input: scores (C,) or (N, C).
        target: integer class indices of ``input``'s shape; each row's labels run up to its
            first -1 (PyTorch's layout).
        reduction: "mean", "sum" or "none" (per sample).
    """
    op = "multilabel_margin_loss"
    _check(op, reduction)
    single, x = _rows(op, input)
    t = target._data if isinstance(target, Tensor) else target
    xp = get_array_module(x._data)
    t = xp.asarray(t).reshape(x.shape) if getattr(t, "size", None) == x.size else None
    if t is None or t.dtype.kind not in "iu":
        raise op_error(op, "target must be integer class indices shaped like input",
                       input=input.shape, target=getattr(target, "shape", None))
    n, c = x.shape
    if bool(((t < -1) | (t >= c)).any()):
        raise op_error(op, f"target values must be in [-1, {c})")
    valid = xp.cumprod(t != -1, axis=1).astype(bool)  # labels before the first -1
    mask = xp.zeros((n, c), dtype=bool)
    rows = xp.broadcast_to(xp.arange(n)[:, None], t.shape)
    mask[rows[valid], t[valid]] = True
    out = _MultilabelMargin.apply(x, kw={"mask": mask, "reduction": reduction})
    return out.reshape(()) if single and reduction == "none" else out


def _multi_margin_impl(x, w, target, p, margin, reduction):
    x = _wide(x)
    n, c = x.shape
    xp = get_array_module(x._data)
    pick = const((xp.arange(c)[None, :] == target[:, None]).astype(x.dtype))
    xy = (x * pick).sum(axis=1, keepdims=True)
    h = relu(margin - xy + x) * (1.0 - pick)
    if p == 2:
        h = h * h
    if w is not None:
        h = h * _wide(w)[target].reshape((n, 1))
    return _reduce(h.sum(axis=1) / c, reduction)


_MultiMargin = composite("multi_margin_loss", _multi_margin_impl)


def multi_margin_loss(input: Tensor, target, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C``.

    Args:
        input: scores (C,) or (N, C).
        target: class indices (N,) (or a scalar for 1-D input).
        p: 1 or 2.
        margin: the hinge margin.
        weight: optional per-class weights (C,), applied by the target class.
        reduction: "mean", "sum" or "none".
    """
    op = "multi_margin_loss"
    _check(op, reduction)
    if p not in (1, 2):
        raise op_error(op, "p must be 1 or 2", p=p)
    single, x = _rows(op, input)
    xp = get_array_module(x._data)
    t = xp.asarray(target._data if isinstance(target, Tensor) else target).reshape(-1)
    n, c = x.shape
    if t.shape != (n,) or t.dtype.kind not in "iu" or bool(((t < 0) | (t >= c)).any()):
        raise op_error(op, f"target must hold N={n} class indices in [0, {c})",
                       input=input.shape, target=getattr(target, "shape", None))
    if weight is not None and tuple(weight.shape) != (c,):
        raise op_error(op, f"weight must have shape ({c},)", weight=weight.shape)
    out = _MultiMargin.apply(x, weight, kw={"target": t, "p": p, "margin": float(margin),
                                            "reduction": reduction})
    return out.reshape(()) if single and reduction == "none" else out


def _pairwise(a, b, p, eps):
    return norm(a - b + eps, ord=p, axis=-1)


def _triplet_impl(a, pos, neg, margin, p, eps, swap, reduction):
    a, pos, neg = _wide(a), _wide(pos), _wide(neg)
    d_pos = _pairwise(a, pos, p, eps)
    d_neg = _pairwise(a, neg, p, eps)
    if swap:
        d_neg = minimum(d_neg, _pairwise(pos, neg, p, eps))
    return _reduce(_hinge(d_pos - d_neg + margin), reduction)


_TripletMargin = composite("triplet_margin_loss", _triplet_impl)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d(x, y) = ||x - y + eps||_p`` over the
    last axis; ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative distance."""
    op = "triplet_margin_loss"
    _check(op, reduction)
    _same_shape(op, anchor=anchor, positive=positive, negative=negative)
    if not p > 0:
        raise op_error(op, "p must be positive", p=p)
    return _TripletMargin.apply(anchor, positive, negative, kw={
        "margin": float(margin), "p": p, "eps": float(eps), "swap": bool(swap),
        "reduction": reduction})


def _cos_embed_impl(x1, x2, y, margin, reduction):
    x1, x2 = _wide(x1), _wide(x2)
    eps = 1e-12  # PyTorch's EPSILON inside the square root
    dot = (x1 * x2).sum(axis=-1)
    cos = dot / (((x1 * x1).sum(axis=-1) + eps) * ((x2 * x2).sum(axis=-1) + eps)) ** 0.5
    yd = y._data
    loss = where(const(yd == 1), 1.0 - cos, 0.0) + where(const(yd == -1),
                                                          _hinge(cos - margin), 0.0)
    return _reduce(loss, reduction)


_CosineEmbedding = composite("cosine_embedding_loss", _cos_embed_impl)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target, margin: float = 0.0,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``target == -1``; the cosine is taken over the last axis of (N, D) or (D,) inputs."""
    op = "cosine_embedding_loss"
    _check(op, reduction)
    _same_shape(op, input1=input1, input2=input2)
    y = _tensor(target, input1, op, "target")
    if input1.ndim not in (1, 2) or tuple(y.shape) != tuple(input1.shape[:-1]):
        raise op_error(op, "expected inputs (N, D) with target (N,), or (D,) with a 0-d target",
                       input1=input1.shape, target=y.shape)
    return _CosineEmbedding.apply(input1, input2, kw={"y": y, "margin": float(margin),
                                                      "reduction": reduction})


# --------------------------------------------------------------------------- the layers' losses
def _gaussian_nll_impl(input, target, var, full, eps, reduction):  # noqa: A002
    input, target, var = _wide(input), _wide(target), _wide(var)
    v = var.detach()
    # clamped below by eps with the gradient passing through (PyTorch's in-place clamp under
    # no_grad): an added constant, 0 where var >= eps (no inf - inf at var = inf)
    var = var + where(v < eps, eps - v, 0.0)
    loss = 0.5 * (log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


_GaussianNLL = composite("gaussian_nll_loss", _gaussian_nll_impl)


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False,  # noqa: A002
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of ``target`` under a Gaussian of mean ``input`` and variance
    ``var``: ``0.5 * (log(var) + (input - target)**2 / var)`` (plus ``0.5 log(2 pi)`` when
    ``full``). ``var`` may be a float, drop the last axis or have size 1 there (one variance
    per sample); it is clamped below by ``eps`` with the gradient passing straight through, as
    in PyTorch."""
    op = "gaussian_nll_loss"
    _check(op, reduction)
    if not isinstance(var, Tensor):
        xp = get_array_module(input._data)
        var = const(xp.full(input.shape, float(var), dtype=input.dtype))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise op_error(op, "var does not fit input (same shape, or one variance per "
                           "sample)", var=var.shape, input=input.shape)
    if bool((var._data < 0).any()):
        raise op_error(op, "var has negative entries")
    return _GaussianNLL.apply(input, target, var, kw={
        "full": bool(full), "eps": float(eps), "reduction": reduction})


def _ml_soft_margin_impl(input, target, weight, reduction):  # noqa: A002
    x, y = _wide(input), _wide(target)
    loss = -(y * logsigmoid(x) + (1 - y) * logsigmoid(-x))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(axis=-1) / input.shape[-1]
    return _reduce(loss, reduction)


_MLSoftMargin = composite("multilabel_soft_margin_loss", _ml_soft_margin_impl)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight=None,  # noqa: A002
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """One-versus-all logistic loss averaged over the C classes:
    ``-(y log sigmoid(x) + (1 - y) log sigmoid(-x))``, optionally class-weighted.
    ``size_average``/``reduce`` are accepted for PyTorch compatibility (use ``reduction``)."""
    op = "multilabel_soft_margin_loss"
    _check(op, reduction)
    target = _tensor(target, input, op, "target")
    if input.ndim == 0 or tuple(target.shape) != tuple(input.shape):
        raise op_error(op, "target must have the shape of input (N, C)", input=input.shape,
                       target=target.shape)
    return _MLSoftMargin.apply(input, target, weight, kw={"reduction": reduction})


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any ``distance_function`` (default:
    :func:`pairwise_distance`); ``swap`` uses ``min(d(a, n), d(p, n))``. A composite of the
    distance's own ops (the distance may hold parameters), computed in float32 for
    float16/bfloat16 input."""
    op = "triplet_margin_with_distance_loss"
    _check(op, reduction)
    if not margin > 0:
        raise op_error(op, "margin must be greater than 0", margin=margin)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise op_error(op, "anchor, positive and negative must have the same number of "
                       "dimensions", anchor=anchor.shape, positive=positive.shape,
                       negative=negative.shape)
    dist = pairwise_distance if distance_function is None else distance_function
    anchor, positive, negative = _wide(anchor), _wide(positive), _wide(negative)
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, dist(positive, negative))
    return _reduce(clip(margin + d_pos - d_neg, lower=0.0), reduction)
