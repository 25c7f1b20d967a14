"""Scaled dot-product attention as one Function.

The two products run through ``_backend.kernels.matmul`` (float32 accumulation for float16 /
bfloat16, invariant 4); the scores and their softmax are float32, so ``QK^T`` of float16 inputs
cannot overflow in the softmax. Rows whose every key is masked give zeros, not NaN.
"""

from __future__ import annotations

import math

from .._backend import device_of, get_array_module, kernels
from .._backend import random as _random
from .._backend.dtypes import float32
from ..core.function import Function
from ..core.modes import dispatch_policy
from ..core.tensor import Tensor
from ._array_backward import ArrayBackward, run_array_backward, sum_to_array
from ._utils import acc_dtype, check_floating, op_error

__all__ = ["scaled_dot_product_attention"]


def _t(a):
    return a.swapaxes(-1, -2)


def _check_one_dtype(q, k, v):
    if not q.dtype == k.dtype == v.dtype:
        raise op_error("scaled_dot_product_attention", "q, k and v must share a dtype; cast "
                       "them (or run under amp.autocast)", q=q.dtype, k=k.dtype, v=v.dtype)


class ScaledDotProductAttention(Function):
    name = "scaled_dot_product_attention"

    def forward(self, q, k, v, mask, dropout_p, is_causal, scale):
        _check_one_dtype(q, k, v)
        xp = get_array_module(q)
        s = _scores(q, k, mask, is_causal, scale)
        m = s.max(axis=-1, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0.0)  # fully masked rows: avoid -inf - -inf
        p = xp.exp(s - m)
        total = p.sum(axis=-1, keepdims=True)
        denom = xp.where(total > 0, total, 1.0)
        p /= denom
        keep = None
        if dropout_p > 0.0:
            gen = _random.generator(device_of(q))
            keep = gen.random(p.shape, dtype=float32) >= dropout_p
        self.drop_factor = 0.0 if dropout_p >= 1.0 else 1.0 / (1.0 - dropout_p)
        pd = p if keep is None else p * _drop(keep, p.dtype, self.drop_factor)
        self.scale, self.is_causal = scale, is_causal
        self.mask_shape = None if mask is None else mask.shape
        # Saved for backward: the inputs and per-row softmax statistics, not the float32
        # (..., L, S) probabilities: backward recomputes them bit-identically (one more QK^T,
        # as flash attention does), so an fp16 step keeps only fp16 activations, and dropout
        # keeps a bool mask.
        self.save_for_backward(q, k, v, mask, m, denom, keep)
        return kernels.matmul(pd.astype(v.dtype, copy=False), v)

    def backward(self, go):
        q, k, v, mask, m, denom, keep = [t._data if isinstance(t, Tensor) else t
                                         for t in self.saved_tensors]
        p = get_array_module(q).exp(_scores(q, k, mask, self.is_causal, self.scale) - m)
        p /= denom
        drop = None if keep is None else _drop(keep, p.dtype, self.drop_factor)
        return run_array_backward(
            AttentionBackward, (go,), self, q=q, k=k, v=v, p=p, drop=drop,
            scale=self.scale, mask_shape=self.mask_shape)


def _scores(q, k, mask, is_causal, scale):
    """``q k^T * scale`` in the accumulation dtype with the mask applied (-inf where masked)."""
    xp = get_array_module(q)
    acc = acc_dtype(q.dtype)
    # Scaling q first keeps float16 scores in range before they reach float32.
    s = kernels.matmul(q * scale, _t(k)).astype(acc, copy=False)
    keep = None
    if is_causal:
        keep = xp.tril(xp.ones((q.shape[-2], k.shape[-2]), dtype=bool))
    if mask is not None:
        if mask.dtype == bool:
            keep = mask
        else:
            s = s + mask.astype(acc, copy=False)
    if keep is not None:
        s = xp.where(keep, s, -xp.inf)
    return s


def _drop(keep, dtype, factor):
    d = keep.astype(dtype)
    d *= factor
    return d


class AttentionBackward(ArrayBackward):
    name = "scaled_dot_product_attention_backward"

    def compute(self, go, needs, q, k, v, p, drop, scale, mask_shape):
        out = []
        pd = p if drop is None else p * drop
        go = go.astype(v.dtype, copy=False)
        if needs[0] or needs[1] or needs[3]:
            dp = kernels.matmul(go, _t(v)).astype(p.dtype, copy=False)
            if drop is not None:
                dp *= drop
            ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
            dsl = (ds * scale).astype(q.dtype, copy=False)
            if needs[0]:
                out.append(sum_to_array(kernels.matmul(dsl, k), q.shape))
            if needs[1]:
                out.append(sum_to_array(kernels.matmul(_t(dsl), q), k.shape))
        if needs[2]:
            gv = kernels.matmul(_t(pd.astype(v.dtype, copy=False)), go)
            out.append(sum_to_array(gv, v.shape))
        if needs[3]:
            out.append(sum_to_array(ds, mask_shape))
        return tuple(out)


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """``softmax(q k^T * scale + mask) v`` over the last two dims, batch dims broadcasting.

    Args:
        q: queries (..., L, E).
        k: keys (..., S, E).
        v: values (..., S, Ev).
        attn_mask: broadcastable to (..., L, S): bool (True = attend) or an additive float
            mask (which gets a gradient when it requires one).
        dropout_p: dropout probability on the attention weights (minigrad's global generator).
        is_causal: attend only to keys ``j <= i`` (top-left aligned); excludes ``attn_mask``.
        scale: score scale, ``1 / sqrt(E)`` by default.

    Returns:
        (..., L, Ev) in the inputs' dtype.
    """
    for t in (q, k, v):
        check_floating("scaled_dot_product_attention", t)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] \
            or k.shape[-2] != v.shape[-2]:
        raise op_error("scaled_dot_product_attention", "expects q (..., L, E), k (..., S, E), "
                       "v (..., S, Ev)", q_shape=q.shape, k_shape=k.shape, v_shape=v.shape)
    if dispatch_policy.get() is None:
        # under autocast the policy casts q, k and v to one dtype first (checked in forward)
        _check_one_dtype(q, k, v)
    if is_causal and attn_mask is not None:
        raise op_error("scaled_dot_product_attention", "pass either attn_mask or is_causal, "
                       "not both (fold the causal mask into attn_mask)")
    if not 0.0 <= dropout_p <= 1.0:
        raise op_error("scaled_dot_product_attention", "dropout_p must be in [0, 1]",
                       dropout_p=dropout_p)
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        attn_mask = Tensor(attn_mask, device=q.device)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    return ScaledDotProductAttention.apply(q, k, v, attn_mask, dropout_p=float(dropout_p),
                                           is_causal=bool(is_causal), scale=float(scale))
