"""batch_norm, layer_norm, group_norm: NumPy references, gradcheck, running stats, fp16, torch."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.autodiff import grad
from minigrad.functional.normalization import batch_norm, group_norm, layer_norm
from minigrad.testing import gradcheck


def _t(a, device, **kw):
    return mg.tensor(np.asarray(a), device=device, **kw)


def _bn_ref(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = x.mean(axes), x.var(axes)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return y * w.reshape(shape) + b.reshape(shape), mean, var


# --------------------------------------------------------------------------- batch norm
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 2, 5), (2, 3, 4)])
def test_batch_norm_training_matches_numpy_and_updates_running_stats(device, rng, shape):
    x = rng.standard_normal(shape) * 3 + 1
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    rm, rv = _t(np.full(3, 0.5, np.float32), device), _t(np.full(3, 2.0, np.float32), device)
    v0 = rm._version
    y = batch_norm(_t(x, device), rm, rv, _t(w, device), _t(b, device), training=True,
                   momentum=0.2)
    ref, mean, var = _bn_ref(x, w, b)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)
    n = x.size // 3
    np.testing.assert_allclose(rm.numpy(), 0.8 * 0.5 + 0.2 * mean, rtol=1e-5)
    np.testing.assert_allclose(rv.numpy(), 0.8 * 2.0 + 0.2 * var * n / (n - 1), rtol=1e-5)
    assert rm._version == v0 + 1 and rm.dtype == mg.float32


def test_batch_norm_eval_uses_running_stats(device, rng):
    x = rng.standard_normal((5, 4, 3))
    rm, rv = rng.standard_normal(4), rng.random(4) + 0.5
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    rmt, rvt = _t(rm, device), _t(rv, device)
    y = batch_norm(_t(x, device), rmt, rvt, _t(w, device), _t(b, device), training=False)
    ref = (x - rm[:, None]) / np.sqrt(rv[:, None] + 1e-5) * w[:, None] + b[:, None]
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10)
    np.testing.assert_array_equal(rmt.numpy(), rm)  # eval never updates


def test_batch_norm_without_affine_or_running_stats(device, rng):
    x = rng.standard_normal((8, 2))
    y = batch_norm(_t(x, device), None, None, training=True)
    np.testing.assert_allclose(y.numpy(), _bn_ref(x, np.ones(2), np.zeros(2))[0], atol=1e-10)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(device, rng, training):
    x = rng.standard_normal((4, 3, 2))
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    rm, rv = rng.standard_normal(3), rng.random(3) + 0.5

    def f(x, w, b):
        return batch_norm(x, _t(rm, device), _t(rv, device), w, b, training=training)

    assert gradcheck(f, [x, w, b], device=device)


def test_batch_norm_fp16_input_fp32_stats(device, rng):
    x = (rng.standard_normal((16, 4, 3)) * 2 + 3).astype(np.float16)
    rm, rv = mg.zeros(4, device=device), mg.ones(4, device=device)
    w = mg.Parameter(np.ones(4, np.float32), device=device)
    b = mg.Parameter(np.zeros(4, np.float32), device=device)
    xt = mg.tensor(x, device=device, requires_grad=True)
    y = batch_norm(xt, rm, rv, w, b, training=True)
    assert y.dtype == mg.float16 and rm.dtype == mg.float32
    ref, mean, _ = _bn_ref(x.astype(np.float64), np.ones(4), np.zeros(4))
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref, atol=5e-3)
    np.testing.assert_allclose(rm.numpy(), 0.1 * mean, rtol=1e-4)
    y.astype(mg.float32).sum().backward()
    assert xt.grad.dtype == mg.float16 and w.grad.dtype == mg.float32
    np.testing.assert_allclose(b.grad.numpy(), np.full(4, 48.0))


def test_batch_norm_errors(device):
    with pytest.raises(ValueError, match="batch_norm.*more than one value"):
        batch_norm(mg.ones(1, 3, device=device), None, None, training=True)
    with pytest.raises(ValueError, match="batch_norm.*running_mean"):
        batch_norm(mg.ones(4, 3, device=device), mg.zeros(5, device=device),
                   mg.ones(3, device=device), training=True)
    with pytest.raises(ValueError, match="training=False needs"):
        batch_norm(mg.ones(4, 3, device=device), None, None, training=False)


def test_batch_norm_double_backward_is_a_clear_error(device, rng):
    x = _t(rng.standard_normal((4, 3)), device, requires_grad=True)
    y = batch_norm(x, None, None, training=True)
    (gx,) = grad((y * y).sum(), [x], create_graph=True)
    with pytest.raises(NotImplementedError, match="double backward.*batch_norm"):
        gx.sum().backward()


# --------------------------------------------------------------------------- layer / group norm
def _ln_ref(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("ns", [(5,), (3, 5)])
def test_layer_norm_matches_numpy(device, rng, ns):
    x = rng.standard_normal((2, 3, 5)) * 4 - 2
    w, b = rng.standard_normal(ns), rng.standard_normal(ns)
    y = layer_norm(_t(x, device), ns, _t(w, device), _t(b, device))
    np.testing.assert_allclose(y.numpy(), _ln_ref(x, len(ns), w, b), rtol=1e-10, atol=1e-12)
    y2 = layer_norm(_t(x, device), ns[-1] if len(ns) == 1 else ns)
    np.testing.assert_allclose(y2.numpy(), _ln_ref(x, len(ns)), atol=1e-12)


def test_layer_norm_gradcheck(device, rng):
    x = rng.standard_normal((3, 2, 4))
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    assert gradcheck(lambda x, w, b: layer_norm(x, 4, w, b), [x, w, b], device=device)
    assert gradcheck(lambda x: layer_norm(x, (2, 4)), [x], device=device)


def test_layer_norm_fp16_keeps_dtype_and_fp32_accuracy(device, rng):
    x = (rng.standard_normal((4, 256)) * 50 + 1000).astype(np.float16)
    w = mg.ones(256, device=device)  # float32 affine with float16 data
    y = layer_norm(_t(x, device), 256, w)
    assert y.dtype == mg.float16
    np.testing.assert_allclose(y.numpy().astype(np.float64), _ln_ref(x.astype(np.float64), 1),
                               atol=4e-3)


def test_layer_norm_shape_error(device):
    with pytest.raises(ValueError, match="layer_norm.*trailing"):
        layer_norm(mg.ones(2, 3, device=device), (2,))


def _gn_ref(x, g, w, b, eps=1e-5):
    n, c = x.shape[:2]
    xg = x.reshape(n, g, -1)
    y = ((xg - xg.mean(2, keepdims=True)) / np.sqrt(xg.var(2, keepdims=True) + eps)).reshape(
        x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * w.reshape(shape) + b.reshape(shape)


def test_group_norm_matches_numpy_and_gradcheck(device, rng):
    x = rng.standard_normal((2, 6, 3, 2))
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    y = group_norm(_t(x, device), 3, _t(w, device), _t(b, device))
    np.testing.assert_allclose(y.numpy(), _gn_ref(x, 3, w, b), rtol=1e-10, atol=1e-12)
    x = rng.standard_normal((2, 4, 3))
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    assert gradcheck(lambda x, w, b: group_norm(x, 2, w, b), [x, w, b], device=device)
    assert gradcheck(lambda x: group_norm(x, 4), [x], device=device)


def test_group_norm_errors(device):
    with pytest.raises(ValueError, match="group_norm.*divisible"):
        group_norm(mg.ones(2, 6, device=device), 4)


# --------------------------------------------------------------------------- torch references
def test_norms_match_torch(rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    gy = rng.standard_normal(x.shape).astype(np.float32)

    def run(lib, fn, params):
        ts = [lib.tensor(a, requires_grad=True) for a in [x] + params]
        y = fn(*ts)
        y.backward(lib.tensor(gy))
        return [np.asarray(y.detach().numpy())] + [np.asarray(t.grad.numpy()) for t in ts]

    rm, rv = mg.zeros(6), mg.ones(6)
    trm, trv = torch.zeros(6), torch.ones(6)
    p6 = [rng.standard_normal(6).astype(np.float32) for _ in range(2)]
    p5 = [rng.standard_normal(5).astype(np.float32) for _ in range(2)]
    cases = [
        (lambda x, w, b: batch_norm(x, rm, rv, w, b, training=True, momentum=0.3),
         lambda x, w, b: tf.batch_norm(x, trm, trv, w, b, True, 0.3), p6),
        (lambda x, w, b: group_norm(x, 3, w, b), lambda x, w, b: tf.group_norm(x, 3, w, b), p6),
        (lambda x, w, b: layer_norm(x, 5, w, b), lambda x, w, b: tf.layer_norm(x, (5,), w, b),
         p5),
    ]
    for mine, ref, params in cases:
        for a, r in zip(run(mg, mine, params), run(torch, ref, params)):
            np.testing.assert_allclose(a, r, rtol=2e-4, atol=3e-5)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-5)


def test_empty_batch_forward_and_backward(rng):
    # PyTorch returns an empty output and zero-size gradients for N = 0 (no 0/0 anywhere).
    w, b = rng.standard_normal(4) + 2, rng.standard_normal(4)
    for fn, shape in ((lambda x, w, b: group_norm(x, 2, w, b), (0, 4, 3)),
                      (lambda x, w, b: layer_norm(x, (4,), w, b), (0, 4)),
                      (lambda x, w, b: layer_norm(x, (4,), w, b), (2, 0, 4))):
        x = mg.tensor(np.zeros(shape), requires_grad=True)
        tw, tb = mg.tensor(w, requires_grad=True), mg.tensor(b, requires_grad=True)
        y = fn(x, tw, tb)
        assert y.shape == shape
        (y * 2.0).sum().backward()
        assert x.grad.shape == shape
        assert tw.grad.tolist() == [0.0] * 4 and tb.grad.tolist() == [0.0] * 4
        assert gradcheck(fn, [np.zeros(shape), w, b])
