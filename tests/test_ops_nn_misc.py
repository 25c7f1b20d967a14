"""softmax / log_softmax, dropout, embedding, scaled_dot_product_attention, recurrent cells."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.autodiff import grad
from minigrad.functional.activation import log_softmax, softmax
from minigrad.functional.attention import scaled_dot_product_attention as sdpa
from minigrad.functional.dropout import dropout
from minigrad.functional.recurrent import gru_cell, lstm_cell, rnn_tanh_cell
from minigrad.functional.sparse import embedding
from minigrad.testing import gradcheck, gradgradcheck


def _t(a, device, **kw):
    return mg.tensor(np.asarray(a), device=device, **kw)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# --------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax_match_numpy(device, rng, axis):
    x = rng.standard_normal((3, 4, 5)) * 5
    np.testing.assert_allclose(softmax(_t(x, device), axis).numpy(), _softmax(x, axis),
                               rtol=1e-12)
    np.testing.assert_allclose(log_softmax(_t(x, device), axis).numpy(),
                               np.log(_softmax(x, axis)), rtol=1e-10, atol=1e-12)


def test_softmax_gradcheck_and_double_backward(device, rng):
    x = rng.standard_normal((3, 4))
    for fn in (softmax, log_softmax):
        for axis in (0, -1):
            assert gradcheck(lambda x, f=fn, a=axis: f(x, a), [x], device=device)
            assert gradgradcheck(lambda x, f=fn, a=axis: f(x, a), [x], device=device)


def test_softmax_stable_for_huge_logits(device):
    x = _t([[1000.0, 1000.0, -1000.0]], device)
    np.testing.assert_allclose(softmax(x).numpy(), [[0.5, 0.5, 0.0]])
    np.testing.assert_allclose(log_softmax(x).numpy()[0, :2], [-np.log(2)] * 2, rtol=1e-6)


def test_softmax_fp16_accumulates_in_fp32(device, rng):
    x = (rng.standard_normal((2, 4096)) * 4).astype(np.float16)
    y = softmax(_t(x, device))
    assert y.dtype == mg.float16
    np.testing.assert_allclose(y.numpy().astype(np.float64).sum(-1), 1.0, atol=2e-3)
    np.testing.assert_allclose(y.numpy().astype(np.float64), _softmax(x.astype(np.float64)),
                               rtol=2e-3, atol=1e-7)
    ls = log_softmax(_t(x, device))
    assert ls.dtype == mg.float16
    np.testing.assert_allclose(ls.numpy().astype(np.float64),
                               np.log(_softmax(x.astype(np.float64))), rtol=2e-3, atol=1e-2)
    xt = _t(x, device, requires_grad=True)
    (softmax(xt) * _t(np.ones_like(x), device)).sum().backward()
    assert xt.grad.dtype == mg.float16
    np.testing.assert_allclose(xt.grad.numpy().astype(np.float64), 0, atol=1e-3)


def test_softmax_rejects_integers(device):
    with pytest.raises(ValueError, match="softmax.*floating"):
        softmax(mg.arange(4, device=device))


# --------------------------------------------------------------------------- dropout
def test_dropout_identity_cases(device, rng):
    x = _t(rng.standard_normal((4, 5)), device)
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
    np.testing.assert_array_equal(dropout(x, 1.0).numpy(), np.zeros((4, 5)))
    with pytest.raises(ValueError, match="dropout.*p must be"):
        dropout(x, 1.5)


def test_dropout_statistics_and_scaling(device):
    x = mg.ones(200, 500, device=device)
    y = dropout(x, 0.3).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert abs(y.mean() - 1.0) < 0.02


def test_dropout_determinism_and_gradient(device, rng):
    x = rng.standard_normal((6, 7))
    mg.manual_seed(3)
    a = dropout(_t(x, device), 0.4).numpy()
    mg.manual_seed(3)
    xt = _t(x, device, requires_grad=True)
    b = dropout(xt, 0.4)
    np.testing.assert_array_equal(a, b.numpy())
    assert not np.array_equal(a, dropout(_t(x, device), 0.4).numpy())  # the stream moved on
    b.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), (a != 0) / 0.6, rtol=1e-12)

    def f(x):
        mg.manual_seed(5)  # the same mask on every evaluation
        return dropout(x, 0.4)

    assert gradcheck(f, [x], device=device)
    assert gradgradcheck(lambda x: f(x) * f(x), [x], device=device)


def test_dropout_fp16_dtype(device):
    y = dropout(mg.ones(64, dtype=mg.float16, device=device), 0.1)
    assert y.dtype == mg.float16
    assert set(np.unique(y.numpy()).tolist()) <= {0.0, float(np.float16(1 / 0.9))}


# --------------------------------------------------------------------------- embedding
def test_embedding_forward_and_repeated_index_gradient(device, rng):
    w = rng.standard_normal((5, 3))
    idx = np.array([[0, 2, 2], [4, 2, 0]])
    wt = _t(w, device, requires_grad=True)
    y = embedding(_t(idx, device), wt)
    np.testing.assert_array_equal(y.numpy(), w[idx])
    gy = rng.standard_normal((2, 3, 3))
    y.backward(_t(gy, device))
    ref = np.zeros_like(w)
    np.add.at(ref, idx.reshape(-1), gy.reshape(-1, 3))
    np.testing.assert_allclose(wt.grad.numpy(), ref, rtol=1e-12)
    assert np.all(wt.grad.numpy()[[1, 3]] == 0)


def test_embedding_padding_idx_and_gradchecks(device, rng):
    w = rng.standard_normal((4, 2))
    idx = _t(np.array([3, 1, 3, 0]), device)
    wt = _t(w, device, requires_grad=True)
    embedding(idx, wt, padding_idx=-1).sum().backward()
    np.testing.assert_array_equal(wt.grad.numpy(), [[1, 1], [1, 1], [0, 0], [0, 0]])
    assert gradcheck(lambda w: embedding(idx, w, padding_idx=2), [w], device=device)
    # padding_idx=1 is looked up: the gradient is masked and so is its derivative
    assert gradgradcheck(lambda w: embedding(idx, w, padding_idx=1) ** 2, [w], device=device)


def test_embedding_fp16_gradient_accumulates_in_fp32(device):
    w = mg.zeros(2, 1, dtype=mg.float16, device=device, requires_grad=True)
    idx = _t(np.zeros(4096, np.int64), device)
    y = embedding(idx, w)
    y.backward(mg.full((4096, 1), 0.001, dtype=mg.float16, device=device))
    assert w.grad.dtype == mg.float16
    np.testing.assert_allclose(float(w.grad.numpy()[0, 0]), 4096 * float(np.float16(0.001)),
                               rtol=1e-3)


def test_embedding_errors(device):
    w = mg.zeros(3, 2, device=device)
    with pytest.raises(ValueError, match="embedding.*integer"):
        embedding(mg.zeros(2, device=device), w)
    with pytest.raises(ValueError, match="embedding.*padding_idx"):
        embedding(_t([0], device), w, padding_idx=3)


# --------------------------------------------------------------------------- attention
def _sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        mask = np.tril(np.ones(s.shape[-2:], bool))
    if mask is not None and mask.dtype == bool:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    return _softmax(s) @ v


def test_attention_matches_numpy(device, rng):
    q = rng.standard_normal((2, 3, 4, 8))
    k = rng.standard_normal((2, 3, 6, 8))
    v = rng.standard_normal((2, 3, 6, 5))
    bmask = rng.random((4, 6)) > 0.3
    bmask[:, 0] = True
    fmask = rng.standard_normal((1, 3, 4, 6))
    T = [_t(a, device) for a in (q, k, v)]
    cases = [({}, {}), ({"attn_mask": _t(bmask, device)}, {"mask": bmask}),
             ({"attn_mask": _t(fmask, device)}, {"mask": fmask}),
             ({"is_causal": True}, {"causal": True}), ({"scale": 0.5}, {"scale": 0.5})]
    for ours, ref in cases:
        np.testing.assert_allclose(sdpa(*T, **ours).numpy(), _sdpa_ref(q, k, v, **ref),
                                   rtol=1e-10, atol=1e-12)


def test_attention_gradcheck(device, rng):
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    mask = rng.standard_normal((3, 3))
    bmask = _t(rng.random((3, 3)) > 0.4, device)
    assert gradcheck(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), [q, k, v, mask],
                     device=device)
    assert gradcheck(lambda q, k, v: sdpa(q, k, v, is_causal=True, scale=0.3), [q, k, v],
                     device=device)
    assert gradcheck(lambda q, k, v: sdpa(q, k, v, attn_mask=bmask), [q, k, v], device=device)
    # broadcast batch dims: one key/value set shared by two query batches
    assert gradcheck(lambda q, k, v: sdpa(q, k, v), [q, k[:1], v[:1]], device=device)

    def dropped(q, k, v):
        mg.manual_seed(7)
        return sdpa(q, k, v, dropout_p=0.3)

    assert gradcheck(dropped, [q, k, v], device=device)


def test_attention_fully_masked_rows_are_zero_and_dropout_one(device, rng):
    q, k, v = (_t(rng.standard_normal((3, 2)), device) for _ in range(3))
    mask = _t(np.array([[True, False, True], [False, False, False], [True, True, True]]), device)
    out = sdpa(q, k, v, attn_mask=mask).numpy()
    np.testing.assert_array_equal(out[1], [0.0, 0.0])
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(sdpa(q, k, v, dropout_p=1.0).numpy(), np.zeros((3, 2)))


def test_attention_fp16(device, rng):
    q, k, v = ((rng.standard_normal((2, 16, 32)) * 2).astype(np.float16) for _ in range(3))
    out = sdpa(*(_t(a, device) for a in (q, k, v)))
    assert out.dtype == mg.float16
    ref = _sdpa_ref(*(a.astype(np.float64) for a in (q, k, v)))
    np.testing.assert_allclose(out.numpy().astype(np.float64), ref, atol=0.03, rtol=0.01)


def test_attention_errors(device):
    q = mg.zeros(2, 3, device=device)
    with pytest.raises(ValueError, match="scaled_dot_product_attention.*not both"):
        sdpa(q, q, q, attn_mask=mg.zeros(2, 2, device=device), is_causal=True)
    with pytest.raises(ValueError, match="scaled_dot_product_attention.*expects"):
        sdpa(q, mg.zeros(2, 4, device=device), q)
    with pytest.raises(ValueError, match="share a dtype"):
        sdpa(q, q.astype(mg.float16), q)


# --------------------------------------------------------------------------- recurrent cells
def _rnn_ref(x, h, w_ih, w_hh, b_ih, b_hh):
    return np.tanh(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh)


def _lstm_ref(x, h, c, w_ih, w_hh, b_ih, b_hh):
    g = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, gg, o = np.split(g, 4, axis=-1)
    c2 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
    return _sigmoid(o) * np.tanh(c2), c2


def _gru_ref(x, h, w_ih, w_hh, b_ih, b_hh):
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    (ir, iz, inn), (hr, hz, hn) = np.split(gi, 3, -1), np.split(gh, 3, -1)
    r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
    n = np.tanh(inn + r * hn)
    return (1 - z) * n + z * h


def _cell_args(rng, gates, n=2, i=3, h=2):
    return [rng.standard_normal(s) for s in
            ((n, i), (n, h), (gates * h, i), (gates * h, h), (gates * h,), (gates * h,))]


def test_cells_match_numpy(device, rng):
    a = _cell_args(rng, 1)
    np.testing.assert_allclose(rnn_tanh_cell(*(_t(v, device) for v in a)).numpy(), _rnn_ref(*a),
                               rtol=1e-12)
    a = _cell_args(rng, 3)
    np.testing.assert_allclose(gru_cell(*(_t(v, device) for v in a)).numpy(), _gru_ref(*a),
                               rtol=1e-12)
    a = _cell_args(rng, 4)
    c = rng.standard_normal((2, 2))
    T = [_t(v, device) for v in a]
    h2, c2 = lstm_cell(T[0], (T[1], _t(c, device)), *T[2:])
    rh, rc = _lstm_ref(a[0], a[1], c, *a[2:])
    np.testing.assert_allclose(h2.numpy(), rh, rtol=1e-12)
    np.testing.assert_allclose(c2.numpy(), rc, rtol=1e-12)


def test_cells_gradcheck(device, rng):
    a = _cell_args(rng, 1)
    assert gradcheck(lambda *t: rnn_tanh_cell(*t), a, device=device)
    a = _cell_args(rng, 3)
    assert gradcheck(lambda *t: gru_cell(*t), a, device=device)
    a = _cell_args(rng, 4)
    c = rng.standard_normal((2, 2))
    assert gradcheck(lambda x, h, c, *w: lstm_cell(x, (h, c), *w), a[:2] + [c] + a[2:],
                     device=device)
    # only the hidden output used: the engine feeds zeros for the cell-state gradient
    assert gradcheck(lambda x, h, c, *w: lstm_cell(x, (h, c), *w)[0], a[:2] + [c] + a[2:],
                     device=device)
    # without biases, unbatched
    assert gradcheck(lambda x, h, wi, wh: gru_cell(x, h, wi, wh), [a[0][0], a[1][0][:2]]
                     + [w[:6] for w in _cell_args(rng, 3)[2:4]], device=device)


def test_cells_unbatched_and_fp16(device, rng):
    a = _cell_args(rng, 4)
    c = rng.standard_normal((2, 2))
    h1, c1 = lstm_cell(_t(a[0][0], device), (_t(a[1][0], device), _t(c[0], device)),
                       *(_t(v, device) for v in a[2:]))
    rh, rc = _lstm_ref(a[0][:1], a[1][:1], c[:1], *a[2:])
    assert h1.shape == (2,)
    np.testing.assert_allclose(h1.numpy(), rh[0], rtol=1e-12)
    np.testing.assert_allclose(c1.numpy(), rc[0], rtol=1e-12)
    T = [_t(v.astype(np.float16), device, requires_grad=True) for v in a]
    cc = _t(c.astype(np.float16), device)
    h2, c2 = lstm_cell(T[0], (T[1], cc), *T[2:])
    assert h2.dtype == c2.dtype == mg.float16
    np.testing.assert_allclose(h2.numpy().astype(np.float64), rh if False else _lstm_ref(
        *(v.astype(np.float16).astype(np.float64) for v in a[:2]),
        c.astype(np.float16).astype(np.float64),
        *(v.astype(np.float16).astype(np.float64) for v in a[2:]))[0], atol=2e-3)
    (h2.astype(mg.float32).sum() + c2.astype(mg.float32).sum()).backward()
    assert all(t.grad.dtype == mg.float16 for t in T)


def test_cells_shape_errors(device):
    x, h = mg.zeros(2, 3, device=device), mg.zeros(2, 4, device=device)
    with pytest.raises(ValueError, match=r"lstm_cell.*\(4\*H, I\)"):
        lstm_cell(x, (h, h), mg.zeros(12, 3, device=device), mg.zeros(16, 4, device=device))


def test_cell_double_backward_is_a_clear_error(device, rng):
    a = [_t(v, device, requires_grad=True) for v in _cell_args(rng, 3)]
    (gx,) = grad(gru_cell(*a).sum(), [a[0]], create_graph=True)  # gy = 1 is a constant
    with pytest.raises(NotImplementedError, match="double backward"):
        gx.sum().backward()


# --------------------------------------------------------------------------- torch references
def test_nn_misc_match_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    for mine, ref in [(softmax, torch.softmax), (log_softmax, torch.log_softmax)]:
        xt, tt = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        gy = rng.standard_normal(x.shape).astype(np.float32)
        a, r = mine(xt, 1), ref(tt, 1)
        a.backward(mg.tensor(gy))
        r.backward(torch.tensor(gy))
        np.testing.assert_allclose(a.numpy(), r.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-4, atol=1e-6)

    q, k, v = (rng.standard_normal((2, 4, 6, 8)).astype(np.float32) for _ in range(3))
    mask = rng.random((6, 6)) > 0.3
    mask[:, 0] = True
    ms = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    for kw_mg, kw_t in [({"attn_mask": mg.tensor(mask)}, {"attn_mask": torch.tensor(mask)}),
                        ({"is_causal": True}, {"is_causal": True})]:
        a = sdpa(*ms, **kw_mg)
        r = torch.nn.functional.scaled_dot_product_attention(*ts, **kw_t)
        np.testing.assert_allclose(a.numpy(), r.detach().numpy(), rtol=1e-4, atol=1e-5)
        a.sum().backward()
        r.sum().backward()
        for m, t in zip(ms, ts):
            np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-3, atol=1e-5)

    xs = rng.standard_normal((3, 4)).astype(np.float32)
    hs = rng.standard_normal((3, 5)).astype(np.float32)
    cs = rng.standard_normal((3, 5)).astype(np.float32)
    for cls, fn in [(torch.nn.RNNCell, rnn_tanh_cell), (torch.nn.GRUCell, gru_cell),
                    (torch.nn.LSTMCell, lstm_cell)]:
        cell = cls(4, 5)
        ws = [mg.tensor(p.detach().numpy(), requires_grad=True) for p in
              (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)]
        xt, tt = mg.tensor(xs, requires_grad=True), torch.tensor(xs, requires_grad=True)
        if cls is torch.nn.LSTMCell:
            a = fn(xt, (mg.tensor(hs), mg.tensor(cs)), *ws)
            r = cell(tt, (torch.tensor(hs), torch.tensor(cs)))
            (a[0] * 2 + a[1]).sum().backward()
            (r[0] * 2 + r[1]).sum().backward()
            a, r = a[1], r[1]
        else:
            a, r = fn(xt, mg.tensor(hs), *ws), cell(tt, torch.tensor(hs))
            a.sum().backward()
            r.sum().backward()
        np.testing.assert_allclose(a.numpy(), r.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-4, atol=1e-5)
        for w, p in zip(ws, (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)):
            np.testing.assert_allclose(w.grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5)
