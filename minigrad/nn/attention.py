"""``MultiheadAttention`` with PyTorch's parameter layout (``in_proj_weight``, ``out_proj``)."""

from __future__ import annotations

import math

from .. import functional as F
from .._backend import get_array_module
from .._backend.dtypes import bool_
from ..core.tensor import Tensor
from ..core.creation import ones, zeros
from . import init
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention"]


def _additive(mask: Tensor, dtype) -> Tensor:
    """A boolean mask (True = may not attend) as 0 / -inf; float masks pass through."""
    if mask.dtype != bool_:
        return mask
    xp = get_array_module(mask._data)
    return Tensor._make(xp.where(mask._data, float("-inf"), 0.0).astype(dtype), False, None, 0)


class MultiheadAttention(Module):
    """Multi-head scaled dot-product attention (Vaswani et al.).

    Args:
        embed_dim: model width E (of the query, and of key and value unless kdim/vdim).
        num_heads: heads H; E must be divisible by H.
        dropout: dropout on the attention weights while training.
        bias: learn ``in_proj_bias`` and ``out_proj.bias`` (both start at zero).
        add_bias_kv: learn ``bias_k``/``bias_v`` ``(1, 1, E)``, appended to the projected keys
            and values as one more position.
        add_zero_attn: append a zero key and value (per head) as one more position.
        kdim, vdim: key and value widths; when either differs from E the projections are
            ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight`` instead of
            ``in_proj_weight`` (PyTorch's layout).
        batch_first: inputs are ``(N, L, E)`` instead of ``(L, N, E)``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights)``; weights are
    ``(N, L, S)`` averaged over heads (``(N, H, L, S)`` if not averaged) or None when
    ``need_weights=False`` (then the fused ``F.scaled_dot_product_attention`` runs). Boolean
    masks mark positions that may *not* be attended (True = masked); float masks are added.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        if embed_dim < 1 or num_heads < 1:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be >= 1, got "
                             f"{embed_dim} and {num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible "
                             f"by num_heads ({num_heads})")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = float(dropout)
        self.batch_first = batch_first
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = init._empty_param((3 * embed_dim, embed_dim), device, dtype)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = init._empty_param((embed_dim, embed_dim), device, dtype)
            self.k_proj_weight = init._empty_param((embed_dim, self.kdim), device, dtype)
            self.v_proj_weight = init._empty_param((embed_dim, self.vdim), device, dtype)
            self.register_parameter("in_proj_weight", None)
        if add_bias_kv:
            self.bias_k = init._empty_param((1, 1, embed_dim), device, dtype)
            self.bias_v = init._empty_param((1, 1, embed_dim), device, dtype)
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)
        self.add_zero_attn = add_zero_attn
        if bias:
            self.in_proj_bias = init._empty_param((3 * embed_dim,), device, dtype)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _heads(self, t):
        # (N, L, E) -> (N, H, L, head_dim)
        n, length = t.shape[0], t.shape[1]
        return t.reshape(n, length, self.num_heads, self.head_dim).transpose(0, 2, 1, 3)

    def _project(self, query, key, value):
        """q, k, v as ``(N, L, E)``, ``(N, S, E)``, ``(N, S, E)``."""
        w, b = self.in_proj_weight, self.in_proj_bias
        if w is not None and query is key and key is value:  # self-attention: one GEMM
            return F.split(F.linear(query, w, b), 3, axis=-1)
        # One split each (a single concat in backward) rather than three slicing ops.
        ws = F.split(w, 3, axis=0) if w is not None else (
            self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        bs = F.split(b, 3, axis=0) if b is not None else (None, None, None)
        return [F.linear(t, wi, bi) for t, wi, bi in zip((query, key, value), ws, bs)]

    @staticmethod
    def _extend_masks(attn_mask, key_padding_mask):
        """The masks with one more (unmasked) key position, for bias_k/bias_v or a zero
        attention position."""
        def one_more(m):
            return None if m is None else F.pad(m, [(0, 0)] * (m.ndim - 1) + [(0, 1)])
        return one_more(attn_mask), one_more(key_padding_mask)

    def _mask(self, attn_mask, key_padding_mask, is_causal, n, length, s, dtype, device):
        mask = None
        if attn_mask is not None:
            mask = _additive(attn_mask, dtype)
            if mask.ndim == 3:  # (N * H, L, S)
                mask = mask.reshape(n, self.num_heads, length, s)
        elif is_causal:
            tri = ones((length, s), dtype=bool_, device=device)
            xp = get_array_module(tri._data)
            mask = _additive(Tensor._make(xp.triu(tri._data, 1), False, None, 0), dtype)
        if key_padding_mask is not None:
            kpm = _additive(key_padding_mask, dtype).reshape(n, 1, 1, s)
            mask = kpm if mask is None else mask + kpm
        return mask

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        same = query is key and key is value
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif query.ndim != 3:
            raise ValueError(f"MultiheadAttention: expected 2-D or 3-D query, got shape "
                             f"{query.shape}")
        if not self.batch_first or unbatched:
            query, key, value = query.swapaxes(0, 1), key.swapaxes(0, 1), value.swapaxes(0, 1)
        if query.shape[-1] != self.embed_dim or key.shape[-1] != self.kdim or \
                value.shape[-1] != self.vdim:
            raise ValueError(f"MultiheadAttention: query/key/value must have {self.embed_dim}/"
                             f"{self.kdim}/{self.vdim} features, got {query.shape}, "
                             f"{key.shape}, {value.shape}")
        if same:  # keep the identity through the layout changes (one fused projection)
            key = value = query
        n, length, s = query.shape[0], query.shape[1], key.shape[1]
        q, k, v = self._project(query, key, value)
        if self.bias_k is not None:
            k = F.concat([k, self.bias_k.broadcast_to((n, 1, self.embed_dim))], axis=1)
            v = F.concat([v, self.bias_v.broadcast_to((n, 1, self.embed_dim))], axis=1)
            attn_mask, key_padding_mask = self._extend_masks(attn_mask, key_padding_mask)
            s += 1
        q, k, v = self._heads(q), self._heads(k), self._heads(v)
        if self.add_zero_attn:
            zero = zeros((n, self.num_heads, 1, self.head_dim), dtype=k.dtype, device=k.device)
            k, v = F.concat([k, zero], axis=2), F.concat([v, zero], axis=2)
            attn_mask, key_padding_mask = self._extend_masks(attn_mask, key_padding_mask)
            s += 1
        # A plain causal mask goes to the fused op as is_causal (no mask tensor to build).
        fused_causal = is_causal and not need_weights and attn_mask is None and \
            key_padding_mask is None
        mask = None if fused_causal else self._mask(attn_mask, key_padding_mask, is_causal, n,
                                                    length, s, q.dtype, q.device)
        p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = F.matmul(q, k.swapaxes(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
            if mask is not None:
                scores = scores + mask
            attn = F.softmax(scores, -1)
            weights = attn.mean(axis=1) if average_attn_weights else attn
            out = F.matmul(F.dropout(attn, p, True) if p else attn, v)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                                 is_causal=fused_causal)
        out = self.out_proj(out.transpose(0, 2, 1, 3).reshape(n, length, self.embed_dim))
        if not self.batch_first or unbatched:
            out = out.swapaxes(0, 1)
        if unbatched:
            out = out.squeeze(1)
            weights = None if weights is None else weights.squeeze(0)
        return out, weights

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")

