"""Transformer encoder layers: ``TransformerEncoderLayer`` and ``TransformerEncoder``, with
PyTorch's constructor signatures, submodule names (``self_attn``, ``linear1``, ``linear2``,
``norm1``, ``norm2``) and forward semantics, so PyTorch state dicts load as they are."""

from __future__ import annotations

import copy
import numbers

from .. import functional as F
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .norm import LayerNorm

__all__ = ["TransformerEncoder", "TransformerEncoderLayer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _check_layer_args(layer: str, d_model, nhead, dim_feedforward, dropout) -> None:
    """Reject bad layer sizes up front, naming ``layer`` (not the MultiheadAttention inside)."""
    for name, value in (("d_model", d_model), ("nhead", nhead),
                        ("dim_feedforward", dim_feedforward)):
        # __index__: Python and NumPy ints, not floats (8.0 would fail later, deep in a reshape).
        if isinstance(value, bool) or not hasattr(type(value), "__index__") or value < 1:
            raise ValueError(f"{layer}: {name} must be a positive int, got {value!r}")
    if d_model % nhead:
        raise ValueError(f"{layer}: d_model ({d_model}) must be divisible by nhead ({nhead})")
    if not isinstance(dropout, numbers.Real) or not 0.0 <= dropout <= 1.0:
        raise ValueError(f"{layer}: dropout must be in [0, 1], got {dropout!r}")


def _activation_fn(layer: str, activation):
    """``"relu"``/``"gelu"`` as the function; a callable as it is."""
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"{layer}: activation must be 'relu', 'gelu' or a callable, got "
                             f"{activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise ValueError(f"{layer}: activation must be 'relu', 'gelu' or a callable, got "
                         f"{activation!r}")
    return activation


class TransformerEncoderLayer(Module):
    """Self-attention followed by a two-layer feed-forward block, each with a residual
    connection, dropout and LayerNorm (Vaswani et al.).

    Args:
        d_model: model width E.
        nhead: attention heads (E must be divisible by it).
        dim_feedforward: width of the feed-forward block.
        dropout: dropout after attention, inside and after the feed-forward block (and on the
            attention weights).
        activation: ``"relu"``, ``"gelu"`` or a callable.
        layer_norm_eps: LayerNorm's epsilon.
        batch_first: inputs are ``(N, S, E)`` instead of ``(S, N, E)``.
        norm_first: pre-norm (``x + sa(norm1(x))``) instead of post-norm
            (``norm1(x + sa(x))``).
        bias: learn the biases of the linear layers and LayerNorms.

    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``: boolean masks
    are True where attention is *not* allowed; float masks are added to the scores.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        _check_layer_args("TransformerEncoderLayer", d_model, nhead, dim_feedforward, dropout)
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation_fn("TransformerEncoderLayer", activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        out = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                             need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then ``norm`` if given.

    Args:
        encoder_layer: a :class:`TransformerEncoderLayer` (deep-copied ``num_layers`` times:
            the copies start with equal weights and train independently).
        num_layers: number of layers.
        norm: optional final module (e.g. a LayerNorm for pre-norm stacks).
        enable_nested_tensor, mask_check: PyTorch's fast-path switches, accepted (minigrad
            runs one path).

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``.
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"TransformerEncoder: num_layers must be >= 1, got {num_layers}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)
