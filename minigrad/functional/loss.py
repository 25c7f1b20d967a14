"""Loss functions with PyTorch semantics, each one fused Function.

Every loss computes and reduces in float32 (float64 for float64 input), so a float16 network gets
a float32 loss (invariant 3). Class weights and ``pos_weight`` are constants (no gradient); the
target gets a gradient wherever the loss is differentiable in it. Gradients are computed on
arrays in one pass; ``mse_loss`` and ``cross_entropy`` also have a backward written with ops,
used when the backward is recorded (``create_graph=True``), so they differentiate twice.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._backend import get_array_module
from .._backend.dtypes import float32, float64, is_floating
from .._backend.indexing import host_checks
from ..core.function import Function
from ..core.tensor import Tensor
from ._axes import check_axis
from ._array_backward import ArrayBackward, run_array_backward, sum_to_array
from ._utils import (acc_dtype, broadcast_shape, check_floating, const, fast_backward, op_error,
                     scatter_add_flat, sum_to_shape, to_dtype)
from .activation import log_softmax

__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_similarity",
    "cross_entropy", "ctc_loss", "kl_div", "l1_loss", "mse_loss", "nll_loss", "smooth_l1_loss",
]

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(op, reduction, allowed=_REDUCTIONS):
    if reduction not in allowed:
        raise op_error(op, f"reduction must be one of {allowed}", reduction=repr(reduction))


def _reduce(loss, reduction, denom=None):
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    return total / (loss.size if denom is None else denom)


def _coef(gy, reduction, denom):
    """The upstream gradient each loss element receives (array, broadcastable). A zero total
    weight (every target ignored) makes the mean NaN but its gradient 0, as in PyTorch."""
    return gy / _nonzero(denom) if reduction == "mean" else gy


def _nonzero(denom):
    if hasattr(denom, "shape"):
        return get_array_module(denom).where(denom == 0, 1, denom)
    return denom or 1


def _data(t):
    return t._data if isinstance(t, Tensor) else t


def _as_tensor(t, like: Tensor):
    if t is None or isinstance(t, Tensor):
        return t
    return Tensor(t, device=like.device)


# --------------------------------------------------------------------------- class-index losses
def _class_rows(x, axis):
    """Move the class axis last and flatten: (M, C) rows and the per-row (target) shape."""
    xp = get_array_module(x)
    xm = xp.moveaxis(x, axis, -1) if axis != x.ndim - 1 else x
    # the row count spelled out: -1 is ambiguous when there are no classes (an empty input)
    return xm.reshape(math.prod(xm.shape[:-1]), xm.shape[-1]), xm.shape[:-1]


def _unrows(g, x_shape, axis):
    """Inverse of :func:`_class_rows` for a gradient of shape (M, C)."""
    xp = get_array_module(g)
    moved = x_shape[:axis] + x_shape[axis + 1:] + (x_shape[axis],)
    g = g.reshape(moved)
    return xp.moveaxis(g, -1, axis) if axis != len(x_shape) - 1 else g


def _check_class_weight(op, weight, classes, **shapes):
    if weight is not None and weight.shape != (classes,):
        raise op_error(op, f"weight must have shape ({classes},), one entry per class",
                       weight_shape=weight.shape, **shapes)


def _targets(op, t, rows_shape, classes, ignore_index, weight, dtype):
    """Flattened safe targets, validity mask and per-row weights (zero where ignored)."""
    xp = get_array_module(t)
    if t.dtype.kind not in "iu":
        raise op_error(op, "class-index target must be an integer tensor (or, for "
                       "cross_entropy, class probabilities of the input's shape)",
                       target_dtype=t.dtype, target_shape=t.shape)
    if tuple(t.shape) != tuple(rows_shape):
        raise op_error(op, "target shape must be the input shape without the class axis",
                       target_shape=t.shape, expected=tuple(rows_shape))
    _check_class_weight(op, weight, classes)
    t = t.reshape(-1)
    valid = t != ignore_index
    ts = xp.where(valid, t, 0)
    # A host read: on the GPU only in debug mode (it would stall every training step).
    if ts.size and host_checks(xp) and bool(((ts < 0) | (ts >= classes)).any()):
        raise op_error(op, f"target values must be in [0, {classes}) or ignore_index",
                       ignore_index=ignore_index)
    bad = None
    if not host_checks(xp):
        # GPU without index_debug: no host read per step (PyTorch asserts on the device); an
        # out-of-range target makes its row, hence the loss and its gradient, NaN instead of
        # silently reading another class, so a GradScaler skips the step and says why.
        bad = (ts < 0) | (ts >= classes)
        ts = xp.where(bad, 0, ts)
    wt = valid.astype(dtype) if weight is None else weight.astype(dtype)[ts] * valid
    if bad is not None:
        wt = xp.where(bad, xp.nan, wt).astype(dtype, copy=False)
    return ts, valid, wt


def _class_axis(x, axis, op="cross_entropy"):
    if x.ndim == 1:
        return 0
    if x.ndim == 0:
        raise op_error(op, "input must have a class axis; got a 0-d tensor", shape=x.shape)
    return check_axis(axis, x.ndim, op)


class CrossEntropy(Function):
    name = "cross_entropy"

    def forward(self, x, target, weight, ignore_index, reduction, label_smoothing, axis):
        check_floating("cross_entropy", x)
        xp = get_array_module(x)
        self.axis = axis = _class_axis(x, axis)
        acc = acc_dtype(x.dtype)
        z, rows_shape = _class_rows(to_dtype(x, acc), axis)
        classes = z.shape[1]
        _check_class_weight("cross_entropy", weight, classes, input_shape=x.shape)
        # no classes: no max to take (NumPy refuses); the empty sum's log is -inf
        m = z.max(axis=1, keepdims=True) if classes else xp.zeros((z.shape[0], 1), acc)
        lse = m + xp.log(xp.exp(z - m).sum(axis=1, keepdims=True))
        w = None if weight is None else weight.astype(acc)
        eps = label_smoothing
        self.probs = is_floating(target.dtype)
        if self.probs:
            if target.shape != x.shape:
                raise op_error("cross_entropy", "probability targets must have the input's "
                               "shape", input_shape=x.shape, target_shape=target.shape)
            tp, _ = _class_rows(to_dtype(target, acc), axis)
            if eps:
                tp = tp * (1.0 - eps) + eps / classes
            wtp = tp if w is None else tp * w
            loss = -(wtp * (z - lse)).sum(axis=1)
            denom = loss.size
            self.save_for_backward(x, target, lse)
        else:
            ts, valid, wt = _targets("cross_entropy", target, rows_shape, classes,
                                     ignore_index, weight, acc)
            picked = z[xp.arange(ts.size), ts] - lse[:, 0]
            loss = -wt * picked
            if eps:
                zsum = z.sum(axis=1) if w is None else z @ w
                wsum = classes if w is None else w.sum()
                smooth = (wsum * lse[:, 0] - zsum) * valid
                loss = loss * (1.0 - eps) + smooth * (eps / classes)
            denom = wt.sum()
            self.save_for_backward(x, lse, ts, valid, wt)
        self.w, self.eps, self.reduction, self.denom = w, eps, reduction, denom
        return _reduce(loss.reshape(rows_shape), reduction, denom)

    def backward(self, gy):
        saved = self.saved_tensors
        if not fast_backward():  # recorded (create_graph) or watched: ops, differentiable again
            return self._backward_ops(gy, saved)
        return run_array_backward(
            CrossEntropyBackward, (gy,), self, saved=[_data(t) for t in saved],
            probs=self.probs, w=self.w, eps=self.eps, reduction=self.reduction,
            denom=self.denom, axis=self.axis)

    def _backward_ops(self, gy, saved):
        """The gradient as ops: ``c * (rowsum(Q) * softmax(x) - Q)`` for the loss
        ``-sum(Q * log_softmax(x))`` with per-row coefficient ``c`` (gradient penalties)."""
        x, axis, eps = saved[0], self.axis, self.eps
        xp = get_array_module(x._data)
        acc = gy.dtype
        keep = list(x.shape)
        keep[axis] = 1
        c = gy.reshape(tuple(keep)) if self.reduction == "none" else gy
        if self.reduction == "mean":
            c = c / _nonzero(self.denom)
        classes = x.shape[axis]
        wshape = [1] * x.ndim
        wshape[axis] = classes
        w = None if self.w is None else const(self.w.reshape(wshape))
        logp = log_softmax(x.astype(acc), axis)
        need_x, need_t = self.needs_input_grad
        if self.probs:
            t = saved[1].astype(acc)
            ts = t * (1.0 - eps) + eps / classes if eps else t
            q = ts if w is None else ts * w
            gt = None
            if need_t:
                gt = -logp * (1.0 - eps) * c if w is None else -logp * (w * (1.0 - eps)) * c
                gt = gt.astype(saved[1].dtype)
        else:
            _, _, ts, valid, wt = [_data(v) for v in saved]
            q_rows = xp.zeros((ts.size, classes), dtype=acc)
            q_rows[xp.arange(ts.size), ts] = wt * (1.0 - eps)
            if eps:
                q_rows += (valid * (eps / classes))[:, None] * (1.0 if self.w is None else self.w)
            q, gt = const(_unrows(q_rows, x.shape, axis)), None
        gx = None
        if need_x:
            gx = ((logp.exp() * q.sum(axis, keepdims=True) - q) * c).astype(x.dtype)
        return gx, gt


class CrossEntropyBackward(ArrayBackward):
    name = "cross_entropy_backward"

    def compute(self, gy, needs, saved, probs, w, eps, reduction, denom, axis):
        xp = get_array_module(gy)
        x = saved[0]
        z, _ = _class_rows(to_dtype(x, gy.dtype), axis)  # gy has the loss's dtype
        c = _coef(gy, reduction, denom)
        c = c.reshape(-1, 1) if reduction == "none" else c
        out = []
        if probs:
            target, lse = saved[1], saved[2]
            classes = z.shape[1]
            tp, _ = _class_rows(to_dtype(target, lse.dtype), axis)
            tp_s = tp * (1.0 - eps) + eps / classes if eps else tp
            wtp = tp_s if w is None else tp_s * w
            logp = z - lse
            if needs[0]:
                g = xp.exp(logp) * wtp.sum(axis=1, keepdims=True) - wtp
                out.append(to_dtype(_unrows(g * c, x.shape, axis), x.dtype))
            if needs[1]:
                gt = -logp * (1.0 - eps) if w is None else -logp * w * (1.0 - eps)
                out.append(to_dtype(_unrows(gt * c, x.shape, axis), target.dtype))
            return tuple(out)
        lse, ts, valid, wt = saved[1:]
        classes = z.shape[1]
        rows = z.shape[0]
        a = wt * (1.0 - eps)
        if eps:
            a = a + valid * (eps / classes * (classes if w is None else w.sum()))
        c_row = c.reshape(-1) if reduction == "none" else c
        g = xp.exp(z - lse) * (a * c_row)[:, None]
        g[xp.arange(rows), ts] -= wt * (1.0 - eps) * c_row
        if eps:
            shift = (valid * (eps / classes) * c_row)[:, None]
            g -= shift if w is None else shift * w
        out.append(to_dtype(_unrows(g, x.shape, axis), x.dtype))
        return tuple(out)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0, axis: int = 1) -> Tensor:
    """Softmax cross-entropy between logits and class indices or class probabilities.

    Fuses log-softmax and the negative log-likelihood (PyTorch semantics): with ``reduction=
    "mean"`` and class indices the sum is divided by the total weight of the non-ignored
    targets; with probabilities by the number of rows.

    Args:
        input: logits (N, C), (N, C, d1, ...) or (C,); any float dtype (float32 math).
        target: integer class indices of shape (N,) / (N, d1, ...) / (), or floating class
            probabilities of the input's shape (these get a gradient too).
        weight: optional (C,) class weights (constant).
        ignore_index: target value that contributes neither loss nor gradient.
        reduction: "mean", "sum" or "none".
        label_smoothing: epsilon in [0, 1]; mixes the target with the uniform distribution.
        axis: the class axis (1 by default, as in PyTorch and MegEngine).

    Returns:
        The loss, float32 (float64 for float64 input).
    """
    _check_reduction("cross_entropy", reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise op_error("cross_entropy", "label_smoothing must be in [0, 1]",
                       label_smoothing=label_smoothing)
    target = _as_tensor(target, input)
    if input.ndim == 2 and target.ndim == 2 and target.shape[1] == 1 \
            and target.dtype.kind in "iu":
        # OneFlow's AMP guide feeds (N, 1) class indices; integers cannot be probabilities,
        # so the trailing axis is unambiguous (a float (N, 1) target stays a shape error).
        target = target.reshape(target.shape[0])
    return CrossEntropy.apply(input, target, weight=_data(weight), ignore_index=ignore_index,
                              reduction=reduction, label_smoothing=float(label_smoothing),
                              axis=axis)


class NllLoss(Function):
    name = "nll_loss"

    def forward(self, x, target, weight, ignore_index, reduction):
        check_floating("nll_loss", x)
        xp = get_array_module(x)
        self.axis = axis = _class_axis(x, 1, "nll_loss")
        acc = acc_dtype(x.dtype)
        z, rows_shape = _class_rows(x, axis)
        ts, _, wt = _targets("nll_loss", target, rows_shape, z.shape[1], ignore_index,
                             weight, acc)
        picked = z[xp.arange(ts.size), ts].astype(acc)
        self.ts, self.wt, self.reduction, self.denom = ts, wt, reduction, wt.sum()
        self.x_meta = (x.shape, x.dtype)
        return _reduce((-wt * picked).reshape(rows_shape), reduction, self.denom)

    def backward(self, gy):
        return run_array_backward(NllLossBackward, (gy,), self, ts=self.ts,
                                  wt=self.wt, reduction=self.reduction, denom=self.denom,
                                  x_meta=self.x_meta, axis=self.axis)


class NllLossBackward(ArrayBackward):
    name = "nll_loss_backward"

    def compute(self, gy, needs, ts, wt, reduction, denom, x_meta, axis):
        xp = get_array_module(gy)
        shape, dtype = x_meta
        c = _coef(gy, reduction, denom)
        c = c.reshape(-1) if reduction == "none" else c
        g = xp.zeros((ts.size, shape[axis]), dtype=wt.dtype)
        g[xp.arange(ts.size), ts] = -wt * c
        return (to_dtype(_unrows(g, shape, axis), dtype),)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` (N, C, ...) at class ``target``.

    Args:
        input: log-probabilities, class axis 1 (or 0 for a 1-D input).
        target: integer class indices, the input's shape without the class axis.
        weight: optional (C,) class weights (constant).
        ignore_index: target value that is skipped.
        reduction: "mean" (divided by the total weight of non-ignored targets), "sum", "none".

    Returns:
        The loss in float32 (float64 for float64 input).
    """
    _check_reduction("nll_loss", reduction)
    target = _as_tensor(target, input)
    return NllLoss.apply(input, target, weight=_data(weight), ignore_index=ignore_index,
                         reduction=reduction)


# --------------------------------------------------------------------------- pointwise losses
class _Pointwise(Function):
    """A loss ``f(input, target)`` elementwise (broadcasting), reduced; ``_grad`` gives
    d loss / d input and d loss / d target per element."""

    def forward(self, x, t, reduction, **params):
        check_floating(self.name, x)
        acc = float64 if float64 in (x.dtype, t.dtype) else float32
        xf, tf = to_dtype(x, acc), to_dtype(t, acc)
        self.params, self.reduction = params, reduction
        loss = self._loss(xf, tf, **params)
        self.denom = loss.size
        self.save_for_backward(x, t)
        return _reduce(loss, reduction)

    def backward(self, gy):
        x, t = [_data(v) for v in self.saved_tensors]
        return run_array_backward(PointwiseBackward, (gy,), self, fn=self,
                                  x=x, t=t)


class PointwiseBackward(ArrayBackward):
    name = "loss_backward"

    def compute(self, gy, needs, fn, x, t):
        acc = gy.dtype
        xf = to_dtype(x, acc)
        tf = to_dtype(t, acc)
        c = _coef(gy, fn.reduction, fn.denom)
        gx, gt = fn._grad(xf, tf, needs, **fn.params)
        out = []
        if needs[0]:
            out.append(to_dtype(sum_to_array(gx * c, x.shape), x.dtype))
        if needs[1]:
            out.append(to_dtype(sum_to_array(gt * c, t.shape), t.dtype))
        return tuple(out)


class MseLoss(_Pointwise):
    name = "mse_loss"

    def _loss(self, x, t):
        d = x - t
        return d * d

    def _grad(self, x, t, needs):
        d = 2.0 * (x - t)
        return d, -d

    def backward(self, gy):
        # Written with ops (not arrays) so gradient penalties -- grad(..., create_graph=True)
        # on an MSE loss, as in the seeds -- can differentiate it a second time.
        x, t = self.saved_tensors
        d = x.astype(gy.dtype) - t.astype(gy.dtype)
        # the factor 2 / N first, as PyTorch's (2 * d overflows for d near the dtype's largest)
        g = d * (gy * (2.0 / self.denom) if self.reduction == "mean" else gy * 2.0)
        need_x, need_t = self.needs_input_grad
        return (sum_to_shape(g, x.shape) if need_x else None,
                sum_to_shape(-g, t.shape) if need_t else None)


class L1LossFunction(_Pointwise):
    name = "l1_loss"

    def _loss(self, x, t):
        return get_array_module(x).abs(x - t)

    def _grad(self, x, t, needs):
        s = get_array_module(x).sign(x - t)
        return s, -s


class SmoothL1LossFunction(_Pointwise):
    name = "smooth_l1_loss"

    def _loss(self, x, t, beta):
        xp = get_array_module(x)
        d = xp.abs(x - t)
        if beta == 0:
            return d
        return xp.where(d < beta, (0.5 / beta) * d * d, d - 0.5 * beta)

    def _grad(self, x, t, needs, beta):
        xp = get_array_module(x)
        d = x - t
        g = xp.sign(d) if beta == 0 else xp.where(xp.abs(d) < beta, d / beta, xp.sign(d))
        return g, -g


class BinaryCrossEntropy(_Pointwise):
    name = "binary_cross_entropy"

    @staticmethod
    def _logs(p):
        xp = get_array_module(p)
        # log(0) is clamped at -100 like PyTorch; the tiny floor avoids log(0) warnings.
        logp = xp.maximum(xp.log(xp.maximum(p, 1e-45)), -100.0)
        log1mp = xp.maximum(xp.log(xp.maximum(1.0 - p, 1e-45)), -100.0)
        return logp, log1mp

    def _loss(self, p, t, weight):
        xp = get_array_module(p)
        if host_checks(xp):  # PyTorch raises too; out-of-range values give a meaningless loss
            for what, v in (("input", p), ("target", t)):
                # NaN is out of range too, as in PyTorch's check (0 <= v <= 1)
                if v.size and not bool(((v >= 0) & (v <= 1)).all()):
                    raise op_error("binary_cross_entropy", f"{what} values must be in [0, 1] "
                                   "(probabilities); for logits use "
                                   "binary_cross_entropy_with_logits",
                                   **{f"{what}_min": xp.nanmin(v), f"{what}_max": xp.nanmax(v),
                                      "NaN": bool(xp.isnan(v).any())})
        logp, log1mp = self._logs(p)
        loss = -(t * logp + (1.0 - t) * log1mp)
        if not host_checks(xp):  # GPU: out-of-range values give NaN, as _targets explains
            loss = xp.where((p < 0) | (p > 1) | (t < 0) | (t > 1), xp.nan, loss)
        return loss if weight is None else loss * to_dtype(weight, loss.dtype)

    def _grad(self, p, t, needs, weight):
        xp = get_array_module(p)
        gp = gt = None
        if needs[0]:
            gp = (p - t) / xp.maximum(p * (1.0 - p), 1e-12)
        if needs[1]:
            logp, log1mp = self._logs(p)
            gt = log1mp - logp
        if weight is not None:
            w = to_dtype(weight, p.dtype)
            gp = None if gp is None else gp * w
            gt = None if gt is None else gt * w
        return gp, gt


class BinaryCrossEntropyWithLogits(_Pointwise):
    name = "binary_cross_entropy_with_logits"

    @staticmethod
    def _softplus_neg(x):
        xp = get_array_module(x)
        return xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, 0.0)

    def _loss(self, x, t, weight, pos_weight):
        sp = self._softplus_neg(x)
        if pos_weight is not None:
            sp = sp * (1.0 + (to_dtype(pos_weight, x.dtype) - 1.0) * t)
        loss = (1.0 - t) * x + sp
        return loss if weight is None else loss * to_dtype(weight, loss.dtype)

    def _grad(self, x, t, needs, weight, pos_weight):
        xp = get_array_module(x)
        sp = self._softplus_neg(x)
        pw = None if pos_weight is None else to_dtype(pos_weight, x.dtype)
        gx = gt = None
        if needs[0]:
            # sigmoid(-x) = exp(-softplus(x)) without overflow; softplus(x) taken directly
            # (sp + x is inf - inf = NaN at x = -inf)
            sig_neg = xp.exp(-(xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(x, 0.0)))
            lw = 1.0 if pw is None else 1.0 + (pw - 1.0) * t
            gx = (1.0 - t) - lw * sig_neg
        if needs[1]:
            gt = -x if pw is None else -x + (pw - 1.0) * sp
        if weight is not None:
            w = to_dtype(weight, x.dtype)
            gx = None if gx is None else gx * w
            gt = None if gt is None else gt * w
        return gx, gt


class KlDiv(_Pointwise):
    name = "kl_div"

    def _loss(self, x, t, log_target):
        xp = get_array_module(x)
        if log_target:
            return xp.exp(t) * (t - x)
        # PyTorch's xlogy(t, t) - t * x: 0 at t == 0, NaN for a negative target
        zero = t == 0
        return xp.where(zero, 0.0, t * xp.log(xp.where(zero, 1.0, t))) - t * x

    def _grad(self, x, t, needs, log_target):
        xp = get_array_module(x)
        # d/dx does not depend on x: spread it over the broadcast shape (a (1, C) target for
        # (N, C) input) so it sums back to x's shape like every other gradient here
        shape = xp.broadcast_shapes(x.shape, t.shape)
        if log_target:
            et = xp.exp(t)
            return -xp.broadcast_to(et, shape), et * (t - x + 1.0)
        return -xp.broadcast_to(t, shape), xp.log(xp.where(t == 0, 1.0, t)) + 1.0 - x


def _check_shapes(op, input, target):
    """Shapes that do not broadcast raise naming the loss and both shapes; for the
    elementwise-difference losses a target that only broadcasts warns (as PyTorch does)."""
    if target.shape == input.shape:
        return
    if op in _SAME_SHAPE:  # PyTorch refuses to broadcast these: a (4, 1) target is a bug
        raise op_error(op, "target size must be the same as input size",
                       input_shape=input.shape, target_shape=target.shape)
    shape = broadcast_shape(op, input.shape, target.shape)
    if target.size > 1 and op in _SHAPE_WARNED:
        # (4, 1) vs (4,) broadcasts to (4, 4): almost always a bug, so say so.
        warnings.warn(f"{op}: target shape {target.shape} differs from input shape "
                      f"{input.shape}; they broadcast to {shape}, which is likely not "
                      "intended -- reshape one of them to match", UserWarning, stacklevel=4)


def _pointwise(cls, op, input, target, reduction, **params):
    _check_reduction(op, reduction)
    target = _as_tensor(target, input)
    _check_shapes(op, input, target)
    if op in _SHAPE_WARNED and is_floating(target.dtype) and \
            input.dtype.kind in ("iu" if op == "l1_loss" else "iub"):
        # PyTorch promotes an integer input to the float target's dtype (no gradient to lose;
        # l1_loss's bool input stays refused: PyTorch can't subtract bools)
        input = input.astype(target.dtype)
    for name in ("weight", "pos_weight"):
        w = params.get(name)
        if w is not None and broadcast_shape(f"{op} ({name})", input.shape, w.shape) != \
                input.shape:
            raise op_error(op, f"{name} must broadcast to the input's shape",
                           input_shape=input.shape, **{f"{name}_shape": w.shape})
    return cls.apply(input, target, reduction=reduction, **params)


_SHAPE_WARNED = ("mse_loss", "l1_loss", "smooth_l1_loss")
_SAME_SHAPE = ("binary_cross_entropy", "binary_cross_entropy_with_logits")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error ``(input - target) ** 2``, reduced in float32.

    Args:
        input, target: broadcastable floating Tensors; both get gradients.
        reduction: "mean", "sum" or "none".

    Returns:
        The loss in float32 (float64 for float64 input).
    """
    return _pointwise(MseLoss, "mse_loss", input, target, reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean absolute error ``|input - target|`` (gradient ``sign``, 0 at a tie).

    Integer tensors give the exact integer loss with ``reduction="none"`` or ``"sum"`` (the sum
    in int64), as PyTorch's; their mean, and bool input, are refused as in PyTorch."""
    target = _as_tensor(target, input)
    if reduction in ("none", "sum") and input.dtype.kind in "iu" and target.dtype.kind in "iu":
        _check_shapes("l1_loss", input, target)
        d = abs(input - target)
        return d if reduction == "none" else d.sum()
    return _pointwise(L1LossFunction, "l1_loss", input, target, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """Huber-like loss: ``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``.

    Args:
        input, target: broadcastable floating Tensors.
        reduction: "mean", "sum" or "none".
        beta: the switch point (``beta == 0`` gives the L1 loss).
    """
    if beta < 0:
        raise op_error("smooth_l1_loss", "beta must be non-negative", beta=beta)
    return _pointwise(SmoothL1LossFunction, "smooth_l1_loss", input, target, reduction, beta=beta)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of probabilities ``input`` in [0, 1]; each log is clamped at -100.

    Always computed in float32 (unsafe in float16); prefer
    :func:`binary_cross_entropy_with_logits`.

    Args:
        input: probabilities.
        target: targets in [0, 1] of the same shape (gets a gradient when it requires one).
        weight: optional constant rescaling, broadcast to the input.
        reduction: "mean", "sum" or "none".
    """
    return _pointwise(BinaryCrossEntropy, "binary_cross_entropy", input, target, reduction,
                      weight=_data(weight))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: str = "mean") -> Tensor:
    """Sigmoid + binary cross-entropy in one stable expression (log-sum-exp trick).

    Args:
        input: logits.
        target: targets in [0, 1], same shape.
        weight: optional constant rescaling, broadcast to the input.
        pos_weight: optional constant weight of positive examples, broadcast along the last
            (class) dimension.
        reduction: "mean", "sum" or "none".
    """
    return _pointwise(BinaryCrossEntropyWithLogits, "binary_cross_entropy_with_logits", input,
                      target, reduction, weight=_data(weight), pos_weight=_data(pos_weight))


def kl_div(input: Tensor, target: Tensor, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence ``target * (log(target) - input)`` with log-prob ``input``.

    Args:
        input: log-probabilities.
        target: probabilities (log-probabilities if ``log_target``); ``0 * log 0`` is 0.
        reduction: "mean" (over all elements), "batchmean" (sum / batch size, the
            mathematically correct KL), "sum" or "none".
        log_target: whether ``target`` is given in log space.
    """
    _check_reduction("kl_div", reduction, _REDUCTIONS + ("batchmean",))
    target = _as_tensor(target, input)
    _check_shapes("kl_div", input, target)
    red = "sum" if reduction == "batchmean" else reduction
    out = KlDiv.apply(input, target, reduction=red, log_target=bool(log_target))
    if reduction == "batchmean" and input.ndim > 0:
        out = out / input.shape[0]
    return out


# --------------------------------------------------------------------------- similarity
class CosineSimilarityFunction(Function):
    name = "cosine_similarity"

    def forward(self, a, b, axis, eps):
        check_floating("cosine_similarity", a)
        xp = get_array_module(a)
        acc = acc_dtype(xp.result_type(a.dtype, b.dtype))
        # Broadcast first (PyTorch): norms are taken over the broadcast vectors.
        af, bf = xp.broadcast_arrays(to_dtype(a, acc), to_dtype(b, acc))
        na = xp.sqrt((af * af).sum(axis=axis, keepdims=True))
        nb = xp.sqrt((bf * bf).sum(axis=axis, keepdims=True))
        # Each norm is clamped on its own (PyTorch >= 1.12), which keeps the result in [-1, 1].
        cna, cnb = xp.maximum(na, eps), xp.maximum(nb, eps)
        cos = (af * bf).sum(axis=axis, keepdims=True) / (cna * cnb)
        self.axis = axis
        self.save_for_backward(a, b, na, nb, cna, cnb, cos)
        return to_dtype(xp.squeeze(cos, axis=axis), xp.result_type(a.dtype, b.dtype))

    def backward(self, gy):
        saved = [_data(t) for t in self.saved_tensors]
        return run_array_backward(CosineSimilarityBackward, (gy,), self,
                                  saved=saved, axis=self.axis)


class CosineSimilarityBackward(ArrayBackward):
    name = "cosine_similarity_backward"

    def compute(self, gy, needs, saved, axis):
        xp = get_array_module(gy)
        a, b, na, nb, cna, cnb, cos = saved
        acc = cos.dtype
        g = xp.expand_dims(to_dtype(gy, acc), axis)
        af, bf = xp.broadcast_arrays(to_dtype(a, acc), to_dtype(b, acc))
        out = []
        if needs[0]:
            ga = bf / (cna * cnb) - cos * af / (cna * xp.where(na > 0, na, 1.0))
            out.append(to_dtype(sum_to_array(g * ga, a.shape), a.dtype))
        if needs[1]:
            gb = af / (cna * cnb) - cos * bf / (cnb * xp.where(nb > 0, nb, 1.0))
            out.append(to_dtype(sum_to_array(g * gb, b.shape), b.dtype))
        return tuple(out)


def cosine_similarity(a: Tensor, b: Tensor, axis: int = 1, eps: float = 1e-8, *,
                      dim: int | None = None) -> Tensor:
    """Cosine of the angle between ``a`` and ``b`` along ``axis`` (broadcasting).

    ``sum(a * b) / (max(|a|, eps) * max(|b|, eps))``, computed in float32.

    Args:
        a, b: broadcastable floating Tensors.
        axis: the axis of the vectors.
        eps: lower bound of each norm.
        dim: PyTorch's name for ``axis``.

    Returns:
        A Tensor with ``axis`` removed, in the inputs' dtype.
    """
    if dim is not None:
        if axis not in (1, dim):
            raise TypeError(f"cosine_similarity: got axis={axis} and dim={dim}; pass one")
        axis = dim
    b = _as_tensor(b, a)
    shape = a.shape if b.shape == a.shape else broadcast_shape("cosine_similarity", a.shape,
                                                                b.shape)
    axis = check_axis(axis, len(shape), "cosine_similarity")
    return CosineSimilarityFunction.apply(a, b, axis=axis, eps=eps)


# --------------------------------------------------------------------------- CTC
def _logaddexp(xp, *terms):
    """``log(sum(exp(terms)))`` elementwise; -inf (no NaN) where every term is -inf."""
    m = terms[0]
    for t in terms[1:]:
        m = xp.maximum(m, t)
    base = xp.where(m == -math.inf, 0.0, m)
    total = xp.exp(terms[0] - base)
    for t in terms[1:]:
        total += xp.exp(t - base)
    with np.errstate(divide="ignore"):
        return xp.log(total) + base


def _shift(xp, a, k, fill):
    """``a`` moved ``k`` places along its last axis (right for k > 0), ``fill`` shifted in."""
    out = xp.full(a.shape, fill, dtype=a.dtype)
    if k > 0:
        out[..., k:] = a[..., :-k]
    else:
        out[..., :k] = a[..., -k:]
    return out


class CTCLossFunction(Function):
    """The negative log-likelihood of each target under all its CTC alignments: the forward
    (alpha) recursion in log space over the extended label sequence (a blank between labels
    and at both ends), vectorised over the batch; backward runs the beta recursion and returns
    minus each class's posterior occupancy, the exact gradient with respect to ``log_probs``."""

    name = "ctc_loss"

    def forward(self, lp, targets, in_lens, tgt_lens, blank, reduction, zero_infinity):
        check_floating("ctc_loss", lp)
        xp = get_array_module(lp)
        acc = acc_dtype(lp.dtype)
        n_t, n = lp.shape[:2]
        s_max = targets.shape[1]
        ext = xp.full((n, 2 * s_max + 1), blank, dtype=np.int64)
        ext[:, 1::2] = targets
        width = ext.shape[1]
        pos = xp.arange(width)
        valid = pos[None, :] < (2 * tgt_lens + 1)[:, None]
        # a label may be reached from two places back unless it repeats the label there
        skip = (pos[None, :] >= 2) & (ext != blank) & (ext != _shift(xp, ext, 2, blank))
        emit = xp.take_along_axis(to_dtype(lp, acc),
                                  xp.broadcast_to(ext[None], (n_t, n, width)), axis=2)
        ninf = acc.type(-math.inf)
        alpha = xp.full((n_t, n, width), ninf, dtype=acc)
        if n_t:
            start = valid & (pos[None, :] < 2)
            alpha[0] = xp.where(start, emit[0], ninf)
        for t in range(1, n_t):
            prev = alpha[t - 1]
            new = _logaddexp(xp, prev, _shift(xp, prev, 1, ninf),
                             xp.where(skip, _shift(xp, prev, 2, ninf), ninf)) + emit[t]
            new = xp.where(valid, new, ninf)
            alpha[t] = xp.where((t < in_lens)[:, None], new, prev)  # frozen past the input
        rows = xp.arange(n)
        last = alpha[-1] if n_t else xp.full((n, width), ninf, dtype=acc)
        end_blank = last[rows, 2 * tgt_lens]
        end_label = xp.where(tgt_lens > 0, last[rows, xp.maximum(2 * tgt_lens - 1, 0)], ninf)
        nll = -_logaddexp(xp, end_blank, end_label)
        if n_t == 0 or not bool((in_lens > 0).all()):  # no frames: only an empty target fits
            nll = xp.where(in_lens == 0, xp.where(tgt_lens == 0, 0.0, math.inf), nll)
        self.dead = xp.isinf(nll) if zero_infinity else None
        if zero_infinity:
            nll = xp.where(self.dead, 0.0, nll).astype(acc, copy=False)
        self.saved_state = (alpha, emit, ext, valid, skip, nll, in_lens, tgt_lens)
        self.reduction, self.lp_meta = reduction, (lp.shape, lp.dtype)
        if reduction == "none":
            return nll
        if reduction == "sum":
            return nll.sum()
        return (nll / xp.maximum(tgt_lens, 1).astype(acc)).mean()

    def backward(self, gy):
        return run_array_backward(CTCLossBackward, (gy,), self, state=self.saved_state,
                                  dead=self.dead, reduction=self.reduction,
                                  lp_meta=self.lp_meta)


class CTCLossBackward(ArrayBackward):
    name = "ctc_loss_backward"

    def compute(self, gy, needs, state, dead, reduction, lp_meta):
        alpha, emit, ext, valid, skip, nll, in_lens, tgt_lens = state
        xp = get_array_module(alpha)
        (n_t, n, n_c), dtype = lp_meta
        width = ext.shape[1]
        ninf = alpha.dtype.type(-math.inf)
        rows, pos = xp.arange(n), xp.arange(width)
        ends = valid & ((pos[None, :] == (2 * tgt_lens)[:, None])
                        | (pos[None, :] == (2 * tgt_lens - 1)[:, None]))
        skip_from = _shift(xp, skip, -2, False)  # s -> s + 2 allowed
        occ = xp.zeros((n_t, n, width), dtype=alpha.dtype)
        beta = xp.full((n, width), ninf, dtype=alpha.dtype)
        scale = gy.astype(alpha.dtype) if reduction != "mean" else \
            gy.astype(alpha.dtype) / (n * xp.maximum(tgt_lens, 1))
        scale = xp.broadcast_to(scale, (n,))
        finite = xp.isfinite(nll) if dead is None else ~dead
        for t in range(n_t - 1, -1, -1):
            nxt = _logaddexp(xp, beta, _shift(xp, beta, -1, ninf),
                             xp.where(skip_from, _shift(xp, beta, -2, ninf), ninf)) + emit[t]
            beta = xp.where((t == in_lens - 1)[:, None], xp.where(ends, emit[t], ninf),
                            xp.where((t < in_lens - 1)[:, None] & valid, nxt, ninf))
            # posterior occupancy of each extended position
            occ[t] = xp.where(finite[:, None], xp.exp(alpha[t] + beta - emit[t] + nll[:, None]),
                              0.0)
        # minus the occupancy summed per class (the blank and repeated labels share a class)
        lin = (xp.arange(n_t)[:, None, None] * n + rows[None, :, None]) * n_c + ext[None]
        grad = scatter_add_flat(xp, n_t * n * n_c, xp.broadcast_to(lin, occ.shape),
                                occ * -scale[None, :, None], alpha.dtype)
        return (to_dtype(grad.reshape(n_t, n, n_c), dtype),)


def _lengths(v, n, what):
    if isinstance(v, Tensor):
        v = v._data
    arr = np.asarray(v.get() if hasattr(v, "get") else v)
    if arr.dtype.kind not in "iu" and arr.size:
        raise op_error("ctc_loss", f"{what} must be integers", **{what: arr.dtype})
    arr = arr.astype(np.int64).reshape(-1)
    if arr.size != n:
        raise op_error("ctc_loss", f"{what} must have one entry per batch element",
                       **{f"{what}_shape": arr.shape, "batch": n})
    return arr


def ctc_loss(log_probs: Tensor, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss (``F.ctc_loss``).

    Args:
        log_probs: ``(T, N, C)`` (or unbatched ``(T, C)``) log-probabilities, e.g. a
            ``log_softmax`` over C.
        targets: ``(N, S)`` padded label indices, or all targets concatenated (1-D); never
            ``blank``.
        input_lengths, target_lengths: ``(N,)`` integers (Tensors, sequences or ints).
        blank: the blank class.
        reduction: ``"mean"`` (each loss divided by its target length, then averaged),
            ``"sum"`` or ``"none"``.
        zero_infinity: impossible alignments give 0 (and no gradient) instead of inf.

    Returns:
        The loss in float32 (float64 for float64 input). Its gradient is the exact derivative
        with respect to ``log_probs`` (PyTorch's is the gradient through a ``log_softmax``
        over C, which equals it only once that log_softmax is differentiated too).
    """
    _check_reduction("ctc_loss", reduction)
    if log_probs.ndim == 2:  # unbatched: one sequence, a 0-d loss for every reduction
        t = targets._data if isinstance(targets, Tensor) else targets
        t = np.asarray(t.get() if hasattr(t, "get") else t)
        tgt_len = _lengths(target_lengths, 1, "target_lengths")
        loss = ctc_loss(log_probs.reshape((log_probs.shape[0], 1, log_probs.shape[1])),
                        t.reshape((1, -1)), _lengths(input_lengths, 1, "input_lengths"),
                        tgt_len, blank, "none", zero_infinity).reshape(())
        return loss / max(int(tgt_len[0]), 1) if reduction == "mean" else loss
    if log_probs.ndim != 3:
        raise op_error("ctc_loss", "log_probs must be (T, N, C) or unbatched (T, C)",
                       shape=log_probs.shape)
    n_t, n, n_c = log_probs.shape
    if not 0 <= blank < n_c:
        raise op_error("ctc_loss", f"blank must be in [0, {n_c})", blank=blank)
    in_lens = _lengths(input_lengths, n, "input_lengths")
    tgt_lens = _lengths(target_lengths, n, "target_lengths")
    t = targets._data if isinstance(targets, Tensor) else targets
    t = np.asarray(t.get() if hasattr(t, "get") else t)
    if t.dtype.kind not in "iu" and t.size:
        raise op_error("ctc_loss", "targets must be integers", dtype=t.dtype)
    t = t.astype(np.int64)
    if t.ndim == 1:  # concatenated: cut per sample
        if t.size != tgt_lens.sum():
            raise op_error("ctc_loss", "1-D targets must hold sum(target_lengths) labels",
                           targets=t.shape, total=int(tgt_lens.sum()))
        padded = np.full((n, int(tgt_lens.max(initial=0))), blank, dtype=np.int64)
        for i, (a, b) in enumerate(zip(np.cumsum(tgt_lens) - tgt_lens, tgt_lens)):
            padded[i, :b] = t[a:a + b]
        t = padded
    elif t.ndim != 2 or t.shape[0] != n:
        raise op_error("ctc_loss", "targets must be (N, S) or 1-D", targets=t.shape, batch=n)
    if (in_lens < 0).any() or (in_lens > n_t).any():
        raise op_error("ctc_loss", f"input_lengths must be in [0, T={n_t}]",
                       input_lengths=in_lens.tolist())
    if (tgt_lens < 0).any() or (tgt_lens > t.shape[1]).any():
        raise op_error("ctc_loss", f"target_lengths must be in [0, S={t.shape[1]}]",
                       target_lengths=tgt_lens.tolist())
    used = np.arange(t.shape[1])[None, :] < tgt_lens[:, None]
    if ((t < 0) | (t >= n_c) | (t == blank))[used].any():
        raise op_error("ctc_loss", f"targets must be classes in [0, {n_c}) other than the "
                       f"blank ({blank})")
    xp = get_array_module(log_probs._data)
    t = xp.asarray(np.where(used, t, blank))
    return CTCLossFunction.apply(log_probs, targets=t, in_lens=xp.asarray(in_lens),
                                 tgt_lens=xp.asarray(tgt_lens), blank=int(blank),
                                 reduction=reduction, zero_infinity=bool(zero_infinity))
