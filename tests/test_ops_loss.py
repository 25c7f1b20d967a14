"""Losses: NumPy references (PyTorch semantics), gradcheck incl. targets, fp16 -> fp32, torch."""

import contextlib

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad.functional import nn as Fnn
from minigrad.functional.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_similarity,
    cross_entropy,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from minigrad._backend.indexing import index_debug
from minigrad.testing import gradcheck


def _t(a, device, **kw):
    return mg.tensor(np.asarray(a), device=device, **kw)


def _log_softmax(x, axis):
    z = x - x.max(axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis, keepdims=True))


def _reduce(loss, reduction, denom=None):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / (
        loss.size if denom is None else denom)


def _ce_ref(x, t, w=None, ignore=-100, reduction="mean", eps=0.0):
    """Class-index cross-entropy, class axis 1, written from the PyTorch definition."""
    logp = np.moveaxis(_log_softmax(x, 1), 1, -1)  # (..., C)
    c = logp.shape[-1]
    w = np.ones(c) if w is None else w
    valid = t != ignore
    ts = np.where(valid, t, 0)
    picked = np.take_along_axis(logp, ts[..., None], -1)[..., 0]
    wt = w[ts] * valid
    nll = -wt * picked
    smooth = -(logp * w).sum(-1) * valid
    loss = (1 - eps) * nll + eps / c * smooth
    return _reduce(loss, reduction, wt.sum())


# --------------------------------------------------------------------------- cross entropy
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("eps", [0.0, 0.15])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_class_indices_matches_numpy(device, rng, reduction, eps, weighted):
    x = rng.standard_normal((6, 4)) * 3
    t = np.array([0, 3, -100, 1, 2, 3])
    w = rng.random(4) + 0.5 if weighted else None
    out = cross_entropy(_t(x, device), _t(t, device), weight=None if w is None else _t(w, device),
                        reduction=reduction, label_smoothing=eps)
    np.testing.assert_allclose(out.numpy(), _ce_ref(x, t, w, -100, reduction, eps), rtol=1e-10)


def test_cross_entropy_spatial_and_ignore_index(device, rng):
    x = rng.standard_normal((2, 3, 4, 2))
    t = rng.integers(0, 3, (2, 4, 2))
    t[0, 1, 1] = t[1, 2, 0] = 7
    out = cross_entropy(_t(x, device), _t(t, device), ignore_index=7)
    np.testing.assert_allclose(out.item(), _ce_ref(x, t, ignore=7), rtol=1e-10)
    assert gradcheck(lambda x: cross_entropy(x, _t(t, device), ignore_index=7,
                                             label_smoothing=0.1), [x], device=device)


def test_cross_entropy_known_value_and_axis(device):
    # uniform logits over 4 classes: loss = log 4 for every row
    x = mg.zeros(3, 4, device=device)
    assert abs(cross_entropy(x, _t([0, 1, 3], device)).item() - np.log(4)) < 1e-6
    # class axis last
    x = np.random.default_rng(1).standard_normal((3, 5))
    t = np.array([4, 0, 2])
    out = cross_entropy(_t(x.T.copy(), device), _t(t, device), axis=0)
    np.testing.assert_allclose(out.item(), _ce_ref(x, t), rtol=1e-10)
    # unbatched (C,) logits with a scalar target
    out = cross_entropy(_t(x[0], device), _t(np.int64(4), device))
    np.testing.assert_allclose(out.item(), -_log_softmax(x[0], 0)[4], rtol=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_gradcheck_class_indices(device, rng, weighted):
    x = rng.standard_normal((5, 4))
    t = _t(np.array([1, 0, 3, -100, 3]), device)
    w = _t(rng.random(4) + 0.5, device) if weighted else None
    for reduction in ("mean", "sum", "none"):
        assert gradcheck(lambda x, r=reduction: cross_entropy(x, t, weight=w, reduction=r,
                                                 label_smoothing=0.2), [x], device=device)


def test_cross_entropy_probabilities(device, rng):
    x = rng.standard_normal((4, 5))
    p = rng.random((4, 5))
    p /= p.sum(1, keepdims=True)
    w = rng.random(5) + 0.5
    logp = _log_softmax(x, 1)
    for eps in (0.0, 0.3):
        q = p * (1 - eps) + eps / 5
        ref = -(logp * q * w).sum(1).mean()
        out = cross_entropy(_t(x, device), _t(p, device), weight=_t(w, device),
                            label_smoothing=eps)
        np.testing.assert_allclose(out.item(), ref, rtol=1e-10)
        assert gradcheck(lambda x, p, e=eps: cross_entropy(x, p, weight=_t(w, device),
                                                           label_smoothing=e, reduction="sum"),
                         [x, p], device=device)


def test_cross_entropy_fp16_gives_fp32_loss_and_fp16_grad(device, rng):
    x = (rng.standard_normal((8, 1000)) * 20).astype(np.float16)
    t = rng.integers(0, 1000, 8)
    xt = _t(x, device, requires_grad=True)
    loss = cross_entropy(xt, _t(t, device))
    assert loss.dtype == mg.float32
    np.testing.assert_allclose(loss.item(), _ce_ref(x.astype(np.float64), t), rtol=1e-5)
    loss.backward()
    assert xt.grad.dtype == mg.float16
    np.testing.assert_allclose(xt.grad.numpy().astype(np.float64).sum(1), 0, atol=1e-3)


def test_cross_entropy_errors(device):
    x = mg.zeros(2, 3, device=device)
    with _host_checks(device), pytest.raises(ValueError, match=r"cross_entropy.*\[0, 3\)"):
        cross_entropy(x, _t([0, 3], device))
    with pytest.raises(ValueError, match="cross_entropy.*target shape"):
        cross_entropy(x, _t([0, 1, 2], device))
    with pytest.raises(ValueError, match="cross_entropy.*reduction"):
        cross_entropy(x, _t([0, 1], device), reduction="avg")


def test_f_nn_cross_entropy_megengine_spelling(device, rng):
    x = rng.standard_normal((4, 3))
    t = np.array([2, 0, 1, 1])
    out = Fnn.cross_entropy(_t(x, device), _t(t, device), label_smooth=0.1)
    np.testing.assert_allclose(out.item(), _ce_ref(x, t, eps=0.1), rtol=1e-10)
    probs = np.exp(_log_softmax(x, 1))
    out = Fnn.cross_entropy(_t(probs, device), _t(t, device), with_logits=False)
    np.testing.assert_allclose(out.item(), _ce_ref(x, t), rtol=1e-10)
    assert Fnn.logsoftmax is Fnn.log_softmax and Fnn.square_loss is Fnn.mse_loss
    y = rng.random((4, 3))
    out = Fnn.binary_cross_entropy(_t(x, device), _t(y, device))  # logits by default
    ref = binary_cross_entropy_with_logits(_t(x, device), _t(y, device))
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-12)
    out = Fnn.binary_cross_entropy(_t(probs, device), _t(y, device), with_logits=False)
    np.testing.assert_allclose(out.item(), binary_cross_entropy(
        _t(probs, device), _t(y, device)).item(), rtol=1e-12)


def test_nll_loss(device, rng):
    x = _log_softmax(rng.standard_normal((5, 3, 2)), 1)
    t = np.array([[0, 2], [1, 1], [2, -100], [0, 0], [1, 2]])
    w = rng.random(3) + 0.5
    for reduction in ("mean", "sum", "none"):
        out = nll_loss(_t(x, device), _t(t, device), weight=_t(w, device), reduction=reduction)
        picked = np.take_along_axis(x, np.where(t < 0, 0, t)[:, None], 1)[:, 0]
        wt = w[np.where(t < 0, 0, t)] * (t >= 0)
        np.testing.assert_allclose(out.numpy(), _reduce(-wt * picked, reduction, wt.sum()),
                                   rtol=1e-10)
        assert gradcheck(lambda x, r=reduction: nll_loss(x, _t(t, device), weight=_t(w, device),
                                                          reduction=r), [x], device=device)


# --------------------------------------------------------------------------- pointwise losses
def _pointwise_refs(x, t, beta=1.0):
    d = x - t
    ad = np.abs(d)
    return {
        "mse": d * d,
        "l1": ad,
        "smooth": np.where(ad < beta, 0.5 * d * d / beta, ad - 0.5 * beta),
    }


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses_match_numpy_and_gradcheck(device, rng, reduction):
    x = rng.standard_normal((3, 4)) * 2
    t = rng.standard_normal((3, 4)) * 2
    refs = _pointwise_refs(x, t, beta=0.7)
    fns = {"mse": mse_loss, "l1": l1_loss,
           "smooth": lambda a, b, reduction: smooth_l1_loss(a, b, reduction, beta=0.7)}
    for key, fn in fns.items():
        out = fn(_t(x, device), _t(t, device), reduction=reduction)
        np.testing.assert_allclose(out.numpy(), _reduce(refs[key], reduction), rtol=1e-10)
        # both input and target take gradients
        assert gradcheck(lambda a, b, fn=fn: fn(a, b, reduction=reduction), [x, t],
                         device=device)


def test_mse_broadcast_target_and_fp16(device, rng):
    x = rng.standard_normal((4, 3))
    t = rng.standard_normal(3)
    with pytest.warns(UserWarning, match=r"mse_loss: target shape \(3,\) differs"):
        out = mse_loss(_t(x, device), _t(t, device))
    np.testing.assert_allclose(out.item(), ((x - t) ** 2).mean(), rtol=1e-10)
    with pytest.warns(UserWarning):
        assert gradcheck(lambda a, b: mse_loss(a, b), [x, t], device=device)
    big = np.full((64, 64), 300.0, np.float16)  # squares overflow float16, not float32
    out = mse_loss(_t(big, device), mg.zeros(64, 64, dtype=mg.float16, device=device))
    assert out.dtype == mg.float32 and out.item() == 90000.0


def test_smooth_l1_beta_zero_is_l1(device, rng):
    x, t = rng.standard_normal(6), rng.standard_normal(6)
    a = smooth_l1_loss(_t(x, device), _t(t, device), beta=0.0)
    np.testing.assert_allclose(a.item(), np.abs(x - t).mean(), rtol=1e-12)


def test_binary_cross_entropy(device, rng):
    p = rng.random((3, 4)) * 0.9 + 0.05
    t = rng.random((3, 4))
    w = rng.random(4) + 0.5
    ref = -(t * np.log(p) + (1 - t) * np.log(1 - p)) * w
    for reduction in ("mean", "sum", "none"):
        out = binary_cross_entropy(_t(p, device), _t(t, device), _t(w, device), reduction)
        np.testing.assert_allclose(out.numpy(), _reduce(ref, reduction), rtol=1e-10)
    assert gradcheck(lambda a, b: binary_cross_entropy(a, b, _t(w, device)), [p, t],
                     device=device, eps=1e-7)
    # log clamped at -100: p = 0 with target 1 costs exactly 100
    out = binary_cross_entropy(_t([0.0, 1.0], device), _t([1.0, 1.0], device), reduction="none")
    np.testing.assert_allclose(out.numpy(), [100.0, 0.0])


def test_binary_cross_entropy_with_logits(device, rng):
    x = rng.standard_normal((3, 4)) * 3
    t = rng.random((3, 4))
    w, pw = rng.random((3, 1)) + 0.5, rng.random(4) + 0.5
    sig = 1 / (1 + np.exp(-x))
    ref = -(pw * t * np.log(sig) + (1 - t) * np.log(1 - sig)) * w
    out = binary_cross_entropy_with_logits(_t(x, device), _t(t, device), _t(w, device),
                                           _t(pw, device), reduction="none")
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    assert gradcheck(lambda a, b: binary_cross_entropy_with_logits(
        a, b, _t(w, device), _t(pw, device)), [x, t], device=device)
    assert gradcheck(lambda a, b: binary_cross_entropy_with_logits(a, b, reduction="sum"),
                     [x, t], device=device)
    # stable for huge logits (no inf / nan)
    out = binary_cross_entropy_with_logits(_t([1000.0, -1000.0], device), _t([0.0, 1.0], device),
                                           reduction="none")
    np.testing.assert_allclose(out.numpy(), [1000.0, 1000.0])


def test_cosine_similarity(device, rng):
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    ref = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(cosine_similarity(_t(a, device), _t(b, device)).numpy(), ref,
                               rtol=1e-12)
    assert gradcheck(lambda a, b: cosine_similarity(a, b), [a, b], device=device)
    assert gradcheck(lambda a, b: cosine_similarity(a, b, axis=0), [a, b[:1]], device=device)
    z = cosine_similarity(mg.zeros(2, 3, device=device), mg.ones(2, 3, device=device))
    np.testing.assert_array_equal(z.numpy(), [0.0, 0.0])


def test_kl_div(device, rng):
    x = _log_softmax(rng.standard_normal((3, 4)), 1)
    t = rng.random((3, 4))
    t[0, 0] = 0.0
    t /= t.sum(1, keepdims=True)
    pointwise = np.where(t > 0, t * np.log(np.where(t > 0, t, 1)), 0) - t * x
    for reduction, ref in [("sum", pointwise.sum()), ("mean", pointwise.mean()),
                           ("batchmean", pointwise.sum() / 3), ("none", pointwise)]:
        out = kl_div(_t(x, device), _t(t, device), reduction=reduction)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
        lt = np.log(t + 0.1)
        out = kl_div(_t(x, device), _t(lt, device), reduction=reduction, log_target=True)
        np.testing.assert_allclose(out.numpy(), _reduce(
            np.exp(lt) * (lt - x), "sum" if reduction == "batchmean" else reduction) / (
            3 if reduction == "batchmean" else 1), rtol=1e-10)
    t2 = rng.random((3, 4)) + 0.1
    assert gradcheck(lambda a, b: kl_div(a, b, reduction="batchmean"), [x, t2], device=device)
    assert gradcheck(lambda a, b: kl_div(a, b, log_target=True), [x, t2], device=device)


def test_losses_of_fp16_are_fp32(device, rng):
    x = _t(rng.random((4, 3)).astype(np.float16) * 0.8 + 0.1, device, requires_grad=True)
    t = _t(rng.random((4, 3)).astype(np.float16), device)
    for fn in (mse_loss, l1_loss, smooth_l1_loss, binary_cross_entropy,
               binary_cross_entropy_with_logits, kl_div):
        out = fn(x, t)
        assert out.dtype == mg.float32, fn.__name__
        out.backward()
        assert x.grad.dtype == mg.float16
        x.grad = None


# --------------------------------------------------------------------------- torch references
@pytest.mark.filterwarnings("ignore:reduction")
def test_losses_match_torch(rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = rng.standard_normal((6, 5, 3)).astype(np.float32)
    idx = rng.integers(0, 5, (6, 3))
    idx[2, 1] = -100
    p = rng.random((6, 5, 3)).astype(np.float32)
    w = (rng.random(5) + 0.5).astype(np.float32)

    def both(mine, ref, args, grad_args=(0,)):
        ms = [mg.tensor(a, requires_grad=i in grad_args) for i, a in enumerate(args)]
        ts = [torch.tensor(a, requires_grad=i in grad_args) for i, a in enumerate(args)]
        a, r = mine(*ms), ref(*ts)
        np.testing.assert_allclose(a.numpy(), r.detach().numpy(), rtol=1e-4, atol=1e-6)
        a.sum().backward()
        r.sum().backward()
        for i in grad_args:
            np.testing.assert_allclose(ms[i].grad.numpy(), ts[i].grad.numpy(), rtol=1e-4,
                                       atol=1e-6)

    for red in ("mean", "sum", "none"):
        both(lambda a, b, red=red: cross_entropy(a, b, weight=mg.tensor(w), reduction=red,
                                        label_smoothing=0.1),
             lambda a, b, red=red: tf.cross_entropy(a, b, weight=torch.tensor(w), reduction=red,
                                           label_smoothing=0.1), [x, idx])
        both(lambda a, b, red=red: cross_entropy(a, b, reduction=red, label_smoothing=0.2),
             lambda a, b, red=red: tf.cross_entropy(a, b, reduction=red, label_smoothing=0.2),
             [x, p], (0, 1))
        both(lambda a, b, red=red: nll_loss(a, b, reduction=red),
             lambda a, b, red=red: tf.nll_loss(a, b, reduction=red), [x, idx])
        y = rng.standard_normal(x.shape).astype(np.float32)
        for mine, ref in [(mse_loss, tf.mse_loss), (l1_loss, tf.l1_loss),
                          (smooth_l1_loss, tf.smooth_l1_loss)]:
            both(lambda a, b, m=mine, red=red: m(a, b, reduction=red),
                 lambda a, b, r=ref, red=red: r(a, b, reduction=red),
                 [x, y], (0, 1))
        sig = 1 / (1 + np.exp(-x))
        both(lambda a, b, red=red: binary_cross_entropy(a, b, reduction=red),
             lambda a, b, red=red: tf.binary_cross_entropy(a, b, reduction=red), [sig, p], (0, 1))
        pw = (rng.random(3) + 0.5).astype(np.float32)
        both(lambda a, b, red=red, pw=pw: binary_cross_entropy_with_logits(
                 a, b, pos_weight=mg.tensor(pw),
                                                           reduction=red),
             lambda a, b, red=red, pw=pw: tf.binary_cross_entropy_with_logits(
                 a, b, pos_weight=torch.tensor(pw),
                                                              reduction=red), [x, p], (0, 1))
    logp = np.log(p / p.sum(1, keepdims=True))
    for red in ("batchmean", "mean", "sum"):
        both(lambda a, b, red=red: kl_div(a, b, reduction=red),
             lambda a, b, red=red: tf.kl_div(a, b, reduction=red), [logp, p], (0, 1))
    both(lambda a, b: cosine_similarity(a, b), lambda a, b: tf.cosine_similarity(a, b),
         [x, p], (0, 1))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_second_derivative(reduction):
    # Gradient penalties differentiate the gradient of an MSE loss (seed 002).
    from minigrad.testing import gradgradcheck

    r = np.random.default_rng(3)
    gradgradcheck(lambda a, b: mse_loss(a, b, reduction=reduction),
                  [r.standard_normal((3, 4)), r.standard_normal((3, 4))])


def test_mse_loss_warns_when_shapes_broadcast(recwarn):
    x = mg.ones(4, 1)
    with pytest.warns(UserWarning, match=r"mse_loss: target shape \(4,\) differs from input "
                                         r"shape \(4, 1\); they broadcast to \(4, 4\)"):
        assert mse_loss(x, mg.ones(4)).item() == 0.0
    with pytest.warns(UserWarning, match="l1_loss"):
        l1_loss(x, mg.ones(4))
    recwarn.clear()
    mse_loss(x, mg.ones(4, 1))                     # same shapes, or a scalar target: silent
    mse_loss(x, mg.tensor(1.0))
    assert not [w for w in recwarn if "broadcast" in str(w.message)]


def test_binary_cross_entropy_rejects_values_outside_0_1(device):
    p = _t([0.2, 0.7], device)
    with _host_checks(device), pytest.raises(
            ValueError, match=r"binary_cross_entropy: target values must be in "
                              r"\[0, 1\].*target_min=-1\.0, target_max=2\.0"):
        binary_cross_entropy(p, _t([2.0, -1.0], device))
    with _host_checks(device), pytest.raises(ValueError,
                                             match="input values must be in .*with_logits"):
        binary_cross_entropy(_t([1.5, 0.5], device), _t([1.0, 0.0], device))
    assert np.isfinite(binary_cross_entropy(p, _t([0.0, 1.0], device)).item())


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"},
                                {"label_smoothing": 0.2}, {"weighted": True},
                                {"weighted": True, "label_smoothing": 0.1, "reduction": "none"}])
def test_cross_entropy_second_derivative(kw):
    from minigrad.testing import gradgradcheck

    r = np.random.default_rng(4)
    kw = dict(kw)
    if kw.pop("weighted", False):
        kw["weight"] = mg.tensor(r.random(5) + 0.5)
    x, t = r.standard_normal((4, 5)), mg.tensor([0, 3, -100, 4])
    assert gradgradcheck(lambda a: cross_entropy(a, t, **kw), [x])
    x3, t3 = r.standard_normal((2, 5, 3)), mg.tensor(r.integers(0, 5, (2, 3)))
    assert gradgradcheck(lambda a: cross_entropy(a, t3, **kw), [x3])
    p = r.random((4, 5))
    p /= p.sum(1, keepdims=True)
    assert gradgradcheck(lambda a, b: cross_entropy(a, b, **kw), [x, p])   # target too


def test_cross_entropy_gradient_penalty_matches_array_backward(rng):
    """The op-written backward (create_graph=True) equals the fast array one."""
    from minigrad.autodiff import grad

    x = mg.tensor(rng.standard_normal((6, 4)).astype(np.float32), requires_grad=True)
    t = mg.tensor([0, 1, 2, 3, 0, -100])
    w = mg.tensor(np.float32([1.0, 2.0, 0.5, 1.0]))
    fast, = grad(cross_entropy(x, t, weight=w, label_smoothing=0.1), [x])
    slow, = grad(cross_entropy(x, t, weight=w, label_smoothing=0.1), [x], create_graph=True)
    assert slow.requires_grad and slow.dtype == fast.dtype == mg.float32
    np.testing.assert_allclose(slow.numpy(), fast.numpy(), rtol=1e-6, atol=1e-7)
    (slow * slow).sum().backward()                 # the penalty differentiates through it
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()


def test_cross_entropy_axis_and_weight_errors():
    with pytest.raises(ValueError, match=r"cross_entropy: weight must have shape \(3,\)"):
        cross_entropy(mg.zeros(2, 3), mg.tensor([0, 1]), weight=mg.ones(5))
    with pytest.raises(IndexError, match="cross_entropy: axis 5 is out of range for a 2-D"):
        cross_entropy(mg.zeros(2, 3), mg.tensor([0, 1]), axis=5)


SHAPE_LOSSES = [mse_loss, l1_loss, smooth_l1_loss, binary_cross_entropy,
                binary_cross_entropy_with_logits, kl_div, F.huber_loss, F.soft_margin_loss,
                F.poisson_nll_loss, F.hinge_embedding_loss]


@pytest.mark.parametrize("loss", SHAPE_LOSSES, ids=lambda f: f.__name__)
def test_non_broadcastable_shapes_raise_naming_the_loss(loss, recwarn):
    # Named by the loss itself, not by the sub/mul/where a composite loss runs inside.
    x, t = mg.full((2, 3), 0.5), mg.full((3, 2), 0.5)
    why = ("target size must be the same as input size" if "binary_cross" in loss.__name__
           else r"shapes \(2, 3\) and \(3, 2\) cannot be broadcast together")
    with pytest.raises(ValueError, match=rf"^{loss.__name__}: {why}"):
        loss(x, t)
    assert not recwarn.list  # refused, not warned about


def test_margin_ranking_loss_names_itself_for_bad_shapes():
    with pytest.raises(ValueError, match=r"^margin_ranking_loss: shapes \(2, 3\) and \(3, 2\)"):
        F.margin_ranking_loss(mg.ones((2, 3)), mg.ones((3, 2)), mg.ones(3))
    assert F.margin_ranking_loss(mg.ones(3), mg.zeros(3), mg.ones(3)).item() == 0.0


def test_cosine_similarity_shapes_axis_and_dim_keyword(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    with pytest.raises(ValueError, match=r"cosine_similarity: shapes \(2, 3\) and \(4,\)"):
        cosine_similarity(mg.ones((2, 3)), mg.ones(4))
    with pytest.raises(IndexError, match=r"cosine_similarity: axis 2 .*Dimension out of range"):
        cosine_similarity(mg.tensor(a), mg.tensor(b), axis=2)
    # PyTorch's keyword: F.cosine_similarity(x1, x2, dim=0)
    by_dim = cosine_similarity(mg.tensor(a), mg.tensor(b), dim=0)
    np.testing.assert_allclose(by_dim.numpy(), cosine_similarity(mg.tensor(a), mg.tensor(b),
                                                                 axis=0).numpy())
    ref = (a * b).sum(0) / (np.linalg.norm(a, axis=0) * np.linalg.norm(b, axis=0))
    np.testing.assert_allclose(by_dim.numpy(), ref, rtol=1e-12)
    assert cosine_similarity(mg.tensor(a), mg.tensor(b), 0, dim=0).shape == (4,)
    with pytest.raises(TypeError, match="cosine_similarity: got axis=0 and dim=1"):
        cosine_similarity(mg.tensor(a), mg.tensor(b), 0, dim=1)


def _host_checks(device):
    """The GPU checks values on the host only under index_debug (CPU: always)."""
    return index_debug() if device == "cuda" else contextlib.nullcontext()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_out_of_range_targets_poison_the_loss_without_a_host_read(device, monkeypatch):
    # The GPU path (no host read per step), also run on the CPU with the read switched off.
    if device == "cuda" and not mg.cuda.is_available():
        pytest.skip("needs a GPU")
    if device == "cpu":
        from minigrad.functional import loss as loss_mod

        monkeypatch.setattr(loss_mod, "host_checks", lambda xp: False)
    x = _t(np.zeros((3, 3), np.float32), device, requires_grad=True)
    loss = cross_entropy(x, _t([0, 3, 1], device))
    assert np.isnan(loss.item())
    loss.backward()
    assert np.isnan(x.grad.numpy()).all()  # the mean's denominator is NaN too
    rows = cross_entropy(x, _t([0, 3, 1], device), reduction="none").numpy()
    assert np.isnan(rows[1]) and np.allclose(rows[[0, 2]], np.log(3))
    ok = cross_entropy(_t(np.zeros((2, 3), np.float32), device), _t([0, 2], device))
    np.testing.assert_allclose(ok.item(), np.log(3), rtol=1e-6)
    p = _t([0.2, 0.7, 0.5], device)
    bce = binary_cross_entropy(p, _t([2.0, 1.0, 0.0], device), reduction="none").numpy()
    assert np.isnan(bce[0]) and np.isfinite(bce[1:]).all()


def test_megengine_cross_entropy_of_probabilities_has_the_nll_gradient():
    # with_logits=False is -log p[label]: no softmax, so d/dp is -1/p at the label, 0 elsewhere
    p = _t(np.array([[.2, .3, .5], [.6, .3, .1]], np.float32), "cpu", requires_grad=True)
    loss = Fnn.cross_entropy(p, _t([2, 0], "cpu"), with_logits=False)
    np.testing.assert_allclose(loss.item(), -(np.log(.5) + np.log(.6)) / 2, rtol=1e-6)
    loss.backward()
    np.testing.assert_allclose(p.grad.numpy(), [[0, 0, -1.0], [-1 / 1.2, 0, 0]], rtol=1e-6)
    # class axis last, probability targets, label smoothing (MegEngine's formula)
    q = np.array([[.2, .3, .5], [.6, .3, .1]], np.float32)
    t3 = _t(q.T[None], "cpu")                         # (1, 3 classes, 2) -> axis 1
    onehot = np.eye(3, dtype=np.float32)[[2, 0]]
    soft = Fnn.cross_entropy(_t(q, "cpu"), _t(onehot, "cpu"), with_logits=False)
    np.testing.assert_allclose(soft.item(), loss.item(), rtol=1e-6)
    last = Fnn.cross_entropy(_t(q[None], "cpu"), _t([[2, 0]], "cpu"), axis=2, with_logits=False)
    np.testing.assert_allclose(last.item(), loss.item(), rtol=1e-6)
    assert Fnn.cross_entropy(t3, _t([[2, 0]], "cpu"), with_logits=False).item() == \
        pytest.approx(loss.item(), rel=1e-6)
    ls = Fnn.cross_entropy(_t(q, "cpu"), _t([2, 0], "cpu"), with_logits=False, label_smooth=0.1)
    ref = np.mean([-(0.9 * np.log(q[i, c]) + 0.1 * np.log(q[i]).mean())
                   for i, c in enumerate([2, 0])])
    np.testing.assert_allclose(ls.item(), ref, rtol=1e-6)
