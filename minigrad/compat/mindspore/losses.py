"""MindSpore's loss cell ``nn.SoftmaxCrossEntropyWithLogits`` and ``nn.SequentialCell``."""

from __future__ import annotations

from ... import functional as F
from ... import nn

__all__ = ["SequentialCell", "SoftmaxCrossEntropyWithLogits"]

_REDUCTIONS = ("none", "mean", "sum")


class SoftmaxCrossEntropyWithLogits(nn.Module):
    """``SoftmaxCrossEntropyWithLogits(sparse=False, reduction="none")``, MindSpore's defaults.

    ``sparse=True``: labels are class indices; else one-hot (or soft) labels of the logits'
    shape. ``reduction="none"`` (the default, unlike ``nn.CrossEntropyLoss``) gives one loss
    per sample.
    """

    def __init__(self, sparse: bool = False, reduction: str = "none"):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"SoftmaxCrossEntropyWithLogits: reduction must be one of "
                             f"{_REDUCTIONS}, got {reduction!r}")
        self.sparse = bool(sparse)
        self.reduction = reduction

    def forward(self, logits, labels):
        if self.sparse:
            return F.cross_entropy(logits, labels.astype("int64"), reduction=self.reduction)
        if tuple(labels.shape) != tuple(logits.shape):
            raise ValueError(f"SoftmaxCrossEntropyWithLogits(sparse=False): labels of shape "
                             f"{tuple(labels.shape)} must have the logits' shape "
                             f"{tuple(logits.shape)} (pass sparse=True for class indices)")
        per_sample = -(labels.astype(logits.dtype) * F.log_softmax(logits, axis=-1)).sum(axis=-1)
        if self.reduction == "none":
            return per_sample
        return per_sample.mean() if self.reduction == "mean" else per_sample.sum()

    def extra_repr(self) -> str:
        return f"sparse={self.sparse}, reduction={self.reduction!r}"


class SequentialCell(nn.Sequential):
    """MindSpore's ``nn.SequentialCell(*cells)`` or ``nn.SequentialCell([cells])``."""

    def __init__(self, *args):
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        super().__init__(*args)
