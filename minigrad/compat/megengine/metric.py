"""MegEngine's ``F.topk_accuracy(logits, target, topk=1)``: the fraction of samples whose
target is among the ``k`` largest logits, one float32 scalar per ``k`` (a tuple when ``topk`` is
a tuple), computed on the logits' device without a gradient."""

from __future__ import annotations

from ...autodiff import no_grad
from ...functional import topk as _topk

__all__ = ["topk_accuracy"]


def topk_accuracy(logits, target, topk=1):
    """See the module docstring."""
    ks = (topk,) if isinstance(topk, int) else tuple(topk)
    if logits.ndim != 2 or target.ndim != 1 or target.shape[0] != logits.shape[0]:
        raise ValueError(f"topk_accuracy: expected logits (N, C) and target (N,), got "
                         f"{tuple(logits.shape)} and {tuple(target.shape)}")
    if not ks or any(not 1 <= k <= logits.shape[1] for k in ks):
        raise ValueError(f"topk_accuracy: every k must be in 1..{logits.shape[1]}, got {topk}")
    with no_grad():
        _, order = _topk(logits.detach(), max(ks), descending=True)
        hits = order == target.astype(order.dtype).reshape(-1, 1)
        out = tuple(hits[:, :k].any(axis=1).astype("float32").mean() for k in ks)
    return out[0] if isinstance(topk, int) else out
