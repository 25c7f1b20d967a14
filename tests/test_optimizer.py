"""Optimizers against hand-written NumPy updates, state handling, schedulers and clipping."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.optimizer import SGD, Adam, AdamW, clip_grad_norm, clip_grad_value
from minigrad.optimizer import lr_scheduler as S
from minigrad.serialization import load, save

W0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
GRADS = [np.array([[0.1, -0.2, 0.3], [0.4, -0.5, 0.6]], np.float32),
         np.array([[-0.3, 0.1, 0.2], [0.0, 0.7, -0.1]], np.float32),
         np.array([[0.2, 0.2, -0.4], [-0.6, 0.3, 0.5]], np.float32)]


def _run(opt_cls, device, dtype=mg.float32, **kw):
    p = mg.Parameter(W0.copy(), dtype=dtype, device=device)
    opt = opt_cls([p], **kw)
    for g in GRADS:
        p.grad = mg.tensor(g, dtype=dtype, device=device)
        assert opt.step() is opt
        opt.clear_grad()
    return p, opt


def _sgd_ref(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    w = W0.astype(np.float64)
    buf = None
    for g in GRADS:
        g = g + weight_decay * w
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr * g
    return w


def _adam_ref(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
              decoupled=False):
    w = W0.astype(np.float64)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    vmax = np.zeros_like(w)
    for t, g in enumerate(GRADS, start=1):
        if decoupled:
            w = w * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * w
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        vmax = np.maximum(vmax, v)
        vh = vmax if amsgrad else v
        mhat = m / (1 - betas[0] ** t)
        vhat = vh / (1 - betas[1] ** t)
        w = w - lr * mhat / (np.sqrt(vhat) + eps)
    return w


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
    dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.1),
])
def test_sgd_matches_formula(device, kw):
    p, opt = _run(SGD, device, **kw)
    np.testing.assert_allclose(p.numpy(), _sgd_ref(**kw), rtol=1e-6, atol=1e-6)
    assert p._version == len(GRADS)
    if kw.get("momentum"):
        assert opt.state[p]["momentum_buffer"].dtype == np.float32


@pytest.mark.parametrize("cls,kw,decoupled", [
    (Adam, dict(lr=0.01), False),
    (Adam, dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1), False),
    (Adam, dict(lr=0.01, amsgrad=True), False),
    (AdamW, dict(lr=0.01), True),
    (AdamW, dict(lr=0.01, weight_decay=0.5, amsgrad=True), True),
])
def test_adam_family_matches_formula(device, cls, kw, decoupled):
    p, opt = _run(cls, device, **kw)
    ref_kw = dict(kw)
    if cls is AdamW:
        ref_kw.setdefault("weight_decay", 1e-2)
    np.testing.assert_allclose(p.numpy(), _adam_ref(decoupled=decoupled, **ref_kw),
                               rtol=1e-5, atol=1e-6)
    assert opt.state[p]["step"] == len(GRADS)


def test_adam_matches_torch():
    torch = pytest.importorskip("torch")
    p, _ = _run(AdamW, "cpu", lr=0.01, weight_decay=0.1, amsgrad=True)
    tp = torch.nn.Parameter(torch.tensor(W0.copy()))
    topt = torch.optim.AdamW([tp], lr=0.01, weight_decay=0.1, amsgrad=True)
    for g in GRADS:
        tp.grad = torch.tensor(g)
        topt.step()
    np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_param_without_grad_is_untouched():
    a = mg.Parameter(W0.copy())
    b = mg.Parameter(W0.copy())
    opt = Adam([a, b], lr=0.1)
    a.grad = mg.tensor(GRADS[0])
    opt.step()
    np.testing.assert_array_equal(b.numpy(), W0)
    assert b not in opt.state and b._version == 0
    before = {k: (v.copy() if hasattr(v, "copy") else v) for k, v in opt.state[a].items()}
    opt.clear_grad().step()  # every grad is None: nothing changes, no step counted
    assert opt.state[a]["step"] == before["step"] == 1
    np.testing.assert_array_equal(opt.state[a]["exp_avg"], before["exp_avg"])


@pytest.mark.parametrize("dtype", [mg.float16, mg.bfloat16])
def test_low_precision_param_gets_fp32_state(device, dtype):
    p, opt = _run(SGD, device, dtype=dtype, lr=0.1, momentum=0.9)
    assert p.dtype == dtype
    assert opt.state[p]["momentum_buffer"].dtype == np.float32
    ref = _sgd_ref(lr=0.1, momentum=0.9)
    np.testing.assert_allclose(p.numpy().astype(np.float32), ref, rtol=1e-2, atol=1e-2)
    p2, opt2 = _run(Adam, device, dtype=dtype, lr=0.01)
    assert opt2.state[p2]["exp_avg"].dtype == np.float32
    assert opt2.state[p2]["exp_avg_sq"].dtype == np.float32


def test_tiny_update_survives_in_fp32_math():
    # 1 + 1e-4 rounds back to 1 in fp16; the update is computed in fp32 then rounded, so a
    # large enough accumulated momentum does move the weight.
    p = mg.Parameter(np.ones(4, np.float16))
    opt = SGD([p], lr=1.0, momentum=0.0)
    p.grad = mg.tensor(np.full(4, -6e-4, np.float16))
    opt.step()
    assert p.numpy()[0] == np.float16(1 + 6e-4)


@pytest.mark.parametrize("cls,kw", [(SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
                                    (Adam, dict(lr=0.01, amsgrad=True)),
                                    (AdamW, dict(lr=0.01))])
def test_state_dict_round_trip_continues_identically(tmp_path, cls, kw):
    p, opt = _run(cls, "cpu", **kw)
    path = tmp_path / "opt.safetensors"
    save({"w": p, "opt": opt.state_dict()}, path)
    p.grad = mg.tensor(GRADS[0])
    opt.step()
    loaded = load(path)
    q = mg.Parameter(loaded["w"].numpy())
    opt2 = cls([q], **{k: v for k, v in kw.items() if k != "lr"}, lr=123.0)
    opt2.load_state_dict(loaded["opt"])
    assert opt2.param_groups[0]["lr"] == kw["lr"]
    q.grad = mg.tensor(GRADS[0])
    opt2.step()
    np.testing.assert_array_equal(q.numpy(), p.numpy())


def test_param_groups_and_zero_grad():
    a, b = mg.Parameter([1.0, 2.0]), mg.Parameter([3.0])
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0]
    a.grad, b.grad = mg.tensor([1.0, 1.0]), mg.tensor([1.0])
    opt.step()
    np.testing.assert_allclose(a.numpy(), [0.9, 1.9], rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), [2.0])
    opt.zero_grad(set_to_none=False)
    assert a.grad.numpy().tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="wrap it in a list"):
        SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="nesterov"):
        SGD([a], lr=0.1, nesterov=True)


# ------------------------------------------------------------------------------- schedulers
def _lrs(make, n=8, lr=0.1):
    opt = SGD([mg.Parameter([1.0])], lr=lr)
    sched = make(opt)
    out = [opt.param_groups[0]["lr"]]
    for _ in range(n - 1):
        sched.step()
        out.append(sched.get_last_lr()[0])
    return out


def test_schedulers_follow_pytorch_formulas():
    np.testing.assert_allclose(_lrs(lambda o: S.StepLR(o, 3, gamma=0.5)),
                               [0.1] * 3 + [0.05] * 3 + [0.025] * 2)
    np.testing.assert_allclose(_lrs(lambda o: S.MultiStepLR(o, [2, 5], gamma=0.1)),
                               [0.1, 0.1, 0.01, 0.01, 0.01, 0.001, 0.001, 0.001])
    cos = [0.01 + 0.09 * (1 + math.cos(math.pi * e / 5)) / 2 for e in range(8)]
    np.testing.assert_allclose(_lrs(lambda o: S.CosineAnnealingLR(o, 5, eta_min=0.01)), cos)
    np.testing.assert_allclose(_lrs(lambda o: S.LambdaLR(o, lambda e: 0.5 ** e)),
                               [0.1 * 0.5 ** e for e in range(8)])
    warm = [0.1 * (0.25 + 0.75 * min(e, 4) / 4) for e in range(8)]
    np.testing.assert_allclose(_lrs(lambda o: S.LinearWarmup(o, 4, start_factor=0.25)), warm)


def test_scheduler_state_dict_round_trip(tmp_path):
    opt = SGD([mg.Parameter([1.0])], lr=0.1)
    sched = S.StepLR(opt, 2, gamma=0.5)
    for _ in range(3):
        sched.step()
    save(sched.state_dict(), tmp_path / "s.safetensors")
    opt2 = SGD([mg.Parameter([1.0])], lr=0.1)
    sched2 = S.StepLR(opt2, 7)
    sched2.load_state_dict(load(tmp_path / "s.safetensors"))
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"] == 0.05
    sched.step()
    sched2.step()
    assert sched2.get_last_lr() == sched.get_last_lr() == [0.025]


# ------------------------------------------------------------------------------- clipping
def test_clip_grad_norm_values(device):
    a, b = mg.Parameter(np.zeros(2, np.float32), device=device), mg.Parameter(
        np.zeros(1, np.float16), device=device)
    shared = mg.tensor([3.0, 4.0], device=device)
    a.grad, b.grad = shared, mg.tensor([12.0], dtype=mg.float16, device=device)
    total = clip_grad_norm([a, b], max_norm=6.5)
    assert total.dtype == mg.float32
    np.testing.assert_allclose(total.item(), 13.0, rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), np.array([3.0, 4.0]) * 0.5, rtol=1e-5)
    assert b.grad.dtype == mg.float16 and abs(float(b.grad.item()) - 6.0) < 1e-2
    assert shared.numpy().tolist() == [3.0, 4.0]  # replaced, not scaled in place
    a.grad = mg.tensor([3.0, -4.0], device=device)
    b.grad = None
    np.testing.assert_allclose(clip_grad_norm(a, 10.0, norm_type=float("inf")).item(), 4.0)
    np.testing.assert_allclose(a.grad.numpy(), [3.0, -4.0], rtol=1e-6)  # under the limit
    np.testing.assert_allclose(clip_grad_norm(a, 1.0, norm_type=1).item(), 7.0)
    np.testing.assert_allclose(a.grad.numpy(), [3 / 7, -4 / 7], rtol=1e-5)


def test_clip_grad_norm_nonfinite():
    a = mg.Parameter([0.0, 0.0])
    a.grad = mg.tensor([np.nan, 1.0])
    assert math.isnan(clip_grad_norm([a], 1.0).item())
    assert np.isnan(a.grad.numpy()).all()
    a.grad = mg.tensor([np.inf, 1.0])
    with pytest.raises(RuntimeError, match="error_if_nonfinite"):
        clip_grad_norm([a], 1.0, error_if_nonfinite=True)


def test_clip_grad_value(device):
    a = mg.Parameter(np.zeros(4, np.float32), device=device)
    a.grad = mg.tensor([-3.0, -0.5, 0.5, 3.0], device=device)
    clip_grad_value([a], 1.0)
    assert a.grad.numpy().tolist() == [-1.0, -0.5, 0.5, 1.0]
