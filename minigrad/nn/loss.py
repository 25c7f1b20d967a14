"""Loss modules over the ``F`` losses (which accumulate in float32).

Constructors keep PyTorch's argument order, the deprecated ``size_average``/``reduce`` included
(given, they decide ``reduction`` as in PyTorch).
"""

from __future__ import annotations


from .. import functional as F
from .._backend.dtypes import float32, is_low_precision
from ..core.tensor import Tensor
from .module import Module

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CTCLoss", "CosineEmbeddingLoss", "CrossEntropyLoss",
           "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss",
           "MSELoss", "MarginRankingLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
           "MultiMarginLoss", "NLLLoss", "PoissonNLLLoss", "SmoothL1Loss", "SoftMarginLoss",
           "TripletMarginLoss", "TripletMarginWithDistanceLoss"]

_REDUCTIONS = ("mean", "sum", "none")


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's reading of the deprecated flags: both default to True; ``reduce=False`` means
    "none", else ``size_average`` picks "mean" over "sum"."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _wide(t):
    """float16/bfloat16 as float32: the losses built here compute in float32 like the ``F``
    losses."""
    return t.astype(float32) if isinstance(t, Tensor) and is_low_precision(t.dtype) else t


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


class _Loss(Module):
    _reductions = _REDUCTIONS

    def __init__(self, reduction: str = "mean", size_average=None, reduce=None):
        super().__init__()
        reduction = _legacy_reduction(size_average, reduce, reduction)
        if reduction not in self._reductions:
            raise ValueError(f"{type(self).__name__}: reduction must be one of "
                             f"{self._reductions}, got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}" if self.reduction != "mean" else ""


class CrossEntropyLoss(_Loss):
    """Softmax cross entropy between logits ``(N, C, ...)`` and class ids (or probabilities).

    Args:
        weight: optional per-class weights ``(C,)`` (a buffer).
        ignore_index: targets equal to this contribute nothing.
        reduction: "mean" (weighted mean over non-ignored targets), "sum" or "none".
        label_smoothing: mix targets with the uniform distribution by this amount.
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(reduction, size_average, reduce)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of class ids given log-probabilities ``(N, C, ...)`` (the output
    of ``log_softmax``): ``-input[n, target[n]]``, weighted and reduced.

    Args:
        weight: optional per-class weights ``(C,)`` (a buffer).
        ignore_index: targets equal to this contribute nothing.
        reduction: "mean" (weighted mean over non-ignored targets), "sum" or "none".
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class _PlainLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)


class MSELoss(_PlainLoss):
    """Mean squared error ``(input - target) ** 2`` reduced by ``reduction``."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_PlainLoss):
    """Mean absolute error ``|input - target|`` reduced by ``reduction``."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class BCELoss(_Loss):
    """Binary cross entropy between probabilities (a sigmoid's output) and targets in [0, 1]:
    ``-(t log p + (1 - t) log(1 - p))``, the logs clamped at -100 as in PyTorch.

    Args:
        weight: optional rescaling broadcast against the loss (a buffer).
        reduction: "mean", "sum" or "none".
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy on logits (a numerically stable sigmoid + BCE).

    Args:
        weight: optional rescaling broadcast against the loss (a buffer).
        reduction: "mean", "sum" or "none".
        pos_weight: optional weight of positive examples, broadcast over the last axis.
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None):
        super().__init__(reduction, size_average, reduce)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input -
    target``)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(reduction, size_average, reduce)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 delta)``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of ``target`` from log-probabilities ``input``;
    ``reduction="batchmean"`` divides the sum by the batch size (the true KL divergence)."""

    _reductions = _REDUCTIONS + ("batchmean",)

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False):
        super().__init__(reduction, size_average, reduce)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss; ``forward(log_probs, targets,
    input_lengths, target_lengths)`` with ``log_probs`` ``(T, N, C)`` (a log_softmax over C).
    The gradient is the derivative with respect to ``log_probs`` (a docs row: PyTorch's is
    taken through a log_softmax)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=self.blank,
                          reduction=self.reduction, zero_infinity=self.zero_infinity)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target (see ``F.poisson_nll_loss``)."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of ``target`` under a Gaussian of mean ``input`` and variance
    ``var``: ``0.5 * (log(var) + (input - target)**2 / var)`` (plus ``0.5 log(2 pi)`` when
    ``full``). ``var`` may drop the last axis or have size 1 there (one variance per
    sample); it is clamped below by ``eps`` with the gradient passing straight through, as in
    PyTorch."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -y * (x1 - x2) + margin)`` with ``y`` in {1, -1}."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` where ``y == 1``, ``max(0, margin - x)`` where ``y == -1``."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SoftMarginLoss(_PlainLoss):
    """``log(1 + exp(-y * x))`` with ``y`` in {1, -1}."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelMarginLoss(_PlainLoss):
    """Multi-class multi-label hinge loss; ``target`` holds class ids, ended by the first
    -1."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """One-versus-all logistic loss averaged over the C classes:
    ``-(y log sigmoid(x) + (1 - y) log sigmoid(-x))``, optionally class-weighted."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiMarginLoss(_Loss):
    """Multi-class hinge loss ``sum_j max(0, margin - x[y] + x[j]) ** p / C``, optionally
    class-weighted."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                 reduce=None, reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p}")
        self.p, self.margin = p, margin
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos(x1, x2)`` where ``y == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``y == -1``."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the ``p``-norm distance (``swap``: use the
    smaller of d(a, n) and d(p, n))."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(reduction, size_average, reduce)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any ``distance_function`` (default: the
    pairwise 2-norm distance, ``PairwiseDistance()``)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean"):
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: margin must be positive, got "
                             f"{margin}")
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)
