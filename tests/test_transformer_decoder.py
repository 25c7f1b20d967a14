"""``nn.TransformerDecoderLayer``, ``nn.TransformerDecoder`` and ``nn.Transformer`` against
PyTorch on copied weights: forward values and every gradient (train and eval mode, both
layouts, pre- and post-norm, attention and key-padding masks), the causal-mask helper, and the
errors that name the layer."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

torch = pytest.importorskip("torch")

# PyTorch's own notes on its fast paths and mask types, not about the values compared here.
pytestmark = [pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning"),
              pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")]

ATOL = 1e-5
D, H, FF = 8, 2, 16  # d_model, nhead, dim_feedforward
T, S, N = 5, 6, 3    # target length, source length, batch


def _close(ours, theirs, atol=ATOL, rtol=1e-5):
    t = theirs.detach().numpy()
    assert tuple(ours.shape) == t.shape
    np.testing.assert_allclose(ours.numpy(), t, atol=atol, rtol=rtol)


def _pair(*shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _seq(length, batch_first, seed):
    return _pair(*((N, length, D) if batch_first else (length, N, D)), seed=seed)


def _copy_weights(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: mg.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})


def _mode(ours, theirs, train):
    ours.train(train)
    theirs.train(train)


def _masks(kind):
    """(ours, theirs) for tgt_mask (causal), memory_mask, tgt/memory key padding masks: bool
    (True = masked) or float (-inf = masked). No query row is masked entirely."""
    causal = np.triu(np.ones((T, T), bool), 1)
    memory = np.zeros((T, S), bool)
    memory[0, 2] = memory[3, 0] = True
    tgt_pad = np.zeros((N, T), bool)
    tgt_pad[0, 3:] = True
    mem_pad = np.zeros((N, S), bool)
    mem_pad[1, 4:] = True
    arrays = [causal, memory, tgt_pad, mem_pad]
    if kind == "float":
        arrays = [np.where(a, -np.inf, 0.0).astype(np.float32) for a in arrays]
    return [mg.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


def _mask_kwargs(masks):
    names = ("tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask")
    return dict(zip(names, masks))


def _backward_both(out_ours, out_theirs, seed):
    # A fixed random projection keeps gradients O(1) so one atol fits every tensor.
    w = np.random.default_rng(seed).standard_normal(out_theirs.shape).astype(np.float32)
    (out_ours * mg.tensor(w)).sum().backward()
    (out_theirs * torch.tensor(w)).sum().backward()


def _same_grads(ours, theirs):
    grads = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        assert grads[name].grad is not None, name
        _close(grads[name].grad, p.grad)


# ------------------------------------------------------------------ decoder layer
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
def test_decoder_layer_matches_torch(batch_first, norm_first, train, mask_kind):
    torch.manual_seed(0)
    kw = dict(d_model=D, nhead=H, dim_feedforward=FF, dropout=0.0, batch_first=batch_first,
              norm_first=norm_first, activation="gelu" if norm_first else "relu")
    theirs = torch.nn.TransformerDecoderLayer(**kw)
    ours = nn.TransformerDecoderLayer(**kw)
    _copy_weights(ours, theirs)
    _mode(ours, theirs, train)
    (tgt, ttgt), (mem, tmem) = _seq(T, batch_first, 1), _seq(S, batch_first, 2)
    masks, tmasks = _masks(mask_kind) if mask_kind else ([None] * 4, [None] * 4)
    out = ours(tgt, mem, **_mask_kwargs(masks))
    tout = theirs(ttgt, tmem, **_mask_kwargs(tmasks))
    _close(out, tout)
    _backward_both(out, tout, seed=3)
    _close(tgt.grad, ttgt.grad)
    _close(mem.grad, tmem.grad)
    _same_grads(ours, theirs)


def test_decoder_layer_unbatched_and_callable_activation():
    torch.manual_seed(1)
    theirs = torch.nn.TransformerDecoderLayer(D, H, FF, 0.0, activation=torch.tanh)
    ours = nn.TransformerDecoderLayer(D, H, FF, 0.0, activation=mg.tanh)
    _copy_weights(ours, theirs)
    (tgt, ttgt), (mem, tmem) = _pair(T, D, seed=4), _pair(S, D, seed=5)
    pad = np.zeros(S, bool)
    pad[-2:] = True
    out = ours(tgt, mem, memory_key_padding_mask=mg.tensor(pad))
    tout = theirs(ttgt, tmem, memory_key_padding_mask=torch.tensor(pad))
    _close(out, tout)
    _backward_both(out, tout, seed=6)
    _close(mem.grad, tmem.grad)
    _same_grads(ours, theirs)


def test_decoder_layer_is_causal_without_mask_applies_the_causal_mask():
    layer = nn.TransformerDecoderLayer(D, H, FF, 0.0).eval()
    tgt, mem = mg.randn(T, N, D), mg.randn(S, N, D)
    mask = nn.Transformer.generate_square_subsequent_mask(T)
    np.testing.assert_allclose(layer(tgt, mem, tgt_is_causal=True).numpy(),
                               layer(tgt, mem, tgt_mask=mask).numpy(), atol=1e-6)


# ----------------------------------------------------------------------- decoder stack
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("train", [True, False])
def test_decoder_stack_matches_torch(batch_first, train):
    torch.manual_seed(2)
    kw = dict(d_model=D, nhead=H, dim_feedforward=FF, dropout=0.0, batch_first=batch_first)
    theirs = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(**kw), 3,
                                         norm=torch.nn.LayerNorm(D))
    ours = nn.TransformerDecoder(nn.TransformerDecoderLayer(**kw), 3, norm=nn.LayerNorm(D))
    # PyTorch's layers are deep copies, hence equal: make them differ so the order shows.
    for p in theirs.parameters():
        torch.nn.init.uniform_(p.data, -0.3, 0.3)
    _copy_weights(ours, theirs)
    _mode(ours, theirs, train)
    (tgt, ttgt), (mem, tmem) = _seq(T, batch_first, 7), _seq(S, batch_first, 8)
    masks, tmasks = _masks("bool")
    out = ours(tgt, mem, **_mask_kwargs(masks))
    tout = theirs(ttgt, tmem, **_mask_kwargs(tmasks))
    _close(out, tout)
    _backward_both(out, tout, seed=9)
    _close(tgt.grad, ttgt.grad)
    _same_grads(ours, theirs)


def test_decoder_layers_are_independent_copies():
    layer = nn.TransformerDecoderLayer(D, H, FF)
    dec = nn.TransformerDecoder(layer, 2)
    a, b = (m.multihead_attn.in_proj_weight for m in dec.layers)
    assert a is not b and a is not layer.multihead_attn.in_proj_weight and mg.equal(a, b)
    assert dec.num_layers == 2 and dec.norm is None


# --------------------------------------------------------------------------- Transformer
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("train", [True, False])
def test_transformer_matches_torch(batch_first, norm_first, train):
    torch.manual_seed(3)
    kw = dict(d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=FF, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    theirs = torch.nn.Transformer(**kw)
    ours = nn.Transformer(**kw)
    _copy_weights(ours, theirs)
    _mode(ours, theirs, train)
    (src, tsrc), (tgt, ttgt) = _seq(S, batch_first, 10), _seq(T, batch_first, 11)
    masks, tmasks = _masks("bool")
    src_pad = np.zeros((N, S), bool)
    src_pad[2, 5:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(T)
    tcausal = torch.nn.Transformer.generate_square_subsequent_mask(T)
    # The causal tgt mask as float (how users build it) beside bool padding masks.
    out = ours(src, tgt, src_key_padding_mask=mg.tensor(src_pad),
               **_mask_kwargs([causal] + masks[1:]))
    tout = theirs(tsrc, ttgt, src_key_padding_mask=torch.tensor(src_pad),
                  **_mask_kwargs([tcausal] + tmasks[1:]))
    _close(out, tout)
    _backward_both(out, tout, seed=12)
    _close(src.grad, tsrc.grad)
    _close(tgt.grad, ttgt.grad)
    _same_grads(ours, theirs)


def test_transformer_state_dict_names_without_bias():
    kw = dict(d_model=D, nhead=H, num_encoder_layers=1, num_decoder_layers=1,
              dim_feedforward=FF, bias=False)
    ours, theirs = nn.Transformer(**kw), torch.nn.Transformer(**kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert not any(k.endswith("bias") for k in ours.state_dict())
    assert (ours.d_model, ours.nhead, ours.batch_first) == (D, H, False)


def test_transformer_matrices_start_xavier_uniform():
    model = nn.Transformer(D, H, 1, 1, FF)
    for name, p in model.named_parameters():
        if p.ndim > 1:
            bound = np.sqrt(6.0 / sum(p.shape))
            assert np.abs(p.numpy()).max() <= bound, name


def test_transformer_custom_encoder_and_decoder_are_used():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, 0.0), 1)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF, 0.0), 1)
    model = nn.Transformer(D, H, custom_encoder=enc, custom_decoder=dec).eval()
    assert model.encoder is enc and model.decoder is dec
    src, tgt = mg.randn(S, N, D), mg.randn(T, N, D)
    np.testing.assert_allclose(model(src, tgt).numpy(), dec(tgt, enc(src)).numpy(), atol=1e-6)


# --------------------------------------------------------------- the causal-mask helper
@pytest.mark.parametrize("sz", [0, 1, 4, 7])
@pytest.mark.parametrize("dtype", [None, "float64", "float16"])
def test_generate_square_subsequent_mask_matches_torch(sz, dtype):
    ours = nn.Transformer.generate_square_subsequent_mask(sz, dtype=dtype)
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(
        sz, dtype=None if dtype is None else getattr(torch, dtype))
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    assert not ours.requires_grad
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_generate_square_subsequent_mask_is_static_and_positional():
    a = nn.Transformer.generate_square_subsequent_mask(3, None, mg.float64)
    b = nn.Transformer(D, H, 1, 1, FF).generate_square_subsequent_mask(3)
    assert a.dtype == mg.float64 and b.dtype == mg.float32
    assert a.numpy()[0, 1] == -np.inf and a.numpy()[1, 0] == 0.0


# ------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("cls", [nn.TransformerDecoderLayer, nn.TransformerEncoderLayer,
                                 nn.Transformer])
def test_bad_sizes_name_the_layer(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__}: d_model \(10\) must be divisible "
                                         r"by nhead \(3\)"):
        cls(10, 3)
    with pytest.raises(ValueError, match=rf"{cls.__name__}: activation .* got 'swish'"):
        cls(8, 2, activation="swish")
    with pytest.raises(ValueError, match=rf"{cls.__name__}: nhead must be a positive int, "
                                         "got 0"):
        cls(8, 0)
    with pytest.raises(ValueError, match=rf"{cls.__name__}: dropout must be in \[0, 1\], "
                                         "got 1.5"):
        cls(8, 2, dropout=1.5)


def test_bad_layer_counts_and_masks():
    with pytest.raises(ValueError, match="Transformer: num_decoder_layers must be an int >= 1, "
                                         "got 0"):
        nn.Transformer(D, H, num_decoder_layers=0)
    with pytest.raises(ValueError, match="TransformerDecoder: num_layers must be an int >= 1, "
                                         "got 0"):
        nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF), 0)
    for sz, dtype, what in ((-1, None, "sz must be an int >= 0, got -1"),
                            (2.5, None, "sz must be an int >= 0, got 2.5"),
                            (3, mg.int64, "dtype must be a floating dtype")):
        with pytest.raises(ValueError, match=f"generate_square_subsequent_mask: {what}"):
            nn.Transformer.generate_square_subsequent_mask(sz, dtype=dtype)


def test_bad_inputs_name_the_layer_and_shapes():
    layer = nn.TransformerDecoderLayer(D, H, FF)
    with pytest.raises(ValueError, match=r"TransformerDecoderLayer: tgt and memory must have "
                                         r"the same batch size .*\(5, 3, 8\).*\(6, 2, 8\)"):
        layer(mg.randn(T, N, D), mg.randn(S, 2, D))
    with pytest.raises(ValueError, match="TransformerDecoderLayer: tgt and memory must have "
                                         "d_model=8 features"):
        layer(mg.randn(T, N, D), mg.randn(S, N, 4))
    with pytest.raises(ValueError, match="TransformerDecoderLayer: tgt and memory must both "
                                         "be 2-D"):
        layer(mg.randn(T, N, D), mg.randn(S, D))
    model = nn.Transformer(D, H, 1, 1, FF, batch_first=True)
    with pytest.raises(ValueError, match=r"Transformer: src and tgt must have the same batch "
                                         r"size \(axis 0 with batch_first=True\)"):
        model(mg.randn(N, S, D), mg.randn(N + 1, T, D))
    with pytest.raises(ValueError, match="Transformer: src and tgt must have d_model=8"):
        model(mg.randn(N, S, 4), mg.randn(N, T, 4))
