"""Loss modules over the ``F`` losses (which accumulate in float32)."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "L1Loss", "MSELoss", "NLLLoss"]

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {_REDUCTIONS}, "
                             f"got {reduction!r}")
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

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__(reduction)
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

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error ``(input - target) ** 2`` reduced by ``reduction``."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
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

    def __init__(self, weight=None, reduction: str = "mean"):
        super().__init__(reduction)
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

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)
