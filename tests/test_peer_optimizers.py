"""The peers' optimizers and schedulers: Adagrad, Adadelta, RMSprop, Adamax, NAdam and RAdam
against ``torch.optim`` step by step (parameters and state), ``minigrad.optim.lr_scheduler``
against ``torch.optim.lr_scheduler``'s learning-rate sequences, OneFlow's ``CosineDecayLR`` /
``WarmUpLR``, MegEngine's ``optimizer.MultiStepLR`` and MindSpore's ``nn.SGD`` /
``nn.Momentum`` / ``nn.Adam`` (called as ``optimizer(grads)``)."""

import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn, optimizer
from minigrad.optim import lr_scheduler as L

torch = pytest.importorskip("torch")
import torch.optim.lr_scheduler as TL  # noqa: E402

CONFIGS = [
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.2)),
    ("Adagrad", dict(lr=0.05, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.3, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, eps=1e-4)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
]
SHAPES = [((3, 4), np.float32), ((), np.float32), ((5,), np.float64)]
STEPS = 12  # RAdam's rectified branch starts at step 6 with the default betas


def _stream(steps=STEPS):
    rng = np.random.default_rng(7)
    init = [rng.standard_normal(s).astype(d) for s, d in SHAPES]
    grads = [[(rng.standard_normal(s) * 3).astype(d) for s, d in SHAPES] for _ in range(steps)]
    return init, grads


def _pair(name, kw):
    init, grads = _stream()
    ours = [mg.Parameter(a.copy()) for a in init]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in init]
    return (getattr(mg.optim, name)(ours, **kw), ours, getattr(torch.optim, name)(theirs, **kw),
            theirs, grads)


def _feed(params, tparams, grads):
    for p, t, g in zip(params, tparams, grads):
        p.grad = mg.tensor(g.copy())
        t.grad = torch.tensor(g.copy())


def _assert_state_matches(opt, params, topt, tparams):
    for p, t in zip(params, tparams):
        mine = opt.state[p]
        assert set(mine) == set(topt.state[t])
        for key, ref in topt.state[t].items():
            ref = ref.detach().numpy() if hasattr(ref, "detach") else ref
            np.testing.assert_allclose(np.asarray(mine[key], np.float64),
                                       np.asarray(ref, np.float64), rtol=1e-5, atol=1e-7,
                                       err_msg=f"state {key!r}")


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in
                                                  enumerate(CONFIGS)])
def test_optimizer_follows_pytorch_step_by_step(name, kw):
    opt, ours, topt, theirs, grads = _pair(name, kw)
    assert opt.defaults.keys() >= {"lr", "weight_decay"}
    for step in grads:
        _feed(ours, theirs, step)
        opt.step()
        topt.step()
        for p, t in zip(ours, theirs):
            assert p.dtype == str(t.dtype).replace("torch.", "")
            np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=2e-6, atol=1e-7)
    _assert_state_matches(opt, ours, topt, theirs)


@pytest.mark.parametrize("name", ["Adagrad", "Adadelta", "RMSprop", "Adamax", "NAdam", "RAdam"])
def test_a_flagged_step_changes_nothing_and_does_not_count(name):
    # The sync-free GradScaler's device flag path (masked commits, device step count), run on
    # NumPy: the GPU runs the same body on CuPy.
    kw = dict(RMSprop=dict(momentum=0.9, centered=True)).get(name, {})
    opt, ours, topt, theirs, grads = _pair(name, kw)
    _feed(ours, theirs, grads[0])
    opt.step()
    topt.step()
    before = [p.numpy().copy() for p in ours]
    state = {id(p): {k: np.array(v, copy=True) for k, v in opt.state[p].items()} for p in ours}
    _feed(ours, theirs, [g * np.inf for g in grads[1]])
    with np.errstate(all="ignore"):        # the masked-off values are inf/NaN
        for group in opt.param_groups:
            opt._update_group(group, np.ones(1, np.int32))
    for p, b in zip(ours, before):
        np.testing.assert_array_equal(p.numpy(), b)
        for k, v in opt.state[p].items():
            np.testing.assert_array_equal(np.asarray(v), state[id(p)][k], err_msg=k)
    for step in grads[2:5]:  # then the counts (on the "device" now) go on as PyTorch's
        _feed(ours, theirs, step)
        for group in opt.param_groups:
            opt._update_group(group, np.zeros(1, np.int32))
        topt.step()
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["Adagrad", "RMSprop", "NAdam", "RAdam"])
def test_low_precision_parameters_get_float32_state(name):
    p = mg.Parameter(np.linspace(-1, 1, 6).astype(np.float16))
    ref = mg.Parameter(np.linspace(-1, 1, 6).astype(np.float16).astype(np.float32))
    opt, ropt = getattr(mg.optim, name)([p], lr=0.01), getattr(mg.optim, name)([ref], lr=0.01)
    for k in range(3):
        g = np.full(6, 0.5 + k, np.float32)
        p.grad, ref.grad = mg.tensor(g.astype(np.float16)), mg.tensor(g)
        opt.step()
        ropt.step()
    assert p.dtype == mg.float16
    assert all(v.dtype == np.float32 for k, v in opt.state[p].items() if hasattr(v, "dtype"))
    np.testing.assert_allclose(p.numpy(), ref.numpy().astype(np.float16), rtol=1e-3)


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RMSprop"])
def test_state_dict_round_trip_continues_identically(name, tmp_path):
    kw = dict(RMSprop=dict(momentum=0.9, centered=True)).get(name, {})
    opt, ours, _, _, grads = _pair(name, kw)
    twin = [mg.Parameter(p.numpy().copy()) for p in ours]
    for step in grads[:3]:
        for p, g in zip(ours, step):
            p.grad = mg.tensor(g)
        opt.step()
    mg.save({"opt": opt.state_dict(), **{f"p{i}": p for i, p in enumerate(ours)}},
            tmp_path / "ckpt.safetensors")
    saved = mg.load(tmp_path / "ckpt.safetensors")
    for i, p in enumerate(twin):
        p.data[...] = saved[f"p{i}"].numpy()
    opt2 = getattr(mg.optim, name)(twin, **kw)
    opt2.load_state_dict(saved["opt"])
    for step in grads[3:6]:
        for p, q, g in zip(ours, twin, step):
            p.grad, q.grad = mg.tensor(g), mg.tensor(g)
        opt.step()
        opt2.step()
    for p, q in zip(ours, twin):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_bad_hyperparameters_are_refused():
    p = [mg.Parameter([1.0])]
    with pytest.raises(ValueError, match="rho"):
        mg.optim.Adadelta(p, rho=1.5)
    with pytest.raises(ValueError, match="betas"):
        mg.optim.NAdam(p, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="lr_decay"):
        mg.optim.Adagrad(p, lr_decay=-1)
    with pytest.raises(ValueError, match="momentum"):
        mg.optim.RMSprop(p, momentum=-0.1)


# ----------------------------------------------------------------------------- schedulers
def _sgd_pair(opt="SGD", **kw):
    ours = getattr(mg.optim, opt)([{"params": [mg.Parameter([1.0])]},
                                   {"params": [mg.Parameter([1.0])], "lr": 0.05}], lr=0.1, **kw)
    theirs = getattr(torch.optim, opt)([{"params": [torch.nn.Parameter(torch.ones(1))]},
                                        {"params": [torch.nn.Parameter(torch.ones(1))],
                                         "lr": 0.05}], lr=0.1, **kw)
    return ours, theirs


def _hyper(opt):
    return [(g["lr"], g.get("momentum", g.get("betas", (0.0,))[0])) for g in opt.param_groups]


SCHEDULES = {
    "StepLR": lambda M, o: M.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda M, o: M.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "ExponentialLR": lambda M, o: M.ExponentialLR(o, gamma=0.9),
    "LambdaLR": lambda M, o: M.LambdaLR(o, lambda e: 1.0 / (e + 1)),
    "LambdaLR-groups": lambda M, o: M.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: e % 3]),
    "CosineAnnealingLR": lambda M, o: M.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "LinearLR": lambda M, o: M.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=8),
    "ConstantLR": lambda M, o: M.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR": lambda M, o: M.PolynomialLR(o, total_iters=10, power=2.0),
    "MultiplicativeLR": lambda M, o: M.MultiplicativeLR(o, lambda e: 0.95),
    "SequentialLR": lambda M, o: M.SequentialLR(
        o, [M.LinearLR(o, 0.1, 1.0, 5), M.CosineAnnealingLR(o, 20)], milestones=[5]),
    "SequentialLR-3": lambda M, o: M.SequentialLR(
        o, [M.ConstantLR(o, 0.1, 2), M.ExponentialLR(o, 0.9), M.StepLR(o, 3)], [2, 10]),
    "WarmRestarts": lambda M, o: M.CosineAnnealingWarmRestarts(o, T_0=5, eta_min=0.01),
    "WarmRestarts-mult": lambda M, o: M.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    "OneCycleLR": lambda M, o: M.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=30),
    "OneCycleLR-linear-3": lambda M, o: M.OneCycleLR(
        o, 1.0, epochs=3, steps_per_epoch=10, anneal_strategy="linear", three_phase=True,
        pct_start=0.25, div_factor=10.0, final_div_factor=100.0),
}


# OneCycleLR also cycles the momentum: SGD's momentum, Adam's betas[0]
@pytest.mark.parametrize("name,opt", [(n, "SGD") for n in SCHEDULES] +
                         [(n, "Adam") for n in SCHEDULES if n.startswith("OneCycle")])
def test_scheduler_follows_pytorch(name, opt):
    ours, theirs = _sgd_pair(opt, **({"momentum": 0.9} if opt == "SGD" else {}))
    s, ts = SCHEDULES[name](L, ours), SCHEDULES[name](TL, theirs)
    for _ in range(30):
        np.testing.assert_allclose(np.array(_hyper(ours), dtype=float),
                                   np.array(_hyper(theirs), dtype=float), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(s.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        theirs.step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s.step()
            ts.step()


def test_warm_restarts_with_fractional_epochs_follows_pytorch():
    ours, theirs = _sgd_pair()
    s = L.CosineAnnealingWarmRestarts(ours, T_0=3, T_mult=2, eta_min=0.001)
    ts = TL.CosineAnnealingWarmRestarts(theirs, T_0=3, T_mult=2, eta_min=0.001)
    for epoch in range(12):
        for i in range(4):
            s.step(epoch + i / 4)
            ts.step(epoch + i / 4)
            np.testing.assert_allclose(s.get_last_lr(), ts.get_last_lr(), rtol=1e-12)


@pytest.mark.parametrize("kw", [dict(patience=2, factor=0.5, cooldown=1),
                                dict(mode="max", threshold_mode="abs", threshold=0.01,
                                     patience=1, min_lr=[0.02, 0.0]),
                                dict(patience=0, eps=0.05)])
def test_reduce_on_plateau_follows_pytorch(kw):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.94, 0.93, 0.93, 0.93, 0.93, 0.5, 0.5, 0.5, 0.5] * 3
    ours, theirs = _sgd_pair()
    s, ts = L.ReduceLROnPlateau(ours, **kw), TL.ReduceLROnPlateau(theirs, **kw)
    for m in metrics:
        s.step(mg.tensor(m, dtype=mg.float64))    # a one-element Tensor works too
        ts.step(m)
        assert _hyper(ours) == _hyper(theirs)
        assert s.get_last_lr() == ts.get_last_lr()
        assert s.num_bad_epochs == ts.num_bad_epochs and s.best == ts.best


def test_reduce_on_plateau_is_an_lr_scheduler_as_in_pytorch():
    # PyTorch 2.2+ derives it from LRScheduler: isinstance dispatch in training loops sees it
    ours, theirs = _sgd_pair()
    s, ts = L.ReduceLROnPlateau(ours, patience=0), TL.ReduceLROnPlateau(theirs, patience=0)
    assert isinstance(s, L.LRScheduler) and isinstance(ts, TL.LRScheduler)
    assert s.get_last_lr() == ts.get_last_lr() == [0.1, 0.05]  # no construction step
    with pytest.raises(NotImplementedError):
        s.get_lr()
    for m in (1.0, 2.0):                         # the second reduces
        s.step(m)
        ts.step(m)
    state = s.state_dict()
    assert s.get_last_lr() == ts.get_last_lr() == state["_last_lr"]
    assert "optimizer" not in state and sorted(state) == sorted(
        k for k in ts.state_dict() if k not in ("default_min_lr", "mode_worse"))
    for g in ours.param_groups:
        g["lr"] = 0.3
    fresh = L.ReduceLROnPlateau(ours, patience=0)
    fresh.load_state_dict(state)                 # the optimizer's rates stay its own
    assert [g["lr"] for g in ours.param_groups] == [0.3, 0.3]
    assert fresh.best == 1.0 and fresh.get_last_lr() == state["_last_lr"]


def test_a_users_get_lr_drives_the_scheduler():
    class Halving(L.LRScheduler):          # PyTorch style: override get_lr
        def get_lr(self):
            return [base * 0.5 ** self.last_epoch for base in self.base_lrs]

    opt, _ = _sgd_pair()
    s = Halving(opt)
    s.step()
    s.step()
    assert s.get_last_lr() == [0.025, 0.0125]


def test_scheduler_state_dicts_resume():
    opt, _ = _sgd_pair()
    seq = L.SequentialLR(opt, [L.LinearLR(opt, 0.1, 1.0, 3), L.ExponentialLR(opt, 0.5)], [3])
    for _ in range(5):
        seq.step()
    state = seq.state_dict()
    opt2, _ = _sgd_pair()
    seq2 = L.SequentialLR(opt2, [L.LinearLR(opt2, 0.1, 1.0, 3), L.ExponentialLR(opt2, 0.5)], [3])
    seq2.load_state_dict(state)
    seq.step()
    seq2.step()
    assert seq.get_last_lr() == seq2.get_last_lr()


# ----------------------------------------------------------------------------- OneFlow
def test_oneflow_cosine_decay_and_warm_up():
    opt, _ = _sgd_pair()
    s = L.CosineDecayLR(opt, decay_steps=10, alpha=0.1)
    lrs = [s.get_last_lr()[0]]
    for _ in range(12):
        s.step()
        lrs.append(s.get_last_lr()[0])
    expect = [0.1 * ((1 - 0.1) * 0.5 * (1 + np.cos(np.pi * k / 10)) + 0.1) if k < 10
              else 0.1 * 0.1 for k in range(13)]
    np.testing.assert_allclose(lrs, expect, rtol=1e-12)
    assert s.last_step == 12

    def sequence(make, n):
        o = mg.optim.SGD([mg.Parameter([1.0])], lr=0.001)
        sch = make(o)
        out = [o.param_groups[0]["lr"]]
        for _ in range(n):
            sch.step()
            out.append(o.param_groups[0]["lr"])
        return out

    # OneFlow's documented examples
    const = sequence(lambda o: L.WarmUpLR(o, warmup_factor=0.5, warmup_iters=5,
                                          warmup_method="constant"), 6)
    np.testing.assert_allclose(const, [0.0005] * 5 + [0.001] * 2, rtol=1e-12)
    linear = sequence(lambda o: L.WarmUpLR(o, warmup_factor=0.5, warmup_iters=5), 6)
    np.testing.assert_allclose(linear, [0.0005, 0.0006, 0.0007, 0.0008, 0.0009, 0.001, 0.001],
                               rtol=1e-12)
    # over a scheduler: the ramp ends where the scheduler is at warmup_iters, then hands over
    cos = sequence(lambda o: L.WarmUpLR(L.CosineDecayLR(o, decay_steps=5, alpha=0.1),
                                        warmup_factor=0.5, warmup_iters=2), 4)
    at2 = 0.001 * (0.9 * 0.5 * (1 + np.cos(np.pi * 2 / 5)) + 0.1)
    np.testing.assert_allclose(cos[:3], [0.0005, 0.0005 + (at2 - 0.0005) / 2, at2], rtol=1e-12)
    # warmup_prefix: the scheduler starts from its step 0 after the warm-up
    pre = sequence(lambda o: L.WarmUpLR(L.CosineDecayLR(o, decay_steps=5, alpha=0.1),
                                        warmup_factor=0.5, warmup_iters=2, warmup_prefix=True),
                   3)
    np.testing.assert_allclose(pre, [0.0005, 0.00075, 0.001, 0.001 * (0.9 * 0.5 * (
        1 + np.cos(np.pi / 5)) + 0.1)], rtol=1e-12)
    with pytest.raises(ValueError, match="warmup_method"):
        L.WarmUpLR(opt, warmup_method="cosine")
    assert L.WarmupLR is L.WarmUpLR


# ----------------------------------------------------------------------------- MegEngine
def test_megengine_multistep_lr():
    ours, theirs = _sgd_pair()
    s = optimizer.MultiStepLR(ours, milestones=[2, 5], gamma=0.5)
    ts = TL.MultiStepLR(theirs, milestones=[2, 5], gamma=0.5)
    for _ in range(8):
        assert s.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        s.step()
        theirs.step()
        ts.step()
    assert s.current_epoch == 8
    s.step(epoch=1)                          # MegEngine's step(epoch)
    assert s.current_epoch == 1 and s.get_last_lr() == pytest.approx([0.1, 0.05])
    with pytest.raises(ValueError, match="increasing"):
        optimizer.MultiStepLR(ours, milestones=[5, 2])

    class Warm(optimizer.LRScheduler):       # a MegEngine-style subclass
        def get_lr(self):
            return [b * min(1.0, (self.current_epoch + 1) / 4) for b in self.base_lrs]

    opt, _ = _sgd_pair()
    w = Warm(opt)
    assert w.get_last_lr() == pytest.approx([0.025, 0.0125])


# ----------------------------------------------------------------------------- MindSpore
def test_mindspore_optimizers_follow_their_formulas():
    init, grads = _stream(4)
    for ms, torch_cls, kw, tkw in [
        (nn.SGD, torch.optim.SGD, dict(learning_rate=0.1, momentum=0.9, dampening=0.1,
                                       weight_decay=0.01),
         dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
        (nn.Momentum, torch.optim.SGD, dict(learning_rate=0.1, momentum=0.9, use_nesterov=True),
         dict(lr=0.1, momentum=0.9, nesterov=True)),
        (nn.Adam, torch.optim.Adam, dict(learning_rate=0.01, beta1=0.8, beta2=0.99, eps=1e-6,
                                         weight_decay=0.1, use_amsgrad=True),
         dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, amsgrad=True)),
    ]:
        ours = [mg.Parameter(a.copy()) for a in init]
        theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in init]
        opt, topt = ms(ours, **kw), torch_cls(theirs, **tkw)
        assert opt.parameters == tuple(ours)
        for step in grads:
            assert opt(tuple(mg.tensor(g) for g in step)) is True     # optimizer(grads)
            for t, g in zip(theirs, step):
                t.grad = torch.tensor(g)
            topt.step()
        for p, t in zip(ours, theirs):
            np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=2e-6, atol=1e-7)


def test_mindspore_optimizer_signatures_and_loss_scale():
    w = mg.Parameter([1.0, 2.0])
    opt = nn.SGD([w], 0.5, 0.0, 0.0, 0.0, False, 4.0)          # positional, MindSpore's order
    opt((mg.tensor([4.0, 8.0]),))                             # scaled by 4: divided back
    assert w.numpy().tolist() == [0.5, 1.0]
    v = mg.Parameter([1.0])
    adam = nn.Adam([v], 0.1, 0.9, 0.999, 1e-8, False, False, 0.0, 2.0)
    ref = mg.Parameter([1.0])
    radam = mg.optim.Adam([ref], lr=0.1)
    adam((mg.tensor([2.0]),))
    ref.grad = mg.tensor([1.0])
    radam.step()
    assert v.numpy().tolist() == ref.numpy().tolist()
    assert nn.Momentum([v], 0.1, 0.9).loss_scale == 1.0
    assert nn.SGD([mg.Parameter([1.0])], learning_rate=mg.tensor(0.3)).param_groups[0]["lr"] \
        == pytest.approx(0.3)
    with pytest.raises(ValueError, match="gradients"):
        opt((mg.tensor([1.0, 1.0]), mg.tensor([1.0])))
    with pytest.raises(NotImplementedError, match="use_nesterov"):
        nn.Adam([mg.Parameter([1.0])], use_nesterov=True)
    with pytest.raises(NotImplementedError, match="learning_rate"):
        nn.SGD([mg.Parameter([1.0])], learning_rate=[0.1, 0.05])
    with pytest.raises(ValueError, match="loss_scale"):
        nn.SGD([mg.Parameter([1.0])], loss_scale=0.0)


def test_mindspore_functional_training_step():
    # MindSpore's quick start: grads from a function of the parameters, then optimizer(grads)
    import minigrad.dataset as ds

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((32, 4)).astype(np.float32), rng.integers(0, 3, 32)
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)
    mg.manual_seed(0)
    model = nn.Dense(4, 3)
    opt = nn.SGD(model.trainable_params(), 0.5)
    losses = []
    for _ in range(5):
        for xb, yb in data.create_tuple_iterator():
            loss = mg.functional.cross_entropy(model(xb), yb)
            grads = mg.autograd.grad(loss, opt.parameters)
            opt(grads)
            losses.append(float(loss.item()))
    assert losses[-1] < losses[0]
