"""GradScaler: the section-2 update rule, skipped steps leave everything unchanged, call-order
errors, checkpoints, accumulation, clipping, gradient penalty, MegEngine API, telemetry."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.functional as F
from minigrad import amp
from minigrad.amp import _unscale, grad_scaler
from minigrad.autodiff import GradManager, grad
from minigrad.optimizer import SGD, Adam, clip_grad_norm

f16, bf16, f32 = mg.float16, mg.bfloat16, mg.float32
INF = float("inf")


def _params(seed=0):
    rng = np.random.default_rng(seed)
    w = mg.Parameter(rng.standard_normal((3, 4)).astype(np.float32) * 0.5)
    b = mg.Parameter(np.zeros(3, np.float32))
    return [w, b]


def _data(seed=1):
    rng = np.random.default_rng(seed)
    return (mg.tensor(rng.standard_normal((8, 4)).astype(np.float32)),
            mg.tensor(rng.standard_normal((8, 3)).astype(np.float32)))


def _loss(params, x, y, autocast=True, bad=None):
    w, b = params
    with amp.autocast(enabled=autocast):
        out = F.linear(x, w, b)
        if bad is not None:
            out = out * bad
        d = out.astype(f32) - y
    return (d * d).sum() * (1.0 / d.size)


def _ref_grads(params, x, y):
    w, b = (p.numpy().astype(np.float64) for p in params)
    xd, yd = x.numpy().astype(np.float64), y.numpy().astype(np.float64)
    d = xd @ w.T + b - yd
    gd = 2 * d / d.size
    return [gd.T @ xd, gd.sum(0)]


def _set_grads(params, values, scaler=None):
    """Gradients standing for those of a loss that ``scaler`` scaled (a finite dummy loss)."""
    if scaler is not None:
        scaler.scale(mg.tensor(0.0))
    for p, v in zip(params, values):
        p.grad = mg.tensor(np.full(p.shape, v, np.float32))


def _snapshot(params, opt):
    ps = [p.numpy().copy() for p in params]
    state = {}
    for i, p in enumerate(params):
        for k, v in opt.state.get(p, {}).items():
            state[(i, k)] = np.array(v, copy=True) if hasattr(v, "shape") else v
    return ps, state


def _same(a, b):
    (pa, sa), (pb, sb) = a, b
    assert all(np.array_equal(x, y) for x, y in zip(pa, pb))
    assert sa.keys() == sb.keys()
    for k in sa:
        assert np.array_equal(sa[k], sb[k]), k


# ----------------------------------------------------------------------------- basic loop
def test_pytorch_loop_unscaled_grads_match_reference():
    params, (x, y) = _params(), _data()
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler(init_scale=2.0 ** 10)
    loss = _loss(params, x, y, autocast=False)
    scaled = scaler.scale(loss)
    assert scaled.dtype == f32
    np.testing.assert_allclose(scaled.item(), loss.item() * 1024, rtol=1e-6)
    scaled.backward()
    np.testing.assert_allclose(params[0].grad.numpy(), _ref_grads(params, x, y)[0] * 1024,
                               rtol=1e-4)
    before = [p.numpy().copy() for p in params]
    ref = _ref_grads(params, x, y)
    assert scaler.step(opt) is opt
    for p, b0, g in zip(params, before, ref):
        np.testing.assert_allclose(p.numpy(), b0 - 0.1 * g, rtol=1e-4, atol=1e-6)
    scaler.update()
    assert scaler.get_scale() == 1024.0 and not scaler.last_step_skipped


def test_fp16_loss_is_scaled_in_fp32():
    scaler = amp.GradScaler(init_scale=2.0 ** 16)
    w = mg.Parameter(np.array([1.0], np.float32))
    loss = (w * 2.0).astype(f16).sum()
    scaled = scaler.scale(loss)
    assert scaled.dtype == f32 and scaled.item() == 2.0 * 65536   # no fp16 overflow
    scaled.backward()                      # the fp16 gradient 65536 overflows -> skip, back off
    opt = SGD([w], lr=1.0)
    assert scaler.step(opt) is None
    scaler.update()
    assert w.item() == 1.0 and scaler.get_scale() == 32768.0
    assert scaler.history[-1]["reason"] == "grad_overflow"


# ----------------------------------------------------------------------------- the rule
def _rule(scale, tracker, found, growth=2.0, backoff=0.5, interval=3, min_scale=None):
    if found:
        scale *= backoff
        if min_scale is not None:
            scale = max(scale, min_scale)
        return scale, 0
    tracker += 1
    if tracker == interval:
        return scale * growth, 0
    return scale, tracker


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=25),
       st.sampled_from([None, 4.0]), st.sampled_from([1, 3]))
def test_update_rule_random_sequences(pattern, min_scale, interval):
    params = _params()
    opt = SGD(params, lr=0.01)
    scaler = amp.GradScaler(init_scale=64.0, growth_interval=interval, min_scale=min_scale)
    scale, tracker, skipped = 64.0, 0, 0
    for bad in pattern:
        _set_grads(params, [INF if bad else 1.0, 0.5], scaler)
        before = _snapshot(params, opt)
        out = scaler.step(opt)
        if bad:
            assert out is None
            _same(before, _snapshot(params, opt))
        else:
            assert out is opt
        scaler.update()
        scale, tracker = _rule(scale, tracker, bad, interval=interval, min_scale=min_scale)
        skipped += bad
        assert scaler.get_scale() == scale and type(scaler.get_scale()) is float
        assert scaler.state_dict()["_growth_tracker"] == tracker
        assert scaler.last_step_skipped == bad and scaler.skipped_steps == skipped
    assert len(scaler.history) == len(pattern)


@pytest.mark.parametrize("make_opt", [lambda p: SGD(p, lr=0.1, momentum=0.9),
                                      lambda p: Adam(p, lr=0.01)])
def test_injected_inf_skips_exactly_that_step(make_opt):
    params, (x, y) = _params(), _data()
    opt = make_opt(params)
    scaler = amp.GradScaler(init_scale=256.0)
    for i in range(4):
        bad = mg.tensor(INF) if i == 2 else None
        opt.zero_grad()
        scaler.scale(_loss(params, x, y, bad=bad)).backward()
        before = _snapshot(params, opt)
        scale = scaler.get_scale()
        out = scaler.step(opt)
        scaler.update()
        if i == 2:
            assert out is None and scaler.last_step_skipped
            _same(before, _snapshot(params, opt))          # params AND optimizer state
            assert scaler.get_scale() == scale          # an inf loss is no reason to back off
            assert scaler.history[-1]["reason"] == "nonfinite_loss"
        else:
            assert out is opt and not scaler.last_step_skipped
            assert not np.array_equal(before[0][0], params[0].numpy())
    assert scaler.skipped_steps == 1
    assert [h["found_inf"] for h in scaler.history] == [False, False, True, False]


def test_static_scalers_keep_scale_but_skip():
    params = _params()
    opt = SGD(params, lr=0.1)
    for scaler in (amp.StaticGradScaler(128.0), amp.GradScaler(128.0, growth_interval=0)):
        for bad in (False, True, False):
            _set_grads(params, [INF if bad else 1.0, 1.0], scaler)
            before = _snapshot(params, opt)
            assert (scaler.step(opt) is None) == bad
            if bad:
                _same(before, _snapshot(params, opt))
            scaler.update()
            assert scaler.get_scale() == 128.0
        assert scaler.skipped_steps == 1


def test_min_scale_and_update_new_scale_and_growth_cap():
    params = _params()
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler(init_scale=2.0, min_scale=1.0)
    for _ in range(3):
        _set_grads(params, [float("nan"), 1.0], scaler)
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 1.0
    _set_grads(params, [1.0, 1.0], scaler)
    scaler.step(opt)
    scaler.update(new_scale=8.0)
    assert scaler.get_scale() == 8.0
    big = amp.GradScaler(init_scale=3e38, growth_interval=1)
    _set_grads(params, [0.0, 0.0], big)
    big.unscale_(opt)
    big.update()
    assert big.get_scale() == float(np.finfo(np.float32).max)


def test_inverse_scale_computed_in_float64_applied_in_float32():
    w = mg.Parameter(np.array([3.0, 1e-3], np.float32))
    w.grad = mg.tensor(np.array([3.0, 1e-3], np.float32))
    opt = SGD([w], lr=0.0)
    scaler = amp.GradScaler(init_scale=3.0)
    scaler.scale(mg.tensor(0.0))
    scaler.unscale_(opt)
    expect = np.array([3.0, 1e-3], np.float32) * np.float32(1.0 / 3.0)
    assert w.grad.dtype == f32
    np.testing.assert_array_equal(w.grad.numpy(), expect)


# ----------------------------------------------------------------------------- call order
def test_call_order_errors_say_what_to_call():
    params = _params()
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler()
    with pytest.raises(RuntimeError, match="step"):
        scaler.update()                       # nothing recorded
    _set_grads(params, [1.0, 1.0], scaler)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="update"):
        scaler.unscale_(opt)                  # twice before update
    scaler.step(opt)                          # legal: does not unscale again
    with pytest.raises(RuntimeError, match="update"):
        scaler.step(opt)                      # step after step
    with pytest.raises(RuntimeError, match="update"):
        scaler.unscale_(opt)                  # unscale_ after step
    scaler.update()
    _set_grads(params, [1.0, 1.0], scaler)
    scaler.unscale_(opt)
    scaler.update()                           # update() after unscale_ only: uses its found_inf
    assert scaler.get_scale() == 2.0 ** 16
    with pytest.raises(RuntimeError, match="closure"):
        scaler.step(opt, closure=lambda: 0)


def test_unscale_grads_once_in_place_values():
    params = _params()
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler(init_scale=4.0)
    _set_grads(params, [8.0, 2.0], scaler)
    scaler.unscale_(opt)
    np.testing.assert_array_equal(params[0].grad.numpy(), 2.0)
    np.testing.assert_array_equal(params[1].grad.numpy(), 0.5)
    scaler.step(opt)                           # no second unscale
    np.testing.assert_array_equal(params[0].grad.numpy(), 2.0)


def test_fp16_gradients_are_refused():
    w = mg.Parameter(np.ones(2, np.float16))
    w.grad = mg.tensor(np.ones(2, np.float16))
    scaler = amp.GradScaler()
    scaler.scale(mg.tensor(0.0))
    with pytest.raises(ValueError, match="float32"):
        scaler.unscale_(SGD([w], lr=0.1))


def test_shared_gradient_array_unscaled_once():
    a = mg.Parameter(np.ones(2, np.float32))
    b = mg.Parameter(np.ones(2, np.float32))
    scaler = amp.GradScaler(init_scale=8.0)
    scaler.scale((a + b).sum()).backward()     # the engine may give both the same gradient
    scaler.unscale_(SGD([a, b], lr=0.1))
    np.testing.assert_array_equal(a.grad.numpy(), 1.0)
    np.testing.assert_array_equal(b.grad.numpy(), 1.0)


# ----------------------------------------------------------------------------- disabled
def test_disabled_is_a_pass_through():
    params = _params()
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler(enabled=False)
    loss = (params[0] * 1.0).sum()
    assert scaler.scale(loss) is loss
    _set_grads(params, [INF, 1.0], scaler)
    assert scaler.step(opt) is opt            # no inf check at all
    scaler.update()
    scaler.update()
    assert scaler.get_scale() == 1.0 and not scaler.is_enabled() and scaler.state_dict() == {}


# ----------------------------------------------------------------------------- checkpoints
def test_state_dict_round_trip_resumes_bit_identically():
    pattern = [False, True, False, False, False, True, False, False, False, False]

    def run(scaler, params, opt, steps):
        x, y = _data()
        for bad in steps:
            opt.zero_grad()
            scaler.scale(_loss(params, x, y, bad=mg.tensor(INF) if bad else None)).backward()
            scaler.step(opt)
            scaler.update()

    pa = _params()
    oa = SGD(pa, lr=0.05, momentum=0.9)
    sa = amp.GradScaler(init_scale=2.0 ** 8, growth_interval=2)
    run(sa, pa, oa, pattern[:4])
    saved = sa.state_dict()
    snap_p = [p.numpy().copy() for p in pa]
    snap_o = oa.state_dict()
    snap_o = {"param_groups": snap_o["param_groups"],
              "state": {k: {n: np.array(v, copy=True) for n, v in s.items()}
                        for k, s in snap_o["state"].items()}}
    run(sa, pa, oa, pattern[4:])

    pb = [mg.Parameter(a) for a in snap_p]
    ob = SGD(pb, lr=0.05, momentum=0.9)
    ob.load_state_dict(snap_o)
    sb = amp.GradScaler()
    sb.load_state_dict(saved)
    assert sb.state_dict() == saved
    run(sb, pb, ob, pattern[4:])
    assert sb.state_dict() == sa.state_dict()
    for a, b in zip(pa, pb):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(RuntimeError, match="empty"):
        amp.GradScaler().load_state_dict({})


# ----------------------------------------------------------------------------- recipes
def test_gradient_accumulation_keeps_scale_constant():
    params = _params()
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler(init_scale=2.0 ** 6, growth_interval=1)
    batches = [_data(s) for s in range(4)]
    ref = [np.zeros(p.shape) for p in params]
    for i, (x, y) in enumerate(batches):
        scale = scaler.get_scale()
        scaler.scale(_loss(params, x, y, autocast=False) / 2).backward()
        for r, g in zip(ref, _ref_grads(params, x, y)):
            r += g / 2
        if (i + 1) % 2 == 0:
            scaler.unscale_(opt)
            for p, r in zip(params, ref):
                np.testing.assert_allclose(p.grad.numpy(), r, rtol=1e-4, atol=1e-7)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            ref = [np.zeros(p.shape) for p in params]
        else:
            assert scaler.get_scale() == scale   # constant inside the window
    assert scaler.get_scale() == 2.0 ** 8       # one growth per effective batch


def test_clip_after_unscale_sees_unscaled_gradients():
    params, (x, y) = _params(), _data()
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler(init_scale=2.0 ** 12)
    scaler.scale(_loss(params, x, y, autocast=False)).backward()
    scaler.unscale_(opt)
    ref = _ref_grads(params, x, y)
    ref_norm = np.sqrt(sum((g ** 2).sum() for g in ref))
    total = clip_grad_norm(params, max_norm=ref_norm / 2)
    np.testing.assert_allclose(total.item(), ref_norm, rtol=1e-4)
    clipped = np.sqrt(sum((p.grad.numpy().astype(np.float64) ** 2).sum() for p in params))
    np.testing.assert_allclose(clipped, ref_norm / 2, rtol=1e-4)
    assert scaler.step(opt) is opt


def test_gradient_penalty_with_scaled_autograd_grad():
    x, y = _data()

    def penalized(params, scaler):
        loss = _loss(params, x, y, autocast=False)
        if scaler is None:
            gps = grad(loss, params, create_graph=True)
        else:
            sgp = grad(scaler.scale(loss), params, create_graph=True)
            inv = 1.0 / scaler.get_scale()
            gps = [g * inv for g in sgp]
        norm = sum((g ** 2).sum() for g in gps).sqrt()
        return loss + norm

    pa, pb = _params(), _params()
    penalized(pa, None).backward()
    scaler = amp.GradScaler(init_scale=2.0 ** 10)
    scaler.scale(penalized(pb, scaler)).backward()
    scaler.unscale_(SGD(pb, lr=0.1))
    for a, b in zip(pa, pb):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_several_optimizers_and_losses():
    p0, p1 = _params(0), _params(1)
    o0, o1 = SGD(p0, lr=0.1), SGD(p1, lr=0.1)
    x, y = _data()
    scaler = amp.GradScaler(init_scale=2.0 ** 8)
    with amp.autocast():
        out0 = F.linear(x, *p0)
        out1 = F.linear(x, *p1)
        d0 = (2 * out0 + 3 * out1).astype(f32) - y
        loss0 = (d0 * d0).sum()
        loss1 = ((3 * out0 - 5 * out1).astype(f32) - y).abs().sum()
    scaler.scale(loss0).backward(retain_graph=True)
    scaler.scale(loss1).backward()
    p1[1].grad = p1[1].grad * INF                 # overflow only in optimizer 1's gradients
    b0 = [p.numpy().copy() for p in p0]
    b1 = [p.numpy().copy() for p in p1]
    scaler.unscale_(o0)
    assert scaler.step(o0) is o0
    assert scaler.step(o1) is None
    scaler.update()
    assert not np.array_equal(b0[0], p0[0].numpy())
    assert all(np.array_equal(a, p.numpy()) for a, p in zip(b1, p1))
    assert scaler.get_scale() == 2.0 ** 7 and scaler.skipped_steps == 1


def test_bf16_autocast_with_scaler_is_harmless():
    x, y = _data()
    pa, pb = _params(), _params()
    oa, ob = SGD(pa, lr=0.1), SGD(pb, lr=0.1)
    scaler = amp.GradScaler()
    for _ in range(3):
        for params, opt, sc in ((pa, oa, None), (pb, ob, scaler)):
            opt.zero_grad()
            with amp.autocast(dtype="bfloat16"):
                loss = _loss(params, x, y, autocast=True)
            if sc is None:
                loss.backward()
                opt.step()
            else:
                sc.scale(loss).backward()
                sc.step(opt)
                sc.update()
    assert scaler.skipped_steps == 0
    for a, b in zip(pa, pb):           # power-of-two scaling is exact: identical training
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


# ----------------------------------------------------------------------------- MegEngine API
def test_megengine_backward_unscales_and_updates():
    params, (x, y) = _params(), _data()
    gm = GradManager().attach(params)
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler(init_scale=2.0 ** 4, growth_interval=1)
    assert scaler.scale_factor == 16.0
    ref = _ref_grads(params, x, y)
    with gm:
        loss = _loss(params, x, y, autocast=False)
        scaler.backward(gm, loss)
    for p, r in zip(params, ref):
        np.testing.assert_allclose(p.grad.numpy(), r, rtol=1e-4, atol=1e-7)
    assert scaler.scale_factor == 32.0
    opt.step().clear_grad()


def test_megengine_overflow_drops_grads_so_step_changes_nothing():
    params, (x, y) = _params(), _data()
    gm = GradManager().attach(params)
    opt = Adam(params, lr=0.01)
    scaler = amp.GradScaler(init_scale=2.0 ** 4)
    with gm:
        scaler.backward(gm, _loss(params, x, y))
    opt.step().clear_grad()
    before = _snapshot(params, opt)
    with gm:
        scaler.backward(gm, _loss(params, x, y, bad=mg.tensor(INF)))
    assert all(p.grad is None for p in params)
    opt.step().clear_grad()
    _same(before, _snapshot(params, opt))
    assert scaler.scale_factor == 16.0 and scaler.last_step_skipped   # inf loss: scale kept


def test_megengine_manual_mode():
    params, (x, y) = _params(), _data()
    gm = GradManager().attach(params)
    scaler = amp.GradScaler(init_scale=2.0 ** 4)
    ref = _ref_grads(params, x, y)
    with gm:
        loss = _loss(params, x, y, autocast=False)
        gm.backward(loss, dy=mg.tensor(scaler.scale_factor))
    np.testing.assert_allclose(params[1].grad.numpy(), ref[1] * 16, rtol=1e-4, atol=1e-6)
    scaler.unscale(gm.attached_tensors())
    with pytest.raises(RuntimeError, match="update"):
        scaler.unscale(gm.attached_tensors())
    scaler.update()
    np.testing.assert_allclose(params[1].grad.numpy(), ref[1], rtol=1e-4, atol=1e-7)


# ----------------------------------------------------------------------------- telemetry
def test_nonfinite_loss_reported_separately_and_one_sync(monkeypatch):
    params, (x, y) = _params(), _data()
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler(init_scale=4.0)
    syncs = []
    real = grad_scaler.host_read
    monkeypatch.setattr(grad_scaler, "host_read", lambda *a: syncs.append(1) or real(*a))
    loss = _loss(params, x, y) * mg.tensor(float("nan"))
    scaler.scale(loss).backward()
    assert scaler.step(opt) is None
    scaler.update()
    assert scaler.history[-1]["reason"] == "nonfinite_loss"
    assert syncs == [1]
    opt.zero_grad()
    scaler.scale(_loss(params, x, y)).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.history[-1]["reason"] is None and syncs == [1, 1]
    h = scaler.history[0]
    assert h["step"] == 0 and h["scale"] == 4.0 and h["new_scale"] == 4.0 and h["found_inf"]


def test_warns_after_many_consecutive_skips():
    params = _params()
    opt = SGD(params, lr=0.1)
    scaler = amp.GradScaler(max_consecutive_skips=3)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for _ in range(4):
            _set_grads(params, [INF, 1.0], scaler)
            scaler.step(opt)
            scaler.update()
    msgs = [str(w.message) for w in rec if "consecutive" in str(w.message)]
    assert len(msgs) == 1 and "grad_overflow" in msgs[0]
    assert scaler.consecutive_skips == 4 and scaler.history.maxlen == 10_000


# ----------------------------------------------------------------------------- issue regressions
def test_fresh_tensors_and_optimizers_reusing_ids_are_not_refused():
    # per-iteration state lives with the objects (weakrefs), never with a bare id(): a fresh
    # tensor allocated where a freed one lived is a different tensor
    scaler = amp.GradScaler(init_scale=4.0)
    scaler.scale(mg.tensor(0.0))
    for _ in range(200):
        t = mg.Parameter(np.ones(2, np.float32))
        t.grad = mg.tensor(np.full(2, 8.0, np.float32))
        scaler.unscale([t])
        np.testing.assert_array_equal(t.grad.numpy(), 2.0)
        del t
    scaler.update()
    for _ in range(50):
        scaler.scale(mg.tensor(0.0))
        p = mg.Parameter(np.ones(2, np.float32))
        p.grad = mg.tensor(np.full(2, 4.0, np.float32))
        opt = SGD([p], lr=0.5)
        scaler.step(opt)
        np.testing.assert_array_equal(p.numpy(), 1.0 - 0.5 * 4.0 / scaler.get_scale())
        del opt, p
    scaler.update()


def test_zero_dim_gradient_unscales_to_an_array():
    p = mg.Parameter(np.float32(2.0))
    opt = SGD([p], lr=0.1)
    scaler = amp.GradScaler(init_scale=8.0)
    scaler.scale(p * 3.0).backward()
    scaler.unscale_(opt)
    assert isinstance(p.grad._data, np.ndarray) and p.grad.shape == ()
    assert p.grad.item() == 3.0 and p.grad.numpy().tolist() == 3.0
    scaler.step(opt)
    scaler.update()
    assert p.item() == np.float32(2.0) - np.float32(0.1) * np.float32(3.0)


def test_each_optimizer_skips_on_its_own_gradients():
    a, b = mg.Parameter(np.ones(2, np.float32)), mg.Parameter(np.ones(2, np.float32))
    oa, ob = SGD([a], lr=0.5), SGD([b], lr=0.5)
    scaler = amp.GradScaler(init_scale=4.0)
    loss_a = (a * 2.0).sum()
    loss_b = (b * mg.tensor(float("nan"))).sum()      # only b's loss (and gradients) is NaN
    scaler.scale(loss_a).backward()
    scaler.scale(loss_b).backward()
    assert scaler.step(oa) is oa                     # PyTorch: decided from a's own gradients
    assert scaler.step(ob) is None
    scaler.update()
    np.testing.assert_array_equal(a.numpy(), 0.0)
    np.testing.assert_array_equal(b.numpy(), 1.0)
    assert scaler.last_step_skipped and scaler.history[-1]["reason"] == "nonfinite_loss"


def test_persistent_nan_loss_keeps_the_scale_and_raises_after_n():
    p = mg.Parameter(np.ones(2, np.float32))
    opt = SGD([p], lr=0.1)
    scaler = amp.GradScaler(init_scale=2.0 ** 10, max_nonfinite_losses=5)
    for i in range(5):
        scaler.scale((p * mg.tensor(float("nan"))).sum()).backward()
        assert scaler.step(opt) is None
        if i < 4:
            scaler.update()
            assert scaler.get_scale() == 2.0 ** 10      # not a scale problem: never backed off
            opt.zero_grad()
    with pytest.raises(FloatingPointError, match="loss itself was inf/NaN in 5 consecutive"):
        scaler.update()
    np.testing.assert_array_equal(p.numpy(), 1.0)
    # a clean iteration in between resets the count; 0 disables the error
    quiet = amp.GradScaler(max_nonfinite_losses=0)
    for _ in range(30):
        opt.zero_grad()
        quiet.scale((p * mg.tensor(float("nan"))).sum()).backward()
        quiet.step(opt)
        quiet.update()
    assert quiet.get_scale() == 2.0 ** 16 and quiet.skipped_steps == 30


def test_step_without_scale_or_without_gradients_raises():
    w = mg.Parameter(np.ones(1, np.float32))
    opt = SGD([w], lr=0.1)
    scaler = amp.GradScaler(init_scale=4.0)
    (w * 1.0).sum().backward()                       # not scaled
    with pytest.raises(RuntimeError, match=r"scaler\.scale\(loss\)"):
        scaler.step(opt)
    np.testing.assert_array_equal(w.numpy(), 1.0)    # not 0.975: nothing stepped
    opt.zero_grad()
    other = mg.Parameter(np.ones(1, np.float32))
    scaler.scale((other * 1.0).sum()).backward()      # scaled, but w has no gradient
    with pytest.raises(RuntimeError, match="no inf checks were recorded for this optimizer"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="no inf checks were recorded"):
        scaler.update()


def test_overflowed_steps_emit_no_numpy_warnings():
    rng = np.random.default_rng(0)
    w = mg.Parameter(rng.standard_normal((4, 4)).astype(np.float32))
    x = mg.tensor(rng.standard_normal((8, 4)).astype(np.float32) * 30)
    opt = SGD([w], lr=0.1)
    gm = GradManager().attach([w])
    scaler = amp.GradScaler(init_scale=2.0 ** 40)     # the fp16 backward overflows
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            with amp.autocast():
                loss = F.relu(F.linear(F.linear(x, w), w)).sum()
            scaler.scale(loss).backward()
            assert scaler.step(opt) is None
            scaler.update()
            opt.zero_grad()
        with gm:
            with amp.autocast():
                loss = F.relu(F.linear(F.linear(x, w), w)).sum()
            scaler.backward(gm, loss)
    assert scaler.skipped_steps == 3 and scaler.get_scale() == 2.0 ** 37


def test_megengine_seed_is_multiplied_by_a_scalar_not_a_0d_array(monkeypatch):
    class NoZeroDim(np.ndarray):   # CuPy refuses a 0-d NumPy array as the other operand
        def __mul__(self, other):
            assert not (isinstance(other, np.ndarray) and other.ndim == 0), "0-d array operand"
            return np.asarray(self) * other

    w = mg.Parameter(np.ones(2, np.float32))
    gm = GradManager().attach([w])
    scaler = amp.GradScaler(init_scale=4.0)
    real = mg.ones_like
    monkeypatch.setattr(grad_scaler, "ones_like",
                        lambda t: mg.Tensor._make(real(t)._data.view(NoZeroDim), False, None, 0))
    with gm:
        scaler.backward(gm, (w * 3.0).sum())
    np.testing.assert_array_equal(w.grad.numpy(), 3.0)


def test_scale_accepts_any_iterable():
    scaler = amp.GradScaler(init_scale=4.0)
    a, b = mg.tensor(1.0), mg.tensor(2.0)
    out = scaler.scale(t for t in (a, b))
    assert [o.item() for o in out] == [4.0, 8.0]
    assert [o.item() for o in scaler.scale((a, b))] == [4.0, 8.0]
    assert scaler.scale({"x": a})["x"].item() == 4.0
    with pytest.raises(TypeError, match="iterable of Tensors"):
        scaler.scale(3)


# ----------------------------------------------------------------------------- API parity
def test_constructor_spellings():
    s = amp.GradScaler("cuda", init_scale=8.0, growth_interval=3)     # PyTorch: device first
    assert s.get_scale() == 8.0 and s.get_growth_interval() == 3
    s = amp.GradScaler("cpu", 8.0, 4.0, 0.25, 7)
    assert (s.get_scale(), s.get_growth_factor(), s.get_backoff_factor(),
            s.get_growth_interval()) == (8.0, 4.0, 0.25, 7)
    s = amp.GradScaler(2.0 ** 10, 3.0)                # minigrad/MegEngine positional order
    assert s.get_scale() == 1024.0 and s.get_growth_factor() == 3.0
    s = amp.GradScaler(2.0 ** 4, growth_interval=5)
    assert s.get_scale() == 16.0 and s.get_growth_interval() == 5 and s.get_growth_factor() == 2
    s.set_growth_factor(4.0)
    s.set_backoff_factor(0.25)
    s.set_growth_interval(1)
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (4, .25, 1)
    with pytest.raises(ValueError, match="backoff_factor"):
        s.set_backoff_factor(2.0)
    with pytest.raises(TypeError, match="device"):
        amp.GradScaler(["cuda"])


def test_megengine_scale_factor_and_state_dict_keys():
    s = amp.GradScaler(init_scale=16.0)
    s.scale_factor = 64
    assert s.get_scale() == 64.0 and s.state_dict()["scale_factor"] == 64.0
    with pytest.raises(ValueError, match="scale_factor"):
        s.scale_factor = 0.0
    meg = {"scale_factor": 32.0, "growth_factor": 4.0, "backoff_factor": 0.25,
           "growth_interval": 10, "_growth_tracker": 3}
    s.load_state_dict(meg)
    assert s.get_scale() == 32.0 and s.get_growth_factor() == 4.0
    assert s.state_dict()["_growth_tracker"] == 3
    torch_keys = {"scale": np.float32(8.0), "growth_factor": 2.0, "backoff_factor": 0.5,
                  "growth_interval": 2000, "_growth_tracker": 0}
    s.load_state_dict(torch_keys)
    assert s.get_scale() == 8.0
    with pytest.raises(KeyError, match="_growth_tracker"):
        s.load_state_dict({"scale_factor": 2.0})


def test_megengine_backward_seeds_ones_for_a_non_scalar_loss():
    w = mg.Parameter(np.ones(3, np.float32))
    gm = GradManager().attach([w])
    scaler = amp.GradScaler(init_scale=8.0)
    with gm:
        scaler.backward(gm, w * mg.tensor([1.0, 2.0, 3.0]))   # no dy: ones, like MegEngine
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0, 3.0])


# ----------------------------------------------------------------------------- ranks agree
def test_flags_pass_through_ranks_agree(monkeypatch):
    from minigrad.amp import _ranks

    seen = []

    def other_rank_overflowed(flags):  # as a max-reduce would when another rank saw inf
        seen.append(flags.copy())
        return np.maximum(flags, np.array([1, 0], np.int32))

    monkeypatch.setattr(_ranks, "agree", other_rank_overflowed)
    monkeypatch.setattr(_ranks, "overflow_rows", lambda: np.array([[0, 0], [1, 0]], np.int32))
    for sync_free in (False, True):
        p = mg.Parameter(np.ones(2, np.float32))
        opt = SGD([p], lr=0.1)
        scaler = amp.GradScaler(init_scale=8.0, sync_free=sync_free)
        scaler.scale((p * 2.0).sum()).backward()      # finite here, inf on "rank 1"
        scaler.step(opt)
        scaler.update()
        np.testing.assert_array_equal(p.numpy(), 1.0)
        assert scaler.get_scale() == 4.0 and scaler.history[-1]["ranks"] == [1]
    assert len(seen) == 2 and all(f.dtype == np.int32 and f.tolist() == [0, 0] for f in seen)


# ----------------------------------------------------------------------------- sync-free path
def _train(sync_free, api, make_opt, pattern, seed=0, interval=2, init=2.0 ** 6,
           device="cpu"):
    """A small AMP loop; pattern entries: 0 clean, 1 gradient overflow, 2 NaN loss."""
    rng = np.random.default_rng(seed)
    w = mg.Parameter(rng.standard_normal((3, 4)).astype(np.float32), device=device)
    b = mg.Parameter(np.zeros(3, np.float32), device=device)
    x = mg.tensor(rng.standard_normal((8, 4)).astype(np.float32), device=device)
    opt = make_opt([w, b])
    gm = GradManager().attach([w, b])
    scaler = amp.GradScaler(init_scale=init, growth_interval=interval, sync_free=sync_free,
                            max_nonfinite_losses=0)
    reports = []
    for ev in pattern:
        big = mg.tensor(3e38 if ev == 1 else 1.0, device=device)  # its gradient overflows
        nan = mg.tensor(float("nan") if ev == 2 else 0.0, device=device)
        with mg.cuda.sync_debug_mode("error" if sync_free else "default"), gm:
            with amp.autocast():
                out = F.linear(x, w, b)
            loss = (out.astype(f32) * 1e-38).sum() * big + nan * b.sum()
            if api == "torch":
                scaler.scale(loss).backward()
                r = scaler.step(opt)
                scaler.update()
                opt.zero_grad()
            else:
                scaler.backward(gm, loss)
                r = opt.step()
                opt.clear_grad()
        reports.append(r)
    hist = [(h["scale"], h["new_scale"], h["found_inf"], h["reason"]) for h in scaler.history]
    state = {k: (v.get() if hasattr(v, "get") else np.array(v) if hasattr(v, "shape") else v)
             for st_ in opt.state.values() for k, v in st_.items()}
    return [w.numpy().copy(), b.numpy().copy()], hist, scaler, reports, state


OPTS = [lambda p: SGD(p, lr=0.01, momentum=0.9), lambda p: Adam(p, lr=0.01)]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not mg.cuda.is_available(), reason="needs a GPU"))])
@pytest.mark.parametrize("api", ["torch", "megengine"])
@pytest.mark.parametrize("make_opt", OPTS)
def test_sync_free_step_equals_host_path_bit_for_bit_without_reads(api, make_opt, device):
    # On the GPU: the device-side scale rule, skip and Adam step count against the host path
    pattern = [0, 1, 0, 0, 2, 0, 1, 1, 0, 0, 0]
    host = _train(False, api, make_opt, pattern, device=device)
    dev = _train(True, api, make_opt, pattern, device=device)  # sync_debug_mode("error")
    for a, b in zip(host[0], dev[0]):
        np.testing.assert_array_equal(a, b)
    assert host[1] == dev[1]
    assert [h[2] for h in host[1]] == [p in (1, 2) for p in pattern]
    assert host[2].get_scale() == dev[2].get_scale()
    assert host[2].state_dict() == dev[2].state_dict()
    assert host[4].keys() == dev[4].keys()
    for k in host[4]:
        np.testing.assert_array_equal(host[4][k], dev[4][k])
    if api == "torch":   # the skip report, read lazily (outside the checked region)
        assert [r is None for r in host[3]] == [r.skipped for r in dev[3]]
        assert [bool(r) for r in dev[3]] == [p == 0 for p in pattern]


def test_sync_free_telemetry_is_read_lazily_and_once(monkeypatch):
    reads = []
    real = grad_scaler.host_read
    monkeypatch.setattr(grad_scaler, "host_read", lambda a, w: reads.append(w) or real(a, w))
    _, hist, scaler, _, _ = _train(True, "torch", OPTS[0], [0, 1, 0])
    assert reads == ["GradScaler telemetry"] and len(hist) == 3   # history read: one transfer
    assert scaler.skipped_steps == 1 and not scaler.last_step_skipped
    assert reads == ["GradScaler telemetry"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0, 0, 0, 1, 2]), min_size=1, max_size=14),
       st.sampled_from([None, 8.0]), st.sampled_from([1, 2, 3]))
def test_scale_dynamics_match_reference_and_device_twin(pattern, min_scale, interval):
    """Random overflow sequences: the scale trajectory is the rule's, and the device-side twin
    makes the same decisions with the same scales, bit for bit."""
    trajectories = []
    for sync_free in (False, True):
        p = mg.Parameter(np.ones(2, np.float32))
        opt = SGD([p], lr=0.01)
        scaler = amp.GradScaler(init_scale=64.0, growth_interval=interval, min_scale=min_scale,
                                sync_free=sync_free, max_nonfinite_losses=0)
        for ev in pattern:
            loss = (p * mg.tensor(float("nan") if ev == 2 else 0.0)).sum()
            scaler.scale(loss)
            p.grad = mg.tensor([INF if ev else 1.0, 0.5])
            scaler.step(opt)
            scaler.update()
        trajectories.append(([h["new_scale"] for h in scaler.history], p.numpy().copy(),
                             scaler.state_dict()))
    scale, tracker, expect = 64.0, 0, []
    for ev in pattern:                       # the reference model of the rule
        if ev == 1:
            scale, tracker = max(scale * 0.5, min_scale or 0.0), 0
        elif ev == 0:
            tracker += 1
            if tracker == interval:
                scale, tracker = min(scale * 2.0, F32_MAX), 0
        expect.append(scale)
    (h_host, p_host, sd_host), (h_dev, p_dev, sd_dev) = trajectories
    assert h_host == expect == h_dev
    np.testing.assert_array_equal(p_host, p_dev)
    assert sd_host == sd_dev and sd_host["_growth_tracker"] == tracker


F32_MAX = float(np.finfo(np.float32).max)


def test_sync_free_with_an_optimizer_wrapper_without_found_inf():
    # amp.master_weights' step() takes no found_inf: the scaler reads the flag (a visible sync)
    def run(sync_free):
        w = mg.Parameter(np.ones((2, 2), np.float16))
        opt = amp.master_weights(SGD([w], lr=0.5))
        scaler = amp.GradScaler(init_scale=4.0, sync_free=sync_free)
        for bad in (False, True, False):
            scaler.scale((w.astype(f32) * 2.0).sum()).backward()
            if bad:
                w.grad = mg.tensor(np.full((2, 2), INF, np.float16))
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        return w.numpy(), [h["found_inf"] for h in scaler.history]

    (w0, h0), (w1, h1) = run(False), run(True)
    np.testing.assert_array_equal(w0, w1)
    assert h0 == h1 == [False, True, False]


# ----------------------------------------------------------------------------- in-place unscale
from minigrad._backend import fused as _fused  # noqa: E402
from minigrad._backend.dtypes import bfloat16 as _bf16  # noqa: E402

_INPLACE_DTYPES = [np.float32, np.float64, _bf16, np.float16]


def _bits(a):
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(4)),
                          st.lists(st.integers(0, 4), min_size=0, max_size=3),
                          st.sampled_from([None, np.inf, -np.inf, np.nan])),
                min_size=1, max_size=6),
       st.sampled_from([2.0 ** -16, 2.0 ** -3, 1.0 / 3.0, 1e-30, 2.0 ** 20]),
       st.integers(0, 2 ** 31))
def test_inplace_unscale_bit_identical_to_out_of_place(specs, inv, seed):
    rng = np.random.default_rng(seed)
    grads = []
    for d, shape, special in specs:
        g = np.asarray((rng.standard_normal(shape) * 1e3).astype(_INPLACE_DTYPES[d]))
        if special is not None and g.size:
            g.reshape(-1)[rng.integers(g.size)] = special
        grads.append(g)
    ref, ref_found = _fused.unscale_and_check(grads, inv)
    flag = np.ones((), np.int32)          # stale value from a previous call: overwritten
    work = [g.copy() for g in grads]
    ids = [id(w) for w in work]
    _fused.unscale_inplace_and_check(work, inv, flag)
    assert [id(w) for w in work] == ids and int(flag) == int(ref_found)
    for w, r in zip(work, ref):
        assert w.dtype == r.dtype and w.shape == r.shape
        np.testing.assert_array_equal(_bits(w), _bits(r))


@pytest.mark.parametrize("operands", [1, 3])
def test_mt_table_indexing_covers_every_element_once(operands):
    """The multi-tensor kernels' element -> (tensor, offset) search, run in Python."""
    from minigrad._backend import multi_tensor

    arrs = [np.zeros(n, np.float32) for n in (3, 0, 1, 5)]
    arrs = [a for a in arrs if a.size]    # the CuPy wrappers drop empty arrays first
    lists = [arrs] + [[a.copy() for a in arrs] for _ in range(operands - 1)]
    table = multi_tensor.table(*lists)
    n = len(arrs)
    assert list(table[:n * operands]) == [a.ctypes.data for lst in lists for a in lst]
    ends, seen = table[n * operands:], []
    for i in range(int(ends[-1])):
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi) >> 1
            if ends[mid] > i:
                hi = mid
            else:
                lo = mid + 1
        seen.append((lo, i - (ends[lo - 1] if lo else 0)))
    assert seen == [(t, j) for t, a in enumerate(arrs) for j in range(a.size)]


def _scaled_step(loss_fn, params, scale=1024.0):
    scaler = amp.GradScaler(init_scale=scale)
    opt = SGD(params, lr=0.0)
    scaler.scale(loss_fn()).backward()
    before = [p.grad._data for p in params]
    scaler.unscale_(opt)
    return scaler, before


@pytest.mark.parametrize("sync_free", [False, True])
def test_unscale_is_in_place_with_one_reused_flag(sync_free):
    w = mg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    b = mg.tensor(np.float32(2.0), requires_grad=True)               # a 0-d parameter
    w64 = mg.tensor(np.ones(3), requires_grad=True)                  # a float64 one
    scaler = amp.GradScaler(init_scale=256.0, sync_free=sync_free)
    opt = SGD([w, b, w64], lr=0.0)
    flags = []
    for _ in range(2):
        scaler.scale((w * w).sum() * b + (w64 * 3.0).sum()).backward()
        arrays = [p.grad._data for p in (w, b, w64)]
        scaler.unscale_(opt)
        assert all(p.grad._data is a for p, a in zip((w, b, w64), arrays))   # no copy
        flags.append(scaler._unscale_flags["cpu"])
        np.testing.assert_array_equal(w.grad.numpy(), 2 * w.numpy() * 2.0)
        assert float(b.grad.item()) == float((w.numpy() ** 2).sum())
        np.testing.assert_array_equal(w64.grad.numpy(), np.full(3, 3.0))
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    assert flags[0] is flags[1]


def test_shared_gradient_arrays_are_unscaled_once():
    """``a + b`` hands both leaves one dy, a reshape hands a view of it: no double unscale."""
    a = mg.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    b = mg.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    c = mg.tensor(np.ones(6, np.float32), requires_grad=True)
    d = mg.tensor(np.ones((2, 3), np.float32), requires_grad=True)   # an unshared gradient
    scaler, before = _scaled_step(
        lambda: ((a + b + c.reshape(2, 3)) * 5.0).sum() + (d * 7.0).sum(), [a, b, c, d])
    for t in (a, b):
        np.testing.assert_array_equal(t.grad.numpy(), np.full((2, 3), 5.0))
    np.testing.assert_array_equal(c.grad.numpy(), np.full(6, 5.0))
    np.testing.assert_array_equal(d.grad.numpy(), np.full((2, 3), 7.0))
    assert d.grad._data is before[3]


def test_inplace_split_rules():
    base = np.ones(4, np.float32)
    own = np.ones(3, np.float32)
    ro = np.ones(2, np.float32)
    ro.flags.writeable = False
    grads = [base, base[:2], own, ro, np.ones(3, np.float32), np.ones((3, 2), np.float32).T]
    inplace, copied = _unscale.inplace_safe(grads, [False, False, False, False, True, False])
    assert inplace == [2] and copied == [0, 1, 3, 4, 5]


@pytest.mark.skipif(not mg.cuda.is_available(), reason="needs a GPU")
def test_inplace_unscale_gpu_kernel_matches_numpy():
    import cupy

    rng = np.random.default_rng(0)
    host = [np.asarray((rng.standard_normal(s) * 1e3).astype(d))
            for s, d in [((5, 7), np.float32), ((), np.float64), ((300,), _bf16),
                         ((4, 4), np.float16), ((1000,), np.float32), ((0,), np.float32)]]
    host[4][17] = np.inf
    dev = [cupy.asarray(h) for h in host]
    flag = cupy.ones((), np.int32)
    _fused.unscale_inplace_and_check(dev, 2.0 ** -10, flag)
    ref_flag = np.zeros((), np.int32)
    _fused.unscale_inplace_and_check(host, 2.0 ** -10, ref_flag)
    assert int(flag.get()) == int(ref_flag) == 1
    for d, h in zip(dev, host):
        np.testing.assert_array_equal(_bits(d.get()), _bits(h))


def test_megengine_unscale_after_each_fresh_backward_without_update():
    # MegEngine's own amp test: backward(unscale_grad=False) then unscale, three times over, with
    # no update() between; only the same gradients unscaled twice are refused.
    w = mg.Parameter(np.ones(3, np.float32))
    gm = GradManager().attach([w])
    scaler = amp.GradScaler(init_scale=4.0)
    for _ in range(3):
        with gm:
            scaler.backward(gm, (w * 2.0).sum(), unscale_grad=False)
        scaler.unscale(gm.attached_tensors())
        np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])
        w.grad = None
    with gm:
        scaler.backward(gm, (w * 2.0).sum(), unscale_grad=False)
    scaler.unscale(gm.attached_tensors())
    with pytest.raises(RuntimeError, match="already unscaled since the last update"):
        scaler.unscale(gm.attached_tensors())
