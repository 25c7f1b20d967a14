"""The inf/NaN storm: 1,000 seeded random training sequences (tiny model, SGD/Adam/AdamW,
GradScaler, optional float16 autocast) with inf/NaN injected into inputs, targets, losses or
gradients. Every step that saw a non-finite value is skipped and leaves the parameters and the
optimizer state bit-identical (invariant 9); every other step leaves them finite. A skipped
step halves the scale only when the gradients overflowed under a finite loss.

Only the scaler's public API is used (scale / step / update / get_scale)."""

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.functional as F
from minigrad import amp
from minigrad.optimizer import SGD, Adam, AdamW

INJECTIONS = ("none", "none", "input_inf", "input_nan", "target_inf", "loss_nan", "loss_inf",
              "grad_inf", "grad_nan")
OPTIMIZERS = {
    "sgd": lambda p: SGD(p, lr=0.05),
    "sgd_momentum": lambda p: SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4),
    "adam": lambda p: Adam(p, lr=0.01),
    "adamw": lambda p: AdamW(p, lr=0.01, weight_decay=0.01),
}


def _snapshot(params, opt):
    state = []
    for p in params:
        for k, v in sorted(opt.state.get(p, {}).items()):
            v = v.numpy() if isinstance(v, mg.Tensor) else v
            state.append((k, np.array(v, copy=True) if hasattr(v, "shape") else v))
    return [p.numpy().copy() for p in params], state


def _bit_identical(a, b):
    (pa, sa), (pb, sb) = a, b
    assert all(x.tobytes() == y.tobytes() for x, y in zip(pa, pb)), "parameters changed"
    assert [k for k, _ in sa] == [k for k, _ in sb], "optimizer state keys changed"
    for (k, x), (_, y) in zip(sa, sb):
        same = x.tobytes() == y.tobytes() if hasattr(x, "tobytes") else x == y
        assert same, f"optimizer state {k!r} changed"


def _poison(arr, value, pos):
    arr = arr.copy()
    arr.reshape(-1)[pos % arr.size] = value
    return arr


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the injected infs overflow on purpose
@settings(max_examples=1000, deadline=None, derandomize=True, database=None)
@given(opt_name=st.sampled_from(sorted(OPTIMIZERS)),
       autocast=st.booleans(),
       init_scale=st.sampled_from([1.0, 2.0 ** 8, 2.0 ** 16]),
       seed=st.integers(0, 2 ** 16),
       steps=st.lists(st.tuples(st.sampled_from(INJECTIONS), st.integers(0, 63)),
                      min_size=1, max_size=6))
def test_skipped_steps_leave_params_and_optimizer_state_bit_identical(
        opt_name, autocast, init_scale, seed, steps):
    rng = np.random.default_rng(seed)
    params = [mg.Parameter(rng.standard_normal((3, 4)).astype(np.float32) * 0.5),
              mg.Parameter(np.zeros(3, np.float32))]
    opt = OPTIMIZERS[opt_name](params)
    scaler = amp.GradScaler(init_scale=init_scale, growth_interval=2)
    for kind, pos in steps:
        x = rng.standard_normal((8, 4)).astype(np.float32)
        y = rng.standard_normal((8, 3)).astype(np.float32)
        value = np.nan if kind.endswith("nan") else np.inf
        if kind.startswith("input"):
            x = _poison(x, value, pos)
        if kind == "target_inf":
            y = _poison(y, value, pos)
        opt.zero_grad()
        with amp.autocast(enabled=autocast):
            out = F.linear(mg.tensor(x), params[0], params[1])
        loss = F.mse_loss(out.astype(mg.float32), mg.tensor(y))
        if kind.startswith("loss"):
            loss = loss * float(value)
        scaler.scale(loss).backward()
        if kind.startswith("grad"):
            p = params[pos % 2]
            p.grad = mg.tensor(_poison(p.grad.numpy(), value, pos))
        before = _snapshot(params, opt)
        scale = scaler.get_scale()
        result = scaler.step(opt)
        scaler.update()
        skipped = result is None
        event("skipped" if skipped else "stepped")
        if kind != "none":
            assert skipped, f"{kind} at {pos} was not skipped"
        if skipped:
            _bit_identical(before, _snapshot(params, opt))
            # A non-finite loss is a model problem, not a scale problem: the scale is kept.
            # Overflowing gradients under a finite loss halve it.
            reason = scaler.get_history()[-1]["reason"]
            if kind.startswith(("input", "target", "loss")):
                assert reason == "nonfinite_loss"
            elif kind.startswith("grad"):
                assert reason == "grad_overflow"
            expected = scale if reason == "nonfinite_loss" else scale * 0.5
            assert scaler.get_scale() == expected
        else:
            assert all(np.isfinite(p.numpy()).all() for p in params)
