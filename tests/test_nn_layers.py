"""Layers: forward values against NumPy references, gradients (inputs and weights) by gradcheck."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn.utils import functional_call
from minigrad.testing import gradcheck


def _randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float64)


def _t(a, device="cpu"):
    return mg.tensor(a, device=device)


def _check_layer(layer, x, names=(), device="cpu", **kw):
    """gradcheck ``layer`` w.r.t. its input and the parameters ``names`` (float64)."""
    layer.double()
    weights = [dict(layer.named_parameters())[n].numpy() for n in names]

    def fn(xx, *ws):
        return functional_call(layer, dict(zip(names, ws)), xx)

    assert gradcheck(fn, [x] + weights, device=device, **kw)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---------------------------------------------------------------- Linear
def test_linear(device, rng):
    lin = nn.Linear(4, 3, device=device)
    assert lin.weight.shape == (3, 4) and lin.weight.device == mg.tensor(0, device=device).device
    x = rng.standard_normal((2, 5, 4)).astype(np.float32)
    ref = x @ lin.weight.numpy().T + lin.bias.numpy()
    np.testing.assert_allclose(lin(_t(x, device)).numpy(), ref, rtol=1e-5, atol=1e-6)
    assert issubclass(nn.Dense, nn.Linear)
    _check_layer(lin, _randn(rng, 2, 4), ["weight", "bias"], device=device)
    nb = nn.Linear(4, 3, bias=False)
    assert nb.bias is None and len(list(nb.parameters())) == 1
    np.testing.assert_allclose(nb(_t(x)).numpy(), x @ nb.weight.numpy().T, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- convolutions
def _conv2d_ref(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    n, _c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dh:i * dh + sh * (ho - 1) + 1:sh,
                           j * dw:j * dw + sw * (wo - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out


def _conv_transpose2d_ref(x, w, b, stride, padding, output_padding, groups, dilation):
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = stride, padding, output_padding, dilation
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + oph
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    out = np.zeros((n, og * groups, full_h, full_w))
    cg = c // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                out[:, g * og:(g + 1) * og, i * dh:i * dh + sh * (h - 1) + 1:sh,
                    j * dw:j * dw + sw * (wd - 1) + 1:sw] += np.einsum(
                    "nchw,co->nohw", x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, i, j])
    out = out[:, :, ph:full_h - ph if ph else None, pw:full_w - pw if pw else None]
    return out + b[None, :, None, None]


@pytest.mark.parametrize("cfg", [
    {"stride": 1, "padding": 0, "dilation": 1, "groups": 1},
    {"stride": 2, "padding": 1, "dilation": 1, "groups": 2},
    {"stride": (1, 2), "padding": (2, 1), "dilation": 2, "groups": 1},
])
def test_conv2d(cfg, device, rng):
    conv = nn.Conv2d(4, 6, 3, **cfg, device=device)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    ref = _conv2d_ref(x.astype(np.float64), conv.weight.numpy().astype(np.float64),
                      conv.bias.numpy(), conv.stride, conv.padding, conv.dilation, conv.groups)
    # cuDNN runs float32 convolutions on TF32 Tensor Cores by default, as PyTorch does
    tol = {"rtol": 2e-3, "atol": 2e-3} if device == "cuda" else {"rtol": 1e-4, "atol": 1e-5}
    np.testing.assert_allclose(conv(_t(x, device)).numpy(), ref, **tol)


def test_conv2d_grad(rng):
    conv = nn.Conv2d(2, 2, 2, stride=1, padding=1, groups=1)
    _check_layer(conv, _randn(rng, 1, 2, 3, 3), ["weight", "bias"])
    nb = nn.Conv2d(2, 4, (1, 2), bias=False, groups=2)
    assert nb.bias is None and nb.weight.shape == (4, 1, 1, 2)
    _check_layer(nb, _randn(rng, 2, 2, 2, 3), ["weight"])


def test_conv1d(device, rng):
    conv = nn.Conv1d(3, 4, 3, stride=2, padding=1, device=device)
    assert conv.weight.shape == (4, 3, 3)
    x = rng.standard_normal((2, 3, 9)).astype(np.float32)
    ref = _conv2d_ref(x[:, :, None].astype(np.float64), conv.weight.numpy()[:, :, None],
                      conv.bias.numpy(), (1, 2), (0, 1))[:, :, 0]
    np.testing.assert_allclose(conv(_t(x, device)).numpy(), ref, rtol=1e-4, atol=1e-5)
    _check_layer(nn.Conv1d(2, 2, 2), _randn(rng, 1, 2, 4), ["weight", "bias"])


@pytest.mark.parametrize("cfg", [
    {"stride": 1, "padding": 0, "output_padding": 0, "groups": 1, "dilation": 1},
    {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2, "dilation": 1},
    {"stride": 2, "padding": 0, "output_padding": 0, "groups": 1, "dilation": 2},
])
def test_conv_transpose2d(cfg, device, rng):
    conv = nn.ConvTranspose2d(4, 6, 3, **cfg, device=device)
    assert conv.weight.shape == (4, 6 // cfg["groups"], 3, 3)
    x = rng.standard_normal((2, 4, 4, 5)).astype(np.float32)
    ref = _conv_transpose2d_ref(x.astype(np.float64), conv.weight.numpy().astype(np.float64),
                                conv.bias.numpy(), conv.stride, conv.padding,
                                conv.output_padding, conv.groups, conv.dilation)
    np.testing.assert_allclose(conv(_t(x, device)).numpy(), ref, rtol=1e-4, atol=1e-5)


def test_conv_transpose2d_grad(rng):
    conv = nn.ConvTranspose2d(2, 2, 2, stride=2)
    _check_layer(conv, _randn(rng, 1, 2, 2, 3), ["weight", "bias"])


# ---------------------------------------------------------------- normalisation
def test_batchnorm2d_train_eval(device, rng):
    bn = nn.BatchNorm2d(3, momentum=0.2, device=device)
    with mg.no_grad():
        bn.weight.copy_(np.array([1.0, 2.0, 0.5], np.float32))
        bn.bias.copy_(np.array([0.0, -1.0, 1.0], np.float32))
    x = rng.standard_normal((4, 3, 2, 3)).astype(np.float32) * 2 + 1
    y = bn(_t(x, device)).numpy()
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    ref = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    ref = ref * bn.weight.numpy()[None, :, None, None] + bn.bias.numpy()[None, :, None, None]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    n = x.size / 3
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.2 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.8 + 0.2 * var * n / (n - 1), rtol=1e-5)
    assert int(bn.num_batches_tracked.item()) == 1
    assert bn.running_mean.dtype == mg.float32
    bn.eval()
    y = bn(_t(x, device)).numpy()
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    ref = (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
    ref = ref * bn.weight.numpy()[None, :, None, None] + bn.bias.numpy()[None, :, None, None]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    assert int(bn.num_batches_tracked.item()) == 1
    assert [k for k in bn.state_dict()] == ["weight", "bias", "running_mean", "running_var",
                                            "num_batches_tracked"]


def test_batchnorm_cumulative_and_untracked(rng):
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [rng.standard_normal((5, 2)).astype(np.float32) for _ in range(3)]
    for x in xs:
        bn(_t(x))
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([x.mean(0) for x in xs], 0),
                               rtol=1e-5, atol=1e-6)
    free = nn.BatchNorm1d(2, affine=False, track_running_stats=False).eval()
    assert free.running_mean is None and list(free.parameters()) == []
    x = xs[0]
    np.testing.assert_allclose(free(_t(x)).numpy(), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="channels"):
        bn(mg.zeros(4, 3))
    with pytest.raises(ValueError, match="4-D"):
        nn.BatchNorm2d(2)(mg.zeros(4, 2))


def test_batchnorm_grad(rng):
    _check_layer(nn.BatchNorm2d(2), _randn(rng, 3, 2, 2, 2), ["weight", "bias"])
    _check_layer(nn.BatchNorm1d(3).eval(), _randn(rng, 4, 3), ["weight", "bias"])
    _check_layer(nn.BatchNorm1d(2), _randn(rng, 3, 2, 4), ["weight", "bias"])


def test_layernorm(device, rng):
    ln = nn.LayerNorm((3, 4), device=device)
    with mg.no_grad():
        ln.weight.copy_(rng.standard_normal((3, 4)).astype(np.float32))
        ln.bias.copy_(rng.standard_normal((3, 4)).astype(np.float32))
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    m = x.mean((1, 2), keepdims=True)
    v = x.var((1, 2), keepdims=True)
    ref = (x - m) / np.sqrt(v + 1e-5) * ln.weight.numpy() + ln.bias.numpy()
    np.testing.assert_allclose(ln(_t(x, device)).numpy(), ref, rtol=1e-4, atol=1e-5)
    _check_layer(nn.LayerNorm(4), _randn(rng, 2, 4), ["weight", "bias"])
    plain = nn.LayerNorm(4, elementwise_affine=False)
    assert list(plain.parameters()) == []


def test_groupnorm(device, rng):
    gn = nn.GroupNorm(2, 4, device=device)
    with mg.no_grad():
        gn.weight.copy_(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    g = x.reshape(2, 2, 6)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    ref = ref.reshape(2, 4, 3) * gn.weight.numpy()[None, :, None]
    np.testing.assert_allclose(gn(_t(x, device)).numpy(), ref, rtol=1e-4, atol=1e-5)
    _check_layer(nn.GroupNorm(2, 4), _randn(rng, 2, 4, 2), ["weight", "bias"])
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(3, 4)


# ---------------------------------------------------------------- dropout, embedding
def test_dropout(device):
    d = nn.Dropout(0.25)
    x = mg.ones(400, 50, device=device)
    y = d(x).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    d.eval()
    assert d(x) is x
    assert nn.Dropout(0.0)(x) is x
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_embedding(device, rng):
    emb = nn.Embedding(5, 3, padding_idx=-1, device=device)
    assert emb.padding_idx == 4
    np.testing.assert_array_equal(emb.weight.numpy()[4], 0)
    idx = np.array([[0, 4, 2], [2, 2, 1]])
    out = emb(mg.tensor(idx, device=device))
    np.testing.assert_array_equal(out.numpy(), emb.weight.numpy()[idx])
    out.sum().backward()
    counts = np.bincount(idx.ravel(), minlength=5).astype(np.float32)
    counts[4] = 0  # the padding row never receives gradient
    np.testing.assert_allclose(emb.weight.grad.numpy(), counts[:, None] * np.ones((1, 3)))


# ---------------------------------------------------------------- activations
def _gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


@pytest.mark.parametrize("layer, ref", [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    (nn.GELU(), _gelu),
    (nn.GELU("tanh"), lambda x: 0.5 * x * (1 + np.tanh(
        math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    (nn.SiLU(), lambda x: x * _sigmoid(x)),
    (nn.Sigmoid(), _sigmoid),
    (nn.Tanh(), np.tanh),
    (nn.Softmax(dim=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
    (nn.Softmax(axis=0), lambda x: np.exp(x) / np.exp(x).sum(0, keepdims=True)),
    (nn.Identity(3, foo=1), lambda x: x),
], ids=lambda v: type(v).__name__ if isinstance(v, nn.Module) else "")
def test_activations(layer, ref, device, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[0, 0] = 0.5  # keep every element away from relu's kink for gradcheck
    np.testing.assert_allclose(layer(_t(x, device)).numpy(), ref(x.astype(np.float64)),
                               rtol=1e-5, atol=1e-6)
    xg = np.where(np.abs(x) < 0.05, 0.3, x).astype(np.float64)
    assert gradcheck(lambda t: layer(t), [xg], device=device)


def test_prelu(device, rng):
    p = nn.PReLU(3, init=0.1, device=device)
    np.testing.assert_allclose(p.weight.numpy(), [0.1] * 3, rtol=1e-6)
    with mg.no_grad():
        p.weight.copy_(np.array([0.1, 0.2, 0.3], np.float32))
    x = rng.standard_normal((2, 3, 2)).astype(np.float32)
    a = p.weight.numpy()[None, :, None]
    np.testing.assert_allclose(p(_t(x, device)).numpy(), np.where(x > 0, x, a * x), rtol=1e-6)
    _check_layer(p, np.where(np.abs(x) < 0.05, 0.3, x).astype(np.float64), ["weight"],
                 device=device)
    assert nn.PReLU().weight.shape == (1,)


# ---------------------------------------------------------------- pooling, flatten
def _pool_ref(x, k, s, reduce):
    _n, _c, h, w = x.shape
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    wins = np.stack([x[:, :, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s]
                     for i in range(k) for j in range(k)])
    return reduce(wins, 0)


def test_pooling(device, rng):
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    xt = _t(x, device)
    np.testing.assert_allclose(nn.MaxPool2d(2)(xt).numpy(), _pool_ref(x, 2, 2, np.max))
    np.testing.assert_allclose(nn.MaxPool2d(3, stride=2)(xt).numpy(), _pool_ref(x, 3, 2, np.max))
    np.testing.assert_allclose(nn.AvgPool2d(2)(xt).numpy(), _pool_ref(x, 2, 2, np.mean),
                               rtol=1e-5, atol=1e-6)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    np.testing.assert_allclose(nn.MaxPool2d(3, 2, padding=1)(xt).numpy(),
                               _pool_ref(xp, 3, 2, np.max))
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d(1)(xt).numpy(),
                               x.mean((2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    x4 = x[:, :, :6, :6]
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d((3, 2))(_t(x4, device)).numpy(),
                               x4.reshape(2, 3, 3, 2, 2, 3).mean((3, 5)), rtol=1e-5, atol=1e-6)
    g = rng.permutation(36).reshape(1, 1, 6, 6).astype(np.float64)  # distinct values for max
    assert gradcheck(lambda t: nn.MaxPool2d(2)(t), [g], device=device)
    assert gradcheck(lambda t: nn.AvgPool2d(2)(t), [g], device=device)
    assert gradcheck(lambda t: nn.AdaptiveAvgPool2d((2, 3))(t), [g], device=device)


def test_flatten(device, rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    assert nn.Flatten()(_t(x, device)).shape == (2, 60)
    assert nn.Flatten(0, 1)(_t(x, device)).shape == (6, 4, 5)
    np.testing.assert_array_equal(nn.Flatten(1, 2)(_t(x, device)).numpy(), x.reshape(2, 12, 5))


# ---------------------------------------------------------------- recurrent
def _cell_ref(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gi = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    if mode == "rnn":
        return np.tanh(gi + gh), None
    if mode == "lstm":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c2 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c2), c2
    r_i, z_i, n_i = np.split(gi, 3, axis=-1)
    r_h, z_h, n_h = np.split(gh, 3, axis=-1)
    r, z = _sigmoid(r_i + r_h), _sigmoid(z_i + z_h)
    n = np.tanh(n_i + r * n_h)
    return (1 - z) * n + z * h, None


@pytest.mark.parametrize("mode, cls", [("rnn", nn.RNNCell), ("lstm", nn.LSTMCell),
                                       ("gru", nn.GRUCell)])
def test_cells(mode, cls, device, rng):
    cell = cls(3, 4, device=device)
    gates = {"rnn": 1, "lstm": 4, "gru": 3}[mode]
    assert cell.weight_ih.shape == (gates * 4, 3) and cell.weight_hh.shape == (gates * 4, 4)
    assert np.abs(cell.weight_hh.numpy()).max() <= 0.5  # U(+-1/sqrt(hidden))
    x = rng.standard_normal((2, 3)).astype(np.float32)
    h = rng.standard_normal((2, 4)).astype(np.float32)
    c = rng.standard_normal((2, 4)).astype(np.float32)
    ws = [cell.weight_ih.numpy(), cell.weight_hh.numpy(), cell.bias_ih.numpy(),
          cell.bias_hh.numpy()]
    h_ref, c_ref = _cell_ref(mode, x, h, c, *ws)
    if mode == "lstm":
        h2, c2 = cell(_t(x, device), (_t(h, device), _t(c, device)))
        np.testing.assert_allclose(c2.numpy(), c_ref, rtol=1e-5, atol=1e-6)
        h0, _ = cell(_t(x, device))
        np.testing.assert_allclose(h0.numpy(), _cell_ref(mode, x, 0 * h, 0 * c, *ws)[0],
                                   rtol=1e-5, atol=1e-6)
    else:
        h2 = cell(_t(x, device), _t(h, device))
        np.testing.assert_allclose(cell(_t(x, device)).numpy(),
                                   _cell_ref(mode, x, 0 * h, 0 * c, *ws)[0], rtol=1e-5,
                                   atol=1e-6)
    np.testing.assert_allclose(h2.numpy(), h_ref, rtol=1e-5, atol=1e-6)


def test_cell_grads(rng):
    cell = nn.LSTMCell(2, 2).double()
    names = ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    ws = [getattr(cell, n).numpy() for n in names]

    def fn(x, h, c, *w):
        return functional_call(cell, dict(zip(names, w)), (x, (h, c)))

    assert gradcheck(fn, [_randn(rng, 2, 2), _randn(rng, 2, 2), _randn(rng, 2, 2)] + ws)
    gru = nn.GRUCell(2, 3).double()
    assert gradcheck(lambda x, h: gru(x, h), [_randn(rng, 2, 2), _randn(rng, 2, 3)])
    rnn = nn.RNNCell(2, 3, nonlinearity="relu").double()
    x = _randn(rng, 2, 2)
    h = _randn(rng, 2, 3)
    ws = [rnn.weight_ih.numpy(), rnn.weight_hh.numpy(), rnn.bias_ih.numpy(), rnn.bias_hh.numpy()]
    ref = np.maximum(x @ ws[0].T + ws[2] + h @ ws[1].T + ws[3], 0)
    np.testing.assert_allclose(rnn(_t(x), _t(h)).numpy(), ref, rtol=1e-12)


def _lstm_ref(lstm, x, h0, c0):
    t_len = x.shape[0]
    inp = x
    hs, cs = [], []
    for layer in range(lstm.num_layers):
        ws = [getattr(lstm, f"{n}_l{layer}").numpy() for n in
              ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        h, c = h0[layer], c0[layer]
        outs = []
        for t in range(t_len):
            h, c = _cell_ref("lstm", inp[t], h, c, *ws)
            outs.append(h)
        inp = np.stack(outs)
        hs.append(h)
        cs.append(c)
    return inp, np.stack(hs), np.stack(cs)


def test_lstm(device, rng):
    lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True, device=device)
    assert [n for n, _ in lstm.named_parameters()][:4] == [
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert lstm.weight_ih_l1.shape == (16, 4)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)  # (N, T, F)
    h0 = rng.standard_normal((2, 2, 4)).astype(np.float32)
    c0 = rng.standard_normal((2, 2, 4)).astype(np.float32)
    out, (h_n, c_n) = lstm(_t(x, device), (_t(h0, device), _t(c0, device)))
    ref_out, ref_h, ref_c = _lstm_ref(lstm, x.transpose(1, 0, 2), h0, c0)
    assert out.shape == (2, 5, 4)
    np.testing.assert_allclose(out.numpy(), ref_out.transpose(1, 0, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h_n.numpy(), ref_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c_n.numpy(), ref_c, rtol=1e-5, atol=1e-5)
    # default zero state, time-major
    tm = nn.LSTM(3, 4, device=device)
    out, (h_n, c_n) = tm(_t(x.transpose(1, 0, 2), device))
    z = np.zeros((1, 2, 4), np.float32)
    ref_out, ref_h, _ = _lstm_ref(tm, x.transpose(1, 0, 2), z, z)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h_n.numpy(), ref_h, rtol=1e-5, atol=1e-5)


def test_lstm_grad_and_variants(rng):
    lstm = nn.LSTM(2, 2, num_layers=1).double()
    assert gradcheck(lambda x: lstm(x)[0], [_randn(rng, 3, 1, 2)])
    bi = nn.LSTM(2, 3, bidirectional=True)
    out, (h_n, _) = bi(mg.tensor(rng.standard_normal((4, 2, 2)).astype(np.float32)))
    assert out.shape == (4, 2, 6) and h_n.shape == (2, 2, 3)
    # forward half of the last step equals h_n[0]; reverse half of step 0 equals h_n[1]
    np.testing.assert_allclose(out.numpy()[-1, :, :3], h_n.numpy()[0], rtol=1e-6)
    np.testing.assert_allclose(out.numpy()[0, :, 3:], h_n.numpy()[1], rtol=1e-6)
    gru = nn.GRU(2, 3, num_layers=2)
    out, h_n = gru(mg.tensor(rng.standard_normal((4, 2)).astype(np.float32)))  # unbatched
    assert out.shape == (4, 3) and h_n.shape == (2, 3)
    np.testing.assert_allclose(out.numpy()[-1], h_n.numpy()[1], rtol=1e-6)
    with pytest.raises(ValueError, match="input_size"):
        lstm(mg.zeros(3, 1, 5, dtype="float64"))


# ---------------------------------------------------------------- attention
def _mha_ref(m, q, k, v, mask=None):
    e, h = m.embed_dim, m.num_heads
    d = e // h
    w, b = m.in_proj_weight.numpy(), m.in_proj_bias.numpy()
    qp = (q @ w[:e].T + b[:e]).reshape(q.shape[0], q.shape[1], h, d).transpose(0, 2, 1, 3)
    kp = (k @ w[e:2 * e].T + b[e:2 * e]).reshape(k.shape[0], k.shape[1], h, d)\
        .transpose(0, 2, 1, 3)
    vp = (v @ w[2 * e:].T + b[2 * e:]).reshape(v.shape[0], v.shape[1], h, d)\
        .transpose(0, 2, 1, 3)
    s = qp @ kp.transpose(0, 1, 3, 2) / math.sqrt(d)
    if mask is not None:
        s = np.where(mask, -np.inf, s)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ vp).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], e)
    return o @ m.out_proj.weight.numpy().T + m.out_proj.bias.numpy(), a.mean(1)


def test_multihead_attention(device, rng):
    m = nn.MultiheadAttention(8, 2, batch_first=True, device=device)
    assert m.in_proj_weight.shape == (24, 8)
    np.testing.assert_array_equal(m.in_proj_bias.numpy(), 0)
    with mg.no_grad():
        m.in_proj_bias.copy_(rng.standard_normal(24).astype(np.float32))
    q = rng.standard_normal((2, 3, 8)).astype(np.float32)
    kv = rng.standard_normal((2, 5, 8)).astype(np.float32)
    out, w = m(_t(q, device), _t(kv, device), _t(kv, device))
    ref, ref_w = _mha_ref(m, q, kv, kv)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-4, atol=1e-5)
    # fused path (no weights), boolean causal mask, key padding mask, sequence-first layout
    causal = np.triu(np.ones((3, 3), bool), 1)
    out2, w2 = m(_t(q, device), _t(q, device), _t(q, device), need_weights=False,
                 is_causal=True)
    assert w2 is None
    np.testing.assert_allclose(out2.numpy(), _mha_ref(m, q, q, q, causal)[0], rtol=1e-4,
                               atol=1e-5)
    kpm = np.zeros((2, 5), bool)
    kpm[0, -2:] = True
    out3, _ = m(_t(q, device), _t(kv, device), _t(kv, device),
                key_padding_mask=mg.tensor(kpm, device=device))
    np.testing.assert_allclose(out3.numpy(), _mha_ref(m, q, kv, kv, kpm[:, None, None])[0],
                               rtol=1e-4, atol=1e-5)
    m.batch_first = False
    out4, _ = m(_t(q.transpose(1, 0, 2), device), _t(kv.transpose(1, 0, 2), device),
                _t(kv.transpose(1, 0, 2), device))
    np.testing.assert_allclose(out4.numpy(), ref.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)


def test_multihead_attention_grad(rng):
    m = nn.MultiheadAttention(4, 2, batch_first=True).double()
    names = ["in_proj_weight", "in_proj_bias", "out_proj.weight"]

    def fn(x, *ws):
        return functional_call(m, dict(zip(names, ws)), (x, x, x))[0]

    ws = [m.in_proj_weight.numpy(), m.in_proj_bias.numpy(), m.out_proj.weight.numpy()]
    assert gradcheck(fn, [_randn(rng, 1, 3, 4)] + ws)
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(6, 4)


# ---------------------------------------------------------------- losses
def test_losses(device, rng):
    logits = rng.standard_normal((4, 3)).astype(np.float32)
    target = np.array([0, 2, 1, 2])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ce = nn.CrossEntropyLoss()(_t(logits, device), mg.tensor(target, device=device))
    np.testing.assert_allclose(ce.item(), -logp[np.arange(4), target].mean(), rtol=1e-5)
    cw = np.array([1.0, 2.0, 0.5], np.float32)
    wce = nn.CrossEntropyLoss(weight=mg.tensor(cw, device=device), reduction="sum")
    ref = -(cw[target] * logp[np.arange(4), target]).sum()
    np.testing.assert_allclose(wce(_t(logits, device), mg.tensor(target, device=device)).item(),
                               ref, rtol=1e-5)
    assert "weight" in wce.state_dict()
    a = rng.standard_normal((3, 2)).astype(np.float32)
    b = rng.standard_normal((3, 2)).astype(np.float32)
    np.testing.assert_allclose(nn.MSELoss()(_t(a, device), _t(b, device)).item(),
                               ((a - b) ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(nn.L1Loss(reduction="none")(_t(a, device), _t(b, device)).numpy(),
                               np.abs(a - b), rtol=1e-6)
    y = (rng.random((3, 2)) > 0.5).astype(np.float32)
    pw = np.array([2.0, 0.5], np.float32)
    bce = nn.BCEWithLogitsLoss(pos_weight=mg.tensor(pw, device=device))
    ref = -(pw * y * np.log(_sigmoid(a)) + (1 - y) * np.log(1 - _sigmoid(a))).mean()
    np.testing.assert_allclose(bce(_t(a, device), _t(y, device)).item(), ref, rtol=1e-5)
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")


def test_loss_grads(rng):
    target = mg.tensor(np.array([1, 0, 2]))
    assert gradcheck(lambda x: nn.CrossEntropyLoss(label_smoothing=0.1)(x, target),
                     [_randn(rng, 3, 3)])
    y = _randn(rng, 2, 3)
    assert gradcheck(lambda x: nn.MSELoss()(x, _t(y)), [_randn(rng, 2, 3)])
    assert gradcheck(lambda x: nn.BCEWithLogitsLoss()(x, _t((y > 0).astype(np.float64))),
                     [_randn(rng, 2, 3)])


def test_attention_mask_variants(rng):
    m = nn.MultiheadAttention(4, 2, batch_first=True)
    x = mg.tensor(rng.standard_normal((2, 3, 4)).astype(np.float32))
    causal = np.triu(np.ones((3, 3), bool), 1)
    ref = m(x, x, x, need_weights=False, is_causal=True)[0].numpy()
    out, w = m(x, x, x, is_causal=True)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.triu(w.numpy()[0], 1), 0)  # no weight on future keys
    np.testing.assert_allclose(w.numpy().sum(-1), 1, rtol=1e-5)
    out2, _ = m(x, x, x, attn_mask=mg.tensor(causal))
    np.testing.assert_allclose(out2.numpy(), ref, rtol=1e-5, atol=1e-6)
    additive = np.where(causal, -1e9, 0.0).astype(np.float32)
    out3, _ = m(x, x, x, attn_mask=mg.tensor(np.tile(additive, (4, 1, 1))), need_weights=False)
    np.testing.assert_allclose(out3.numpy(), ref, rtol=1e-5, atol=1e-6)
    per_head, _ = m(x, x, x)[0], None
    _, w_heads = m(x, x, x, average_attn_weights=False)
    assert w_heads.shape == (2, 2, 3, 3) and per_head.shape == (2, 3, 4)


def test_conv_same_padding(rng):
    conv = nn.Conv2d(2, 3, (3, 5), padding="same", dilation=2)
    assert conv.padding == "same"                         # as PyTorch keeps it
    assert conv(mg.zeros(1, 2, 7, 9)).shape == (1, 3, 7, 9)
    assert nn.Conv1d(2, 2, 4, padding="valid")(mg.zeros(1, 2, 6)).shape == (1, 2, 3)
    # an even kernel pads one more zero after (PyTorch's rule), values checked in test_ops_conv
    assert nn.Conv2d(2, 2, 2, padding="same")(mg.zeros(1, 2, 5, 4)).shape == (1, 2, 5, 4)
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="transposed"):
        nn.ConvTranspose2d(2, 2, 3, padding="same")


# ---------------------------------------------------------------- optional PyTorch parity
def _load_from_torch(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def test_torch_parity_recurrent_and_attention(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    for ours, theirs in ((nn.LSTM(3, 4, num_layers=2, bidirectional=True),
                          torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True)),
                         (nn.GRU(3, 4, num_layers=2), torch.nn.GRU(3, 4, num_layers=2))):
        assert [n for n, _ in ours.named_parameters()] == \
            [n for n, _ in theirs.named_parameters()]
        _load_from_torch(ours, theirs)
        out, _ = ours(mg.tensor(x))
        ref, _ = theirs(torch.from_numpy(x))
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    ours, theirs = nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2)
    _load_from_torch(ours, theirs)
    q = rng.standard_normal((3, 2, 8)).astype(np.float32)
    kv = rng.standard_normal((4, 2, 8)).astype(np.float32)
    out, w = ours(mg.tensor(q), mg.tensor(kv), mg.tensor(kv))
    ref, ref_w = theirs(*(torch.from_numpy(a) for a in (q, kv, kv)))
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.numpy(), ref_w.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_layers_follow_the_default_device(monkeypatch):
    # PyTorch's set_default_device moves where layers build their parameters and buffers. The
    # GPU case runs where CuPy sees one; without, the layer's request for the default device
    # shows in the error (the CPU twin of the same path).
    import minigrad._backend as B

    if mg.cuda.is_available():
        mg.set_default_device("cuda")
        try:
            bn = nn.BatchNorm1d(3)
            assert nn.Linear(2, 3).weight.device == "cuda:0" and bn.running_mean.device == "cuda:0"
        finally:
            mg.set_default_device("cpu")
    else:
        monkeypatch.setattr(B, "default_device", ["cuda:0"])
        with pytest.raises(RuntimeError, match="'cuda:0' requested"):
            nn.Linear(2, 3)
