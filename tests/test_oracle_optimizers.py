"""Every optimizer that ``torch.optim`` also has, against PyTorch on one gradient stream, over its
whole option space (each option at least once): SGD, Adam, AdamW, Adagrad, Adadelta, RMSprop,
Adamax, NAdam and RAdam.

The stream: a 2-D float32, a 0-d float32 and a 1-D float64 parameter, ``STEPS`` steps (long enough
for RAdam's rectified branch, which starts at step 6), gradients clipped before each step by total
2-norm, by the inf- or 1-norm, or by value (``clip_grad_norm_`` / ``clip_grad_value_``). The
``scenario`` configurations add, per optimizer: parameter groups with different hyperparameters,
``zero_grad()`` and a step where one parameter has ``grad=None`` (on the first step and mid-stream:
it must be left alone, its state untouched), ``zero_grad(set_to_none=False)`` and a step on zero
gradients, ``lr`` changed in ``param_groups`` mid-stream, and ``state_dict()`` /
``load_state_dict()`` into a fresh optimizer mid-stream (after the ``lr`` change, so the groups
carry it) which must continue identically. PyTorch's implementation switches (``foreach``,
``fused``, ``capturable`` where PyTorch's CPU takes them) are passed to both sides.

After every step the parameters (values and dtype) and every state entry, under PyTorch's state
names (and no other), must agree to 2e-6 relative, each element, or to two ulps of the tensor's
largest element: PyTorch's CPU kernels fuse multiply-adds (``add(alpha=)``, ``addcmul``,
``lerp``) and minigrad's bodies round each operation, so where a buffer cancels (RMSprop's
momentum: ``0.9 * buf + g / avg`` of two values near 10 giving 0.06) an ulp of the operands is
a large relative error of the result. Skips without PyTorch."""

import copy

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.utils as mg_utils

torch = pytest.importorskip("torch")

SHAPES = [((3, 4), np.float32), ((), np.float32), ((5,), np.float64)]
STEPS = 10
INF = float("inf")

# clip: ("norm", max_norm, norm_type) or ("value", clip_value) or None
NORM2 = ("norm", 1.5, 2.0)
# the scenario: groups (hyperparameters of the second group: the 0-d and the 1-D parameter),
# grad=None for the 0-d parameter on steps 0 and 3, zero gradients on step 4, lr halved after
# step 2, a state-dict round trip into a fresh optimizer after steps 1 and 5
SCENARIO = dict(none_at=(0, 3), zero_at=(4,), lr_at=(2,), reload_at=(1, 5))


def _c(name, kw, clip=NORM2, group=None, **events):
    return name, kw, dict(clip=clip, group=group, **events)


CASES = [
    _c("SGD", dict(lr=0.1)),
    _c("SGD", dict(lr=0.1, momentum=0.9), clip=("norm", 1.0, INF)),
    _c("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    _c("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
       clip=("norm", 3.0, 1.0)),
    _c("SGD", dict(lr=0.05, momentum=0.7, dampening=0.1, maximize=True), clip=("value", 0.8)),
    _c("SGD", dict(lr=0.1, maximize=True, weight_decay=0.05), clip=None),
    _c("SGD", dict(), clip=None),                                   # PyTorch's default lr
    _c("SGD", dict(lr=0.05, momentum=0.9, nesterov=True),
       group=dict(lr=0.2, momentum=0.5, weight_decay=0.1), **SCENARIO),
    _c("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2),
       group=dict(momentum=0.0, maximize=True), **SCENARIO),
    _c("SGD", dict(lr=0.05, momentum=0.9, foreach=True)),
    _c("SGD", dict(lr=0.05, momentum=0.9, fused=True, weight_decay=0.1)),

    _c("Adam", dict(lr=0.01)),
    _c("Adam", dict(lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.05)),
    _c("Adam", dict(lr=0.01, amsgrad=True), clip=("norm", 1.0, INF)),
    _c("Adam", dict(lr=0.01, amsgrad=True, maximize=True, weight_decay=0.1),
       clip=("value", 0.8)),
    _c("Adam", dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True),
       clip=("norm", 3.0, 1.0)),
    _c("Adam", dict(), clip=None),
    _c("Adam", dict(lr=0.01, betas=(0.9, 0.99)),
       group=dict(lr=0.03, betas=(0.5, 0.9), amsgrad=True, weight_decay=0.1), **SCENARIO),
    _c("Adam", dict(lr=0.01, foreach=True, amsgrad=True)),
    _c("Adam", dict(lr=0.01, fused=True, weight_decay=0.1)),

    _c("AdamW", dict(lr=0.01)),
    _c("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True), clip=("norm", 1.0, INF)),
    _c("AdamW", dict(lr=0.02, betas=(0.7, 0.9), eps=1e-5, maximize=True),
       clip=("value", 0.8)),
    _c("AdamW", dict(), clip=("norm", 3.0, 1.0)),
    _c("AdamW", dict(lr=0.01, weight_decay=0.1),
       group=dict(lr=0.03, weight_decay=0.5, amsgrad=True, maximize=True), **SCENARIO),
    _c("AdamW", dict(lr=0.01, foreach=False, fused=True)),

    _c("Adagrad", dict(lr=0.1)),
    _c("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.2,
                       eps=1e-6), clip=("norm", 1.0, INF)),
    _c("Adagrad", dict(lr=0.05, maximize=True), clip=("value", 0.8)),
    _c("Adagrad", dict(), clip=("norm", 3.0, 1.0)),
    _c("Adagrad", dict(lr=0.1, lr_decay=0.05),
       group=dict(lr=0.3, lr_decay=0.0, weight_decay=0.1, eps=1e-3), **SCENARIO),
    _c("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5),
       group=dict(initial_accumulator_value=0.1, maximize=True), **SCENARIO),
    _c("Adagrad", dict(lr=0.1, foreach=True)),
    _c("Adagrad", dict(lr=0.1, fused=True, weight_decay=0.1)),

    _c("Adadelta", dict()),
    _c("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1),
       clip=("norm", 1.0, INF)),
    _c("Adadelta", dict(lr=0.7, maximize=True), clip=("value", 0.8)),
    _c("Adadelta", dict(rho=0.95),
       group=dict(lr=0.3, rho=0.5, eps=1e-4, weight_decay=0.1), **SCENARIO),
    _c("Adadelta", dict(foreach=True, capturable=False), clip=("norm", 3.0, 1.0)),

    _c("RMSprop", dict()),
    _c("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1),
       clip=("norm", 1.0, INF)),
    _c("RMSprop", dict(lr=0.01, alpha=0.3, centered=True), clip=("norm", 3.0, 1.0)),
    _c("RMSprop", dict(lr=0.01, momentum=0.5, eps=1e-4, maximize=True), clip=("value", 0.8)),
    _c("RMSprop", dict(lr=0.01),
       group=dict(lr=0.02, momentum=0.3, centered=True, alpha=0.9, maximize=True), **SCENARIO),
    _c("RMSprop", dict(lr=0.01, foreach=True, capturable=False, momentum=0.2)),

    _c("Adamax", dict()),
    _c("Adamax", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-4, weight_decay=0.1),
       clip=("norm", 1.0, INF)),
    _c("Adamax", dict(lr=0.01, maximize=True), clip=("value", 0.8)),
    _c("Adamax", dict(lr=0.01),
       group=dict(lr=0.03, betas=(0.5, 0.99), weight_decay=0.1), **SCENARIO),
    _c("Adamax", dict(lr=0.01, foreach=True), clip=("norm", 3.0, 1.0)),

    _c("NAdam", dict()),
    _c("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01), clip=("norm", 1.0, INF)),
    _c("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, eps=1e-5)),
    _c("NAdam", dict(lr=0.01, betas=(0.8, 0.9), maximize=True), clip=("value", 0.8)),
    _c("NAdam", dict(lr=0.01),
       group=dict(lr=0.02, momentum_decay=0.02, weight_decay=0.1,
                  decoupled_weight_decay=True), **SCENARIO),
    _c("NAdam", dict(lr=0.01, foreach=True), clip=("norm", 3.0, 1.0)),

    _c("RAdam", dict()),
    _c("RAdam", dict(lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1),
       clip=("norm", 1.0, INF)),
    _c("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    _c("RAdam", dict(lr=0.01, maximize=True), clip=("value", 0.8)),
    _c("RAdam", dict(lr=0.01),
       group=dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1,
                  decoupled_weight_decay=True, maximize=True), **SCENARIO),
    _c("RAdam", dict(lr=0.01, foreach=True), clip=("norm", 3.0, 1.0)),
]
IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]


def _stream(steps=STEPS):
    rng = np.random.default_rng(7)
    init = [rng.standard_normal(s).astype(d) for s, d in SHAPES]
    grads = [[(rng.standard_normal(s) * 3).astype(d) for s, d in SHAPES] for _ in range(steps)]
    return init, grads


def _make(lib, name, params, kw, group):
    groups = params if group is None else [{"params": params[:1]},
                                             {"params": params[1:], **group}]
    opt = getattr(lib.optim, name)(groups, **kw)
    if lib is torch and name == "Adagrad" and "initial_accumulator_value" in (group or {}):
        # Deliberate: PyTorch's __init__ fills every sum with the constructor's value, ignoring
        # the group's (test_adagrad_group_initial_accumulator_value); give it minigrad's start
        for p in params[1:]:
            opt.state[p]["sum"].fill_(group["initial_accumulator_value"])
    return opt


def _clip(lib_utils, params, clip):
    if clip is None:
        return None
    if clip[0] == "value":
        return lib_utils.clip_grad_value_(params, clip[1])
    return lib_utils.clip_grad_norm_(params, clip[1], norm_type=clip[2])


def _np(value):
    value = value.detach().numpy() if hasattr(value, "detach") else \
        value.numpy() if hasattr(value, "numpy") else value
    return np.asarray(value, np.float64).reshape(-1)


def _close(mine, ref, msg):
    """Element-wise 2e-6 relative, or two ulps of the largest element (see the docstring)."""
    eps = torch.finfo(ref.dtype).eps if ref.dtype.is_floating_point else 0.0
    ref = _np(ref)
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    np.testing.assert_allclose(_np(mine), ref, rtol=2e-6, atol=max(1e-7, 2 * eps * scale),
                               err_msg=msg)


def _compare(opt, topt, ours, theirs, where):
    for i, (p, t) in enumerate(zip(ours, theirs)):
        assert p.dtype == str(t.dtype).replace("torch.", ""), (where, i)
        _close(p, t, f"{where}: parameter {i}")
        mine, ref = opt.state.get(p, {}), topt.state.get(t, {})
        # PyTorch keeps momentum_buffer=None for SGD without momentum: an absent entry
        assert {k for k, v in mine.items() if v is not None} == \
            {k for k, v in ref.items() if v is not None}, f"{where}: state names of parameter {i}"
        for key, value in ref.items():
            if value is not None:
                _close(mine[key], value, f"{where}: state {key!r} of parameter {i}")


@pytest.mark.parametrize("name,kw,events", CASES, ids=IDS)
def test_optimizer_follows_pytorch(name, kw, events):
    init, grads = _stream()
    ours = [mg.Parameter(a.copy()) for a in init]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in init]
    group = events["group"]
    opt, topt = _make(mg, name, ours, kw, group), _make(torch, name, theirs, kw, group)
    for step, gs in enumerate(grads):
        if step in events.get("zero_at", ()):
            opt.zero_grad(set_to_none=False)
            topt.zero_grad(set_to_none=False)
        else:
            opt.zero_grad()
            topt.zero_grad()
            for i, (p, t, g) in enumerate(zip(ours, theirs, gs)):
                if i == 1 and step in events.get("none_at", ()):
                    continue                      # this parameter sits the step out
                p.grad = mg.tensor(g.copy())
                t.grad = torch.tensor(g.copy())
        n1, n2 = _clip(mg_utils, ours, events["clip"]), _clip(torch.nn.utils, theirs,
                                                                events["clip"])
        if n2 is not None:
            assert n1.dtype == str(n2.dtype).replace("torch.", "")
            np.testing.assert_allclose(float(n1.item()), float(n2), rtol=1e-6)
        for i, (p, t) in enumerate(zip(ours, theirs)):  # the clipped gradients themselves
            assert (p.grad is None) == (t.grad is None)
            if t.grad is not None:
                assert isinstance(p.grad._data, np.ndarray)   # 0-d too: an array, no scalar
                _close(p.grad, t.grad, f"step {step}: clipped gradient {i}")
        opt.step()
        topt.step()
        _compare(opt, topt, ours, theirs, f"after step {step}")
        if step in events.get("lr_at", ()):
            for g, tg in zip(opt.param_groups, topt.param_groups):
                g["lr"] *= 0.5
                tg["lr"] *= 0.5
        if step in events.get("reload_at", ()):
            saved, tsaved = copy.deepcopy(opt.state_dict()), copy.deepcopy(topt.state_dict())
            opt = _make(mg, name, ours, kw, group)
            topt = _make(torch, name, theirs, kw, group)
            opt.load_state_dict(saved)
            topt.load_state_dict(tsaved)
            _compare(opt, topt, ours, theirs, f"reloaded after step {step}")


def test_adagrad_group_initial_accumulator_value():
    """A deliberate difference: a parameter group's own ``initial_accumulator_value`` starts its
    sums (PyTorch documents group options so, but its ``__init__`` fills every sum with the
    constructor's value); without group values the start is PyTorch's."""
    a, b = mg.Parameter(np.ones(2, np.float32)), mg.Parameter(np.ones(3, np.float32))
    ta, tb = (torch.nn.Parameter(torch.ones(n)) for n in (2, 3))
    opt = mg.optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 0.1}],
                           initial_accumulator_value=0.5)
    topt = torch.optim.Adagrad([{"params": [ta]},
                                {"params": [tb], "initial_accumulator_value": 0.1}],
                               initial_accumulator_value=0.5)
    assert opt.state[a]["sum"].tolist() == topt.state[ta]["sum"].tolist() == [0.5] * 2
    assert opt.state[b]["sum"].tolist() == [np.float32(0.1)] * 3
    assert topt.state[tb]["sum"].tolist() == [0.5] * 3          # PyTorch ignores the group's


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "RMSprop",
                                  "Adamax", "NAdam", "RAdam"])
def test_implementation_switches(name):
    """PyTorch's ``foreach``/``fused``/``capturable`` are accepted where PyTorch takes them and
    change nothing; its refusals are kept (``fused`` with ``foreach``), and
    ``differentiable=True`` is refused (no graph through ``step()``)."""
    import inspect

    cls = getattr(mg.optim, name)
    params = set(inspect.signature(getattr(torch.optim, name).__init__).parameters)
    ours = set(inspect.signature(cls.__init__).parameters)
    assert params - ours == set(), f"{name} lacks PyTorch's {sorted(params - ours)}"
    p = mg.Parameter(np.ones(2, np.float32))
    cls([p], differentiable=False, foreach=False)
    if "fused" in params:
        with pytest.raises(RuntimeError, match="fused"):
            cls([p], fused=True, foreach=True)
    with pytest.raises(NotImplementedError, match="differentiable"):
        cls([p], differentiable=True)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9)),
                                     ("Adam", dict(lr=0.05, amsgrad=True)),
                                     ("RMSprop", dict(lr=0.01, centered=True)),
                                     ("RAdam", dict(lr=0.05))])
def test_step_with_closure(name, kw):
    """``step(closure)``: the closure recomputes the loss and the gradients (with gradients
    enabled, also under ``no_grad``), the step uses them and returns the loss, as PyTorch."""
    init, _ = _stream()
    rng = np.random.default_rng(3)
    coef = [rng.uniform(0.5, 2.0, s).astype(d) for s, d in SHAPES]
    ours = [mg.Parameter(a.copy()) for a in init]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in init]
    opt, topt = _make(mg, name, ours, kw, None), _make(torch, name, theirs, kw, None)

    def closure(lib, o, params):
        def run():
            o.zero_grad()
            loss = sum((p * p * lib.tensor(c)).sum() for p, c in zip(params, coef))
            loss.backward()
            return loss
        return run

    for step in range(7):
        with mg.no_grad(), torch.no_grad():
            l1, l2 = opt.step(closure(mg, opt, ours)), topt.step(closure(torch, topt, theirs))
        np.testing.assert_allclose(float(l1.item()), float(l2.item()), rtol=2e-6)
        _compare(opt, topt, ours, theirs, f"after closure step {step}")
