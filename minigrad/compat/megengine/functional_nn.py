"""``F.nn``: MegEngine's namespace for the neural-network ops.

``F.nn.cross_entropy(logits, label)`` works as in MegEngine (``with_logits`` and
``label_smooth`` are accepted); every other ``minigrad.functional`` op is reachable here too
(``F.nn.relu``, ``F.nn.linear``...), so MegEngine code ports without renaming.

Where MegEngine's ``functional.nn`` means something else than PyTorch's ``nn.functional``
(which ``minigrad.functional`` follows), this module has MegEngine's meaning: ``interpolate``
defaults to bilinear, ``avg_pool2d`` leaves the padding out of the mean, ``batch_norm``'s
``momentum=0.9`` keeps 90% of the running statistics (PyTorch's 0.1), ``layer_norm`` and
``group_norm`` take ``affine`` before ``weight``, ``pad`` takes ``constant_value``,
``normalize`` takes the norm over all elements unless given an ``axis``.
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
from ...functional import normalization as _norm
from ...functional.normalization import normalize as _normalize
from ...functional.pooling import avg_pool2d as _avg_pool2d
from ...functional.shape import pad as _pad
from ...functional.upsample import interpolate as _interpolate
from ...functional.recurrent import gru_cell, lstm_cell, rnn_tanh_cell
from ...functional.shape import permute
from ...functional.sparse import embedding
from ...functional.transcendental import log
from ...functional._utils import normalize_axis

__all__ = [
    "avg_pool2d", "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "cosine_similarity", "cross_entropy", "dropout", "embedding", "group_norm", "gru_cell",
    "interpolate", "kl_div", "l1_loss", "layer_norm", "log_softmax", "logsoftmax", "lstm_cell",
    "mse_loss", "nll_loss", "normalize", "pad", "rnn_tanh_cell", "scaled_dot_product_attention",
    "smooth_l1_loss", "softmax", "square_loss",
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


def interpolate(inp: Tensor, size=None, scale_factor=None, mode: str = "bilinear",
                align_corners: bool | None = None) -> Tensor:
    """MegEngine's ``F.nn.interpolate``: ``mode="bilinear"`` by default (PyTorch's
    ``nn.functional.interpolate`` and ``minigrad.functional.interpolate``: nearest).

    ``align_corners`` applies to the linear modes only (None: False); the mode is
    case-insensitive, as in MegEngine.
    """
    mode = mode.lower()
    if mode not in ("linear", "bilinear", "trilinear") and align_corners is not None:
        raise ValueError("interpolate: align_corners option can only be set in the "
                         f"bilinear/linear interpolating mode, got mode={mode!r}")
    if mode in ("linear", "bilinear", "trilinear") and align_corners is None:
        align_corners = False
    return _interpolate(inp, size, scale_factor, mode, align_corners)


def avg_pool2d(inp: Tensor, kernel_size, stride=None, padding=0,
               mode: str = "average_count_exclude_padding") -> Tensor:
    """MegEngine's ``F.nn.avg_pool2d``: the padding is left out of each window's mean by
    default (``mode="average"`` counts it, PyTorch's default)."""
    if mode not in ("average", "average_count_exclude_padding"):
        raise ValueError(f"avg_pool2d: mode must be 'average' or "
                         f"'average_count_exclude_padding', got {mode!r}")
    return _avg_pool2d(inp, kernel_size, stride, padding, count_include_pad=mode == "average")


def batch_norm(inp: Tensor, running_mean: Tensor | None = None,
               running_var: Tensor | None = None, weight: Tensor | None = None,
               bias: Tensor | None = None, *, training: bool = False, momentum: float = 0.9,
               eps: float = 1e-5, inplace: bool = True):
    """MegEngine's ``F.nn.batch_norm``: ``running = momentum * running + (1 - momentum) *
    batch``, so its ``momentum=0.9`` is PyTorch's ``momentum=0.1`` (PyTorch weighs the batch
    by ``momentum``). ``inplace=False`` leaves the running statistics alone and returns
    ``(output, new_mean, new_var)``."""
    if not inplace and training:
        running_mean = None if running_mean is None else running_mean.clone().detach()
        running_var = None if running_var is None else running_var.clone().detach()
    out = _norm.batch_norm(inp, running_mean, running_var, weight, bias, training=training,
                           momentum=1.0 - momentum, eps=eps)
    return out if inplace else (out, running_mean, running_var)


def layer_norm(inp: Tensor, normalized_shape, affine: bool = True,
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """MegEngine's ``F.nn.layer_norm(inp, normalized_shape, affine, weight, bias, eps)``:
    ``affine`` comes before the parameters (PyTorch's signature has no ``affine``)."""
    w, b = _affine("layer_norm", affine, weight, bias)
    return _norm.layer_norm(inp, normalized_shape, w, b, eps)


def group_norm(inp: Tensor, num_groups: int, affine: bool = True,
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """MegEngine's ``F.nn.group_norm(inp, num_groups, affine, weight, bias, eps)``."""
    w, b = _affine("group_norm", affine, weight, bias)
    return _norm.group_norm(inp, num_groups, w, b, eps)


def _affine(op, affine, weight, bias):
    if isinstance(affine, Tensor):
        raise TypeError(f"{op}: MegEngine's signature has affine (a bool) before weight and "
                        "bias; pass affine=True, weight=..., bias=...")
    if not affine:
        return None, None
    if weight is None or bias is None:
        raise ValueError(f"{op}: affine=True needs weight and bias (MegEngine asserts it too)")
    return weight, bias


def normalize(inp: Tensor, ord=None, axis=None, eps: float = 1e-12) -> Tensor:
    """MegEngine's ``F.normalize``: ``inp / max(||inp||_ord, eps)``, the norm over ALL elements
    when ``axis`` is None (PyTorch's ``normalize`` defaults to ``dim=1``); ``ord`` None is 2."""
    p = 2.0 if ord is None else ord
    if axis is None:
        return _normalize(inp.reshape((-1,)), p, 0, eps).reshape(inp.shape)
    return _normalize(inp, p, axis, eps)


def pad(src: Tensor, pad_width, mode: str = "constant", constant_value: float = 0.0) -> Tensor:
    """MegEngine's ``F.nn.pad``: NumPy-style ``pad_width`` pairs, ``constant_value``."""
    return _pad(src, pad_width, mode, constant_value)


def __getattr__(name):
    # Everything else in F (relu, linear, conv2d...) under its own name, so the families need no
    # list here.
    if name.startswith("__") or name not in getattr(functional, "__dict__", {}):
        raise AttributeError(f"module 'minigrad.functional.nn' has no attribute {name!r}")
    return getattr(functional, name)
