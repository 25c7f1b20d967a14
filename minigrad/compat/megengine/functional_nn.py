"""``F.nn``: MegEngine's namespace for the neural-network ops.

``F.nn.cross_entropy(logits, label)`` works as in MegEngine (``with_logits`` and
``label_smooth`` are accepted); every other ``minigrad.functional`` op is reachable here too
(``F.nn.relu``, ``F.nn.linear``...), so MegEngine code ports without renaming.
"""

from __future__ import annotations

from ... import functional
from ...core.tensor import Tensor
from ...functional.activation import log_softmax, softmax
from ...functional.attention import scaled_dot_product_attention
from ...functional.dropout import dropout
from ...functional.loss import binary_cross_entropy as _bce
from ...functional.loss import (
    binary_cross_entropy_with_logits,
    cosine_similarity,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from ...functional.loss import cross_entropy as _cross_entropy
from ...functional.normalization import batch_norm, group_norm, layer_norm
from ...functional.recurrent import gru_cell, lstm_cell, rnn_tanh_cell
from ...functional.shape import permute
from ...functional.sparse import embedding
from ...functional.transcendental import log
from ...functional._utils import normalize_axis

__all__ = [
    "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "cosine_similarity", "cross_entropy", "dropout", "embedding", "group_norm", "gru_cell",
    "kl_div", "l1_loss", "layer_norm", "log_softmax", "logsoftmax", "lstm_cell", "mse_loss",
    "nll_loss", "rnn_tanh_cell", "scaled_dot_product_attention", "smooth_l1_loss", "softmax",
    "square_loss",
]

logsoftmax = log_softmax  # MegEngine spelling
square_loss = mse_loss  # MegEngine spelling


def cross_entropy(pred: Tensor, label: Tensor, axis: int = 1, with_logits: bool = True,
                  label_smooth: float = 0.0, reduction: str = "mean", **kwargs) -> Tensor:
    """Cross-entropy with MegEngine's signature (PyTorch keywords also accepted).

    Args:
        pred: logits (or probabilities when ``with_logits=False``), class axis ``axis``.
        label: integer class indices (or class probabilities of ``pred``'s shape).
        axis: the class axis.
        with_logits: False when ``pred`` already holds probabilities.
        label_smooth: label-smoothing epsilon (PyTorch's ``label_smoothing``).
        reduction: "mean", "sum" or "none".
        **kwargs: ``weight``, ``ignore_index``, ``label_smoothing`` as in
            :func:`minigrad.functional.cross_entropy`.
    """
    smoothing = kwargs.pop("label_smoothing", label_smooth)
    if not with_logits:
        return _cross_entropy_of_probabilities(pred, label, axis, smoothing, reduction, kwargs)
    return _cross_entropy(pred, label, reduction=reduction, label_smoothing=smoothing,
                          axis=axis, **kwargs)


def _cross_entropy_of_probabilities(p, label, axis, smoothing, reduction, kwargs):
    """MegEngine's ``with_logits=False``: ``-(1 - eps) * log p[label] - eps * mean(log p)``,
    no softmax (a log_softmax of ``log p`` has the same value for normalised ``p`` but not the
    same gradient)."""
    logp = log(p)
    axis = normalize_axis(axis, p.ndim, "cross_entropy")
    if p.ndim > 1 and axis != 1:  # the class axis to 1, where nll_loss wants it
        others = [d for d in range(p.ndim) if d != axis]
        order = others[:1] + [axis] + others[1:]
        logp = permute(logp, order)      # index labels keep their order: p's shape minus axis
        if label.shape == p.shape:
            label = permute(label, order)
    if label.shape == p.shape:  # class probabilities
        rows = -(label * logp).sum(1)
    else:
        if smoothing and ("weight" in kwargs or "ignore_index" in kwargs):
            raise ValueError("cross_entropy(with_logits=False): label smoothing with weight or "
                             "ignore_index is not supported; pass logits (with_logits=True)")
        rows = nll_loss(logp, label, reduction="none", **kwargs)
        if smoothing:
            rows = rows * (1.0 - smoothing) - logp.mean(1 if logp.ndim > 1 else 0) * smoothing
    if reduction == "none":
        return rows
    return rows.sum() if reduction == "sum" else rows.mean()


def binary_cross_entropy(pred: Tensor, label: Tensor, with_logits: bool = True,
                         reduction: str = "mean", **kwargs) -> Tensor:
    """Binary cross-entropy with MegEngine's signature: ``pred`` holds logits by default.

    Args:
        pred: logits, or probabilities when ``with_logits=False``.
        label: targets in [0, 1].
        with_logits: apply the (stable) sigmoid inside the loss.
        reduction: "mean", "sum" or "none".
        **kwargs: ``weight`` (and ``pos_weight`` with logits).
    """
    if with_logits:
        return binary_cross_entropy_with_logits(pred, label, reduction=reduction, **kwargs)
    return _bce(pred, label, reduction=reduction, **kwargs)


def __getattr__(name):
    # Everything else in F (relu, linear, conv2d...) under its own name, so the families need no
    # list here.
    if name.startswith("__") or name not in getattr(functional, "__dict__", {}):
        raise AttributeError(f"module 'minigrad.functional.nn' has no attribute {name!r}")
    return getattr(functional, name)
