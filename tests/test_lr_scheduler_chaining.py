"""``minigrad.optim.lr_scheduler`` against ``torch.optim.lr_scheduler`` when schedulers compound:
every scheduler alone, stacked pairs stepped on one optimizer (the chainable rules multiply, the
closed forms overwrite), ``ChainedScheduler``, ``CyclicLR`` in every mode, ``SequentialLR``,
``step(epoch)``, resuming and ``state_dict`` round trips mid-run. Learning rates and momenta
(``momentum`` / ``betas[0]``) match to 1e-12 relative at every step."""

import copy
import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad.optim import lr_scheduler as L

torch = pytest.importorskip("torch")
import torch.optim.lr_scheduler as TL  # noqa: E402

# PyTorch's own order warning, from inside its SequentialLR when a ChainedScheduler starts it
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")
STEPS = 30


def _pair(opt="SGD"):
    """The same two-group optimizer in minigrad and PyTorch (lr 0.1 and 0.05)."""
    kw = {"momentum": 0.9} if opt == "SGD" else {}
    ours = getattr(mg.optim, opt)([{"params": [mg.Parameter([1.0])]},
                                   {"params": [mg.Parameter([1.0])], "lr": 0.05}], lr=0.1, **kw)
    theirs = getattr(torch.optim, opt)([{"params": [torch.nn.Parameter(torch.ones(1))]},
                                        {"params": [torch.nn.Parameter(torch.ones(1))],
                                         "lr": 0.05}], lr=0.1, **kw)
    return ours, theirs


def _hyper(opt):
    """Each group's learning rate and momentum (SGD's ``momentum``, Adam's ``betas[0]``)."""
    return np.array([(g["lr"], g["momentum"] if "momentum" in g else g["betas"][0])
                     for g in opt.param_groups], dtype=float)


def _same(ours, theirs, s=None, ts=None):
    np.testing.assert_allclose(_hyper(ours), _hyper(theirs), rtol=1e-12, atol=0)
    if s is not None:
        np.testing.assert_allclose(s.get_last_lr(), ts.get_last_lr(), rtol=1e-12, atol=0)


def _step_all(opt, schedulers):
    opt.step()  # no gradients: nothing moves, but PyTorch wants it before the schedulers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's step(epoch) deprecation
        for sch in schedulers:
            sch.step()


def _follow(make, opt="SGD", steps=STEPS):
    """Build ``make(module, optimizer)`` (a list of schedulers, stepped in order) on both sides
    and compare the rates and momenta after construction and after every step."""
    ours, theirs = _pair(opt)
    s, ts = make(L, ours), make(TL, theirs)
    _same(ours, theirs, s[-1], ts[-1])
    for _ in range(steps):
        _step_all(ours, s)
        _step_all(theirs, ts)
        _same(ours, theirs, s[-1], ts[-1])
    return ours, theirs, s, ts


ALONE = {
    "StepLR": lambda M, o: M.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda M, o: M.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "ExponentialLR": lambda M, o: M.ExponentialLR(o, gamma=0.9),
    "ConstantLR": lambda M, o: M.ConstantLR(o, factor=0.5, total_iters=4),
    "LinearLR": lambda M, o: M.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=8),
    "LinearLR-down": lambda M, o: M.LinearLR(o, start_factor=1.0, end_factor=0.1,
                                             total_iters=10),
    "PolynomialLR": lambda M, o: M.PolynomialLR(o, total_iters=10, power=2.0),
    "CosineAnnealingLR": lambda M, o: M.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingLR-0": lambda M, o: M.CosineAnnealingLR(o, T_max=5),
    "MultiplicativeLR": lambda M, o: M.MultiplicativeLR(o, [lambda e: 0.95, lambda e: 1.01]),
    "LambdaLR": lambda M, o: M.LambdaLR(o, lambda e: 1.0 / (e + 1)),
    "WarmRestarts": lambda M, o: M.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                               eta_min=0.01),
    "OneCycleLR": lambda M, o: M.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=STEPS),
    "CyclicLR": lambda M, o: M.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
}


@pytest.mark.parametrize("name", ALONE)
def test_each_scheduler_alone_follows_pytorch(name):
    _follow(lambda M, o: [ALONE[name](M, o)])


STACKS = {
    "warm-up+exponential": lambda M, o: [M.LinearLR(o, 0.1, 1.0, 5), M.ExponentialLR(o, 0.9)],
    "exponential+warm-up": lambda M, o: [M.ExponentialLR(o, 0.9), M.LinearLR(o, 0.1, 1.0, 5)],
    "step+multistep": lambda M, o: [M.StepLR(o, 3, 0.5), M.MultiStepLR(o, [4, 9, 9], 0.3)],
    "constant+cosine": lambda M, o: [M.ConstantLR(o, 0.5, 4), M.CosineAnnealingLR(o, 7, 0.001)],
    "cosine+constant": lambda M, o: [M.CosineAnnealingLR(o, 7, 0.001), M.ConstantLR(o, 0.5, 4)],
    "lambda+step": lambda M, o: [M.LambdaLR(o, lambda e: 0.9 ** e), M.StepLR(o, 4, 0.5)],
    "step+lambda": lambda M, o: [M.StepLR(o, 4, 0.5), M.LambdaLR(o, lambda e: 0.9 ** e)],
    "polynomial+multiplicative": lambda M, o: [M.PolynomialLR(o, 10, 2.0),
                                               M.MultiplicativeLR(o, lambda e: 0.97)],
    "linear+polynomial": lambda M, o: [M.LinearLR(o, 0.5, 1.0, 4), M.PolynomialLR(o, 20, 0.5)],
    "exponential+cyclic": lambda M, o: [M.ExponentialLR(o, 0.9),
                                        M.CyclicLR(o, 0.01, 0.1, step_size_up=3)],
    "warm-restarts+step": lambda M, o: [M.CosineAnnealingWarmRestarts(o, T_0=4),
                                        M.StepLR(o, 3, 0.5)],
    "three": lambda M, o: [M.LinearLR(o, 0.2, 1.0, 6), M.StepLR(o, 5, 0.7),
                           M.CosineAnnealingLR(o, 12, 0.0)],
}


@pytest.mark.parametrize("name", STACKS)
def test_stacked_schedulers_compound_as_in_pytorch(name):
    _follow(STACKS[name])


def test_warm_up_and_decay_multiply():
    ours, _, _, _ = _follow(STACKS["warm-up+exponential"], steps=3)
    # LinearLR's factor at step 3 (0.1 + 0.9 * 3 / 5) times ExponentialLR's 0.9 ** 3
    assert ours.param_groups[0]["lr"] == pytest.approx(0.1 * 0.64 * 0.9 ** 3, rel=1e-12)


CHAINS = {
    "constant-exponential-cosine": lambda M, o: [M.ChainedScheduler(
        [M.ConstantLR(o, 0.1, 3), M.ExponentialLR(o, 0.9), M.CosineAnnealingLR(o, 6)])],
    "warm-up-step-multiplicative": lambda M, o: [M.ChainedScheduler(
        [M.LinearLR(o, 0.25, 1.0, 4), M.StepLR(o, 5, 0.5),
         M.MultiplicativeLR(o, lambda e: 0.99)], optimizer=o)],
    "one": lambda M, o: [M.ChainedScheduler([M.PolynomialLR(o, 8, 3.0)])],
}


@pytest.mark.parametrize("name", CHAINS)
def test_chained_scheduler_follows_pytorch(name):
    _follow(CHAINS[name])


CYCLIC = {
    "triangular": dict(base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=3),
    "triangular2": dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3,
                        mode="triangular2", base_momentum=[0.8, 0.7], max_momentum=0.95),
    "exp_range": dict(base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range", gamma=0.95),
    "scale_fn-cycle": dict(base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=5,
                           scale_fn=lambda x: 1.0 / x),
    "scale_fn-iterations": dict(base_lr=0.01, max_lr=0.1, step_size_up=3,
                                scale_fn=lambda x: 0.97 ** x, scale_mode="iterations"),
    "no-momentum": dict(base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=False),
}


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
@pytest.mark.parametrize("name", CYCLIC)
def test_cyclic_lr_follows_pytorch(name, opt):
    _follow(lambda M, o: [M.CyclicLR(o, **CYCLIC[name])], opt=opt)


@pytest.mark.parametrize("three_phase", [False, True])
def test_one_cycle_moves_adams_beta1(three_phase):
    _follow(lambda M, o: [M.OneCycleLR(o, 0.5, total_steps=STEPS, three_phase=three_phase,
                                       anneal_strategy="linear" if three_phase else "cos")],
            opt="Adam")


def test_cyclic_lr_refuses_what_pytorch_refuses():
    ours, _ = _pair()
    with pytest.raises(ValueError, match="mode"):
        L.CyclicLR(ours, 0.01, 0.1, mode="sawtooth")
    with pytest.raises(ValueError, match="momentum"):
        L.CyclicLR(mg.optim.Adagrad([mg.Parameter([1.0])]), 0.01, 0.1)
    L.CyclicLR(mg.optim.Adagrad([mg.Parameter([1.0])]), 0.01, 0.1, cycle_momentum=False)


SEQUENCES = {
    "warm-up then cosine": lambda M, o: [M.SequentialLR(
        o, [M.LinearLR(o, 0.1, 1.0, 5), M.CosineAnnealingLR(o, 20)], milestones=[5])],
    "three": lambda M, o: [M.SequentialLR(
        o, [M.ConstantLR(o, 0.1, 2), M.ExponentialLR(o, 0.9), M.StepLR(o, 3)], [2, 10])],
    "chained inside": lambda M, o: [M.SequentialLR(
        o, [M.ChainedScheduler([M.ExponentialLR(o, 0.9), M.StepLR(o, 2)]),
            M.LinearLR(o, 0.5, 1.0, 3)], [5])],
    "with a stacked scheduler": lambda M, o: [
        M.SequentialLR(o, [M.LinearLR(o, 0.1, 1.0, 4), M.ExponentialLR(o, 0.8)], [4]),
        M.StepLR(o, 6, 0.5)],
}


@pytest.mark.parametrize("name", SEQUENCES)
def test_sequential_lr_follows_pytorch(name):
    _follow(SEQUENCES[name])


CHAINABLE = ["StepLR", "MultiStepLR", "ExponentialLR", "ConstantLR", "LinearLR",
             "PolynomialLR", "CosineAnnealingLR", "LambdaLR", "CyclicLR"]


@pytest.mark.parametrize("name", CHAINABLE)
def test_step_with_an_epoch_uses_pytorchs_closed_form(name):
    ours, theirs = _pair()
    s, ts = ALONE[name](L, ours), ALONE[name](TL, theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in [3, 4, 5, 12, 0, 7, 8, 9, 20]:
            s.step(epoch)
            ts.step(epoch)
            _same(ours, theirs, s, ts)
            s.step()  # and the recursive rule continues from there, as PyTorch's
            ts.step()
            _same(ours, theirs, s, ts)


@pytest.mark.parametrize("name", ["StepLR", "ExponentialLR", "LinearLR", "CosineAnnealingLR",
                                  "PolynomialLR", "MultiplicativeLR", "ConstantLR"])
def test_resuming_with_last_epoch_follows_pytorch(name):
    ours, theirs = _pair()
    for opt in (ours, theirs):
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
            g["lr"] *= 0.5  # a rate part-way through, from a checkpoint
    make = {"StepLR": lambda M, o: M.StepLR(o, 4, 0.5, last_epoch=3),
            "ExponentialLR": lambda M, o: M.ExponentialLR(o, 0.9, last_epoch=5),
            "LinearLR": lambda M, o: M.LinearLR(o, 0.25, 1.0, 8, last_epoch=2),
            "CosineAnnealingLR": lambda M, o: M.CosineAnnealingLR(o, 9, 0.001, last_epoch=4),
            "PolynomialLR": lambda M, o: M.PolynomialLR(o, 12, 2.0, last_epoch=3),
            "MultiplicativeLR": lambda M, o: M.MultiplicativeLR(o, lambda e: 0.9, last_epoch=2),
            "ConstantLR": lambda M, o: M.ConstantLR(o, 0.5, 6, last_epoch=3)}[name]
    s, ts = make(L, ours), make(TL, theirs)
    _same(ours, theirs, s, ts)
    for _ in range(15):
        _step_all(ours, [s])
        _step_all(theirs, [ts])
        _same(ours, theirs, s, ts)


RESUMED = {
    "stack": STACKS["warm-up+exponential"],
    "three": STACKS["three"],
    "chained": CHAINS["warm-up-step-multiplicative"],
    "sequential": SEQUENCES["chained inside"],
    "cyclic": lambda M, o: [M.CyclicLR(o, **CYCLIC["scale_fn-cycle"])],
    "one-cycle": lambda M, o: [M.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=STEPS)],
    "warm-restarts": lambda M, o: [M.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2)],
}


@pytest.mark.parametrize("name", RESUMED)
def test_state_dict_round_trip_mid_run(name):
    """Stop after 11 steps, load the schedulers' states into fresh ones on a fresh optimizer and
    go on: the resumed run continues PyTorch's uninterrupted one."""
    make = RESUMED[name]
    ours, theirs, s, ts = _follow(make, steps=11)
    states = copy.deepcopy([sch.state_dict() for sch in s])
    fresh, _ = _pair()
    s2 = make(L, fresh)
    for sch, state in zip(s2, states):
        sch.load_state_dict(state)
    np.testing.assert_allclose([g["lr"] for g in fresh.param_groups],
                               [g["lr"] for g in theirs.param_groups], rtol=1e-12, atol=0)
    for _ in range(STEPS - 11):
        _step_all(fresh, s2)
        _step_all(theirs, ts)
        _same(fresh, theirs, s2[-1], ts[-1])


def test_state_dicts_are_plain_data_and_keep_the_functions():
    ours, _ = _pair()
    fn = lambda x: 1.0 / x  # noqa: E731
    s = L.CyclicLR(ours, 0.01, 0.1, step_size_up=2, scale_fn=fn)
    chain = L.ChainedScheduler([L.StepLR(ours, 2), L.MultiplicativeLR(ours, lambda e: 0.9)])
    for state in (s.state_dict(), chain.state_dict()):
        assert not any(callable(v) for v in state.values())
    s.load_state_dict(s.state_dict())
    assert s._scale_fn_custom is fn
    assert len(chain.state_dict()["_schedulers"]) == 2


def test_get_lr_outside_step_warns_as_pytorch():
    ours, _ = _pair()
    s = L.StepLR(ours, 1, gamma=0.5)
    with pytest.warns(UserWarning, match="get_last_lr"):
        s.get_lr()
    assert s.get_last_lr() == [0.1, 0.05]


def test_chained_and_sequential_refuse_foreign_schedulers():
    ours, _ = _pair()
    other, _ = _pair()
    with pytest.raises(ValueError, match="another optimizer"):
        L.ChainedScheduler([L.StepLR(ours, 2), L.StepLR(other, 2)])
    with pytest.raises(ValueError, match="another optimizer"):
        L.ChainedScheduler([L.StepLR(ours, 2)], optimizer=other)
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        L.ChainedScheduler([L.StepLR(ours, 2), L.ReduceLROnPlateau(ours)])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        L.SequentialLR(ours, [L.StepLR(ours, 2), L.ReduceLROnPlateau(ours)], [3])
    with pytest.raises(ValueError, match="at least one"):
        L.ChainedScheduler([], optimizer=ours)


def test_new_names_are_exported():
    import minigrad.optimizer.lr_scheduler as direct

    assert direct is L
    for name in ("ChainedScheduler", "CyclicLR"):
        assert name in L.__all__ and getattr(L, name) is getattr(direct, name)
