"""The intents of PyTorch's GradScaler unit tests, re-expressed for minigrad's GradScaler:
scaling and unscaling values, inf/NaN skips equal to a run that leaves the step out, the
growth/backoff sequence, state_dict round trips (also into and from disabled scalers), several
losses and optimizers, call-order errors, clipping after ``unscale_`` and of scaled gradients,
the disabled pass-through, and (with torch installed) the same scale trajectory as
``torch.amp.GradScaler`` on the CPU."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp
from minigrad.optimizer import SGD, Adam, clip_grad_norm

INF = float("inf")


def _net(seed=0):
    rng = np.random.default_rng(seed)
    return [mg.Parameter(rng.standard_normal((4, 6)).astype(np.float32) * 0.3),
            mg.Parameter(rng.standard_normal((2, 4)).astype(np.float32) * 0.3)]


def _batches(n=5, seed=1):
    rng = np.random.default_rng(seed)
    return [(mg.tensor(rng.standard_normal((8, 6)).astype(np.float32)),
             mg.tensor(rng.standard_normal((8, 2)).astype(np.float32))) for _ in range(n)]


def _loss(params, x, y):
    h = F.relu(F.linear(x, params[0]))
    d = F.linear(h, params[1]) - y
    return (d * d).mean()


def test_scale_multiplies_tensors_and_nested_outputs():
    scaler = amp.GradScaler(init_scale=4.0)
    t = mg.tensor([2.0, -1.0])
    np.testing.assert_array_equal(scaler.scale(t).numpy(), [8.0, -4.0])
    outs = scaler.scale([t, (t, {"k": t})])
    assert outs[1][1]["k"].numpy().tolist() == [8.0, -4.0]


def test_unscale_values_and_found_inf():
    scaler = amp.GradScaler(init_scale=4.0)
    p = mg.Parameter(np.zeros(3, np.float32))
    opt = SGD([p], lr=1.0)
    scaler.scale((p * mg.tensor([1.0, 2.0, 3.0])).sum()).backward()
    np.testing.assert_array_equal(p.grad.numpy(), [4.0, 8.0, 12.0])
    scaler.unscale_(opt)
    np.testing.assert_array_equal(p.grad.numpy(), [1.0, 2.0, 3.0])
    scaler.step(opt)
    scaler.update()
    assert not scaler.last_step_skipped
    scaler.scale((p * 1.0).sum()).backward()
    p.grad = mg.tensor([1.0, float("nan"), 1.0])
    assert scaler.step(opt) is None
    scaler.update()
    assert scaler.last_step_skipped


def test_growth_and_backoff_sequence():
    scaler = amp.GradScaler(init_scale=2.0, growth_factor=2.0, backoff_factor=0.25,
                            growth_interval=1)
    p = mg.Parameter(np.zeros(1, np.float32))
    opt = SGD([p], lr=0.0)
    expect = []
    for bad in (False, True, False, False, True):
        scaler.scale((p * 1.0).sum()).backward()
        if bad:
            p.grad = mg.tensor([INF])
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        expect.append(scaler.get_scale())
    assert expect == [4.0, 1.0, 2.0, 4.0, 1.0]


def _train(params, batches, scaler=None, inject_at=None, skip_at=None, opt_cls=SGD):
    opt = opt_cls(params, lr=0.05)
    for i, (x, y) in enumerate(batches):
        if i == skip_at:
            continue
        opt.zero_grad()
        loss = _loss(params, x, y)
        if scaler is None:
            loss.backward()
            opt.step()
            continue
        scaler.scale(loss).backward()
        if i == inject_at:
            params[1].grad = mg.tensor(np.full((2, 4), INF, np.float32))
        scaler.step(opt)
        scaler.update()
    return [p.numpy() for p in params]


@pytest.mark.parametrize("opt_cls", [SGD, Adam])
def test_skipped_iteration_equals_leaving_it_out(opt_cls):
    batches = _batches()
    scaler = amp.GradScaler(init_scale=2.0 ** 8, growth_interval=1)
    scaled = _train(_net(), batches, scaler, inject_at=2, opt_cls=opt_cls)
    control = _train(_net(), batches, skip_at=2, opt_cls=opt_cls)
    for a, b in zip(scaled, control):      # power-of-two scales: unscaling is exact
        np.testing.assert_array_equal(a, b)
    assert scaler.skipped_steps == 1


def test_state_dict_round_trip_and_disabled_scalers():
    a = amp.GradScaler(init_scale=3.0, growth_factor=4.0, backoff_factor=0.5,
                       growth_interval=2)
    p = mg.Parameter(np.zeros(1, np.float32))
    opt = SGD([p], lr=0.0)
    a.scale((p * 1.0).sum()).backward()
    a.step(opt)
    a.update()                                  # tracker 1
    b = amp.GradScaler()
    b.load_state_dict(a.state_dict())
    assert (b.get_scale(), b.get_growth_factor(), b.get_backoff_factor(),
            b.get_growth_interval()) == (3.0, 4.0, 0.5, 2)
    for s in (a, b):                          # one more clean iteration grows both alike
        opt.zero_grad()
        s.scale((p * 1.0).sum()).backward()
        s.step(opt)
        s.update()
    assert a.get_scale() == b.get_scale() == 12.0
    off = amp.GradScaler(enabled=False)
    assert off.state_dict() == {}
    off.load_state_dict(a.state_dict())        # ignored by a disabled scaler
    assert off.get_scale() == 1.0
    with pytest.raises(RuntimeError, match="empty"):
        amp.GradScaler().load_state_dict(off.state_dict())


def test_several_losses_and_optimizers():
    batches = _batches(3)
    ref_a, ref_b = _net(0), _net(1)
    sa, sb = _net(0), _net(1)
    scaler = amp.GradScaler(init_scale=2.0 ** 6, growth_interval=1)
    o_ref = [SGD(ref_a, lr=0.1), SGD(ref_b, lr=0.1)]
    o = [SGD(sa, lr=0.1), SGD(sb, lr=0.1)]
    for x, y in batches:
        for opt in o_ref + o:
            opt.zero_grad()
        (_loss(ref_a, x, y) + 0.5 * _loss(ref_b, x, y)).backward()
        (_loss(ref_a, x, y) * _loss(ref_b, x, y)).backward()
        for opt in o_ref:
            opt.step()
        scaler.scale(_loss(sa, x, y) + 0.5 * _loss(sb, x, y)).backward()
        scaler.scale(_loss(sa, x, y) * _loss(sb, x, y)).backward()
        scaler.unscale_(o[0])                  # one unscaled explicitly, one by step
        scaler.step(o[0])
        scaler.step(o[1])
        scaler.update()
    for a, b in zip(ref_a + ref_b, sa + sb):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


def test_call_order_errors():
    p = mg.Parameter(np.zeros(1, np.float32))
    opt = SGD([p], lr=0.1)
    scaler = amp.GradScaler()
    scaler.scale((p * 1.0).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="closures"):
        scaler.step(opt, closure=lambda: None)
    scaler.update()


@pytest.mark.parametrize("separate_unscale", [True, False])
def test_clipping_equals_unscaled_training(separate_unscale):
    max_norm = 0.2
    batches = _batches(4)
    ref, sc = _net(), _net()
    o_ref, o = SGD(ref, lr=0.1), SGD(sc, lr=0.1)
    scaler = amp.GradScaler(init_scale=2.0 ** 10, growth_interval=1)
    for x, y in batches:
        o_ref.zero_grad()
        o.zero_grad()
        _loss(ref, x, y).backward()
        clip_grad_norm(ref, max_norm)
        o_ref.step()
        scaler.scale(_loss(sc, x, y)).backward()
        if separate_unscale:
            scaler.unscale_(o)
            clip_grad_norm(sc, max_norm)
        else:                                   # clip the scaled gradients at a scaled norm
            clip_grad_norm(sc, max_norm * scaler.get_scale())
        scaler.step(o)
        scaler.update()
    for a, b in zip(ref, sc):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_disabled_scaler_is_a_pass_through():
    p = mg.Parameter(np.ones(2, np.float32))
    opt = SGD([p], lr=0.5)
    scaler = amp.GradScaler(enabled=False)
    loss = (p * 2.0).sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0
    loss.backward()
    scaler.unscale_(opt)
    assert scaler.step(opt) is opt
    scaler.update()
    np.testing.assert_array_equal(p.numpy(), 0.0)


def test_same_scale_trajectory_as_torch_gradscaler():
    torch = pytest.importorskip("torch")
    pattern = [False, True, False, False, False, True, True, False, False]
    tw = torch.zeros(2, requires_grad=True)
    topt = torch.optim.SGD([tw], lr=0.1)
    ts = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    p = mg.Parameter(np.zeros(2, np.float32))
    opt = SGD([p], lr=0.1)
    ms = amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    for bad in pattern:
        topt.zero_grad()
        ts.scale((tw * torch.tensor([1.0, 2.0])).sum()).backward()
        if bad:
            tw.grad[0] = float("inf")
        ts.step(topt)
        ts.update()
        opt.zero_grad()
        ms.scale((p * mg.tensor([1.0, 2.0])).sum()).backward()
        if bad:
            p.grad = mg.tensor(np.array([INF, 2.0 * ms.get_scale()], np.float32))
        ms.step(opt)
        ms.update()
        assert ms.get_scale() == ts.get_scale()
        np.testing.assert_array_equal(p.numpy(), tw.detach().numpy())
    assert ms.state_dict()["_growth_tracker"] == ts.state_dict()["_growth_tracker"]
