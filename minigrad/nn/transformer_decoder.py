"""Transformer decoder and the encoder-decoder model: ``TransformerDecoderLayer``,
``TransformerDecoder`` and ``Transformer``, with PyTorch's constructor signatures, submodule
names (``self_attn``, ``multihead_attn``, ``linear1``/``linear2``, ``norm1``-``norm3``,
``encoder``/``decoder``) and forward semantics, so PyTorch state dicts load as they are.

The encoder half is :mod:`.transformer`; this file reuses its validation and activation
helpers so both halves reject bad arguments with the same words."""

from __future__ import annotations

import copy

from .._backend import get_array_module
from .._backend.dtypes import get_default_dtype, is_floating, normalize_dtype
from ..core.creation import full
from ..core.tensor import Tensor
from . import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .norm import LayerNorm
from .transformer import (
    TransformerEncoder,
    TransformerEncoderLayer,
    _activation_fn,
    _check_layer_args,
)

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer"]


def _check_pair(op: str, a, b, names, d_model: int, batch_first: bool) -> None:
    """``a`` and ``b`` are both unbatched ``(L, E)`` or both batched with one batch size, and
    both have ``d_model`` features; otherwise a ValueError naming ``op`` and the shapes."""
    (na, nb), shown = names, f"{names[0]} {tuple(a.shape)} and {names[1]} {tuple(b.shape)}"
    if a.ndim not in (2, 3) or a.ndim != b.ndim:
        raise ValueError(f"{op}: {na} and {nb} must both be 2-D (unbatched) or both 3-D "
                         f"(batched), got {shown}")
    batch = 0 if batch_first else 1
    if a.ndim == 3 and a.shape[batch] != b.shape[batch]:
        raise ValueError(f"{op}: {na} and {nb} must have the same batch size (axis {batch} with "
                         f"batch_first={batch_first}), got {shown}")
    if a.shape[-1] != d_model or b.shape[-1] != d_model:
        raise ValueError(f"{op}: {na} and {nb} must have d_model={d_model} features (last "
                         f"axis), got {shown}")


def _check_model_args(d_model, nhead, dim_feedforward, dropout, activation,
                      num_encoder_layers, num_decoder_layers) -> None:
    """Validate what ``Transformer`` builds itself (a stack given as custom_* is None here)."""
    if num_encoder_layers is None and num_decoder_layers is None:
        return  # both stacks are the user's: d_model only sizes the forward check
    _check_layer_args("Transformer", d_model, nhead, dim_feedforward, dropout)
    _activation_fn("Transformer", activation)
    for name, n in (("num_encoder_layers", num_encoder_layers),
                    ("num_decoder_layers", num_decoder_layers)):
        if n is not None and (isinstance(n, bool) or not hasattr(type(n), "__index__")
                              or n < 1):
            raise ValueError(f"Transformer: {name} must be an int >= 1, got {n!r}")


class TransformerDecoderLayer(Module):
    """Masked self-attention, attention over the encoder's output (``memory``), then a
    two-layer feed-forward block; each with a residual connection, dropout and LayerNorm
    (Vaswani et al.).

    Args:
        d_model: model width E.
        nhead: attention heads (E must be divisible by it).
        dim_feedforward: width of the feed-forward block.
        dropout: dropout after each block, inside the feed-forward block and on the attention
            weights.
        activation: ``"relu"``, ``"gelu"`` or a callable.
        layer_norm_eps: LayerNorm's epsilon.
        batch_first: inputs are ``(N, T, E)`` instead of ``(T, N, E)``.
        norm_first: pre-norm (``x + block(norm(x))``) instead of post-norm
            (``norm(x + block(x))``).
        bias: learn the biases of the linear layers and LayerNorms.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)``: boolean
    masks are True where attention is *not* allowed; float masks are added to the scores. A
    given mask is always applied (``*_is_causal`` is only a hint then); without a mask,
    ``*_is_causal=True`` applies the causal mask (PyTorch raises there instead).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        _check_layer_args("TransformerDecoderLayer", d_model, nhead, dim_feedforward, dropout)
        kw = {"device": device, "dtype": dtype}
        attn = {"dropout": dropout, "bias": bias, "batch_first": batch_first, **kw}
        self.self_attn = MultiheadAttention(d_model, nhead, **attn)
        self.multihead_attn = MultiheadAttention(d_model, nhead, **attn)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_fn("TransformerDecoderLayer", activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        _check_pair("TransformerDecoderLayer", tgt, memory, ("tgt", "memory"),
                    self.self_attn.embed_dim, self.self_attn.batch_first)
        sa = (tgt_mask, tgt_key_padding_mask, bool(tgt_is_causal))
        mha = (memory, memory_mask, memory_key_padding_mask, bool(memory_is_causal))
        x = tgt
        if self.norm_first:  # Xiong et al. 2020, Fig. 1
            x = x + self._sa_block(self.norm1(x), *sa)
            x = x + self._mha_block(self.norm2(x), *mha)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, *sa))
        x = self.norm2(x + self._mha_block(x, *mha))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        out = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                             need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        out = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                  key_padding_mask=key_padding_mask, need_weights=False,
                                  is_causal=is_causal)[0]
        return self.dropout2(out)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` applied in turn (each attending to the same
    ``memory``), then ``norm`` if given.

    Args:
        decoder_layer: a :class:`TransformerDecoderLayer` (deep-copied ``num_layers`` times:
            the copies start with equal weights and train independently).
        num_layers: number of layers.
        norm: optional final module (e.g. a LayerNorm).

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)``.
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm=None):
        super().__init__()
        if isinstance(num_layers, bool) or not hasattr(type(num_layers), "__index__") or \
                num_layers < 1:
            raise ValueError(f"TransformerDecoder: num_layers must be an int >= 1, got "
                             f"{num_layers!r}")
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        # PyTorch detects a causal tgt_mask to pick a kernel; a given mask is applied as it is
        # here, so only "no mask + hint" matters and None means False.
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """The encoder-decoder Transformer (Vaswani et al.): a :class:`TransformerEncoder` over
    ``src`` whose output (``memory``) a :class:`TransformerDecoder` attends to while decoding
    ``tgt``. Both stacks end with a LayerNorm; every weight matrix starts Xavier-uniform.

    Args:
        d_model: model width E.
        nhead: attention heads (E must be divisible by it).
        num_encoder_layers, num_decoder_layers: depth of each stack.
        dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias:
            as in :class:`TransformerEncoderLayer` / :class:`TransformerDecoderLayer`.
        custom_encoder, custom_decoder: modules used instead of the built stacks (called as
            ``encoder(src, mask=, src_key_padding_mask=, is_causal=)`` and
            ``decoder(tgt, memory, tgt_mask=, ...)``).

    ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
    src_is_causal=None, tgt_is_causal=None, memory_is_causal=False)`` returns the decoder's
    output, shaped like ``tgt``.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", custom_encoder=None, custom_decoder=None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        _check_model_args(d_model, nhead, dim_feedforward, dropout, activation,
                          None if custom_encoder is not None else num_encoder_layers,
                          None if custom_decoder is not None else num_decoder_layers)
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        kw = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self) -> None:
        # As PyTorch: every matrix (custom stacks' too) re-drawn Xavier-uniform, replacing the
        # layers' own defaults (Linear's Kaiming), so both frameworks start from one law.
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        _check_pair("Transformer", src, tgt, ("src", "tgt"), self.d_model, self.batch_first)
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """A ``(sz, sz)`` causal mask: ``-inf`` above the diagonal (future positions), 0 on
        and below it; of the default dtype (``mg.get_default_dtype()``) unless ``dtype`` (a
        floating dtype) is given."""
        if isinstance(sz, bool) or not hasattr(type(sz), "__index__") or sz < 0:
            raise ValueError(f"Transformer.generate_square_subsequent_mask: sz must be an "
                             f"int >= 0, got {sz!r}")
        dtype = get_default_dtype() if dtype is None else normalize_dtype(dtype)
        if not is_floating(dtype):
            raise ValueError(f"Transformer.generate_square_subsequent_mask: dtype must be a "
                             f"floating dtype (the mask holds -inf), got {dtype}")
        mask = full((sz, sz), float("-inf"), dtype=dtype, device=device)
        xp = get_array_module(mask._data)
        return Tensor._make(xp.triu(mask._data, 1), False, None, 0)
