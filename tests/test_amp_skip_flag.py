"""A sync-free ``GradScaler.unscale(tensors)`` (MegEngine API) cannot read its found-inf flag and
never sees the optimizer, so the flag travels on the gradients it checked and the next
``opt.step()`` over them skips on it. The flag is local to those gradient objects: consumed by the
step (skipped or not), not carried by a later gradient, and freed with the gradient."""

import gc
import weakref

import numpy as np
import pytest

import minigrad as mg
from minigrad import amp
from minigrad.optimizer import SGD, Adam
from minigrad.optimizer import optimizer as optimizer_module

INF, NAN = float("inf"), float("nan")
OPTS = [lambda ps: Adam(ps, lr=0.1), lambda ps: SGD(ps, lr=0.1, momentum=0.9)]


def _setup(make_opt):
    w = mg.Parameter(np.arange(4, dtype=np.float32).reshape(2, 2))
    b = mg.Parameter(np.ones(2, np.float32))
    opt = make_opt([w, b])
    scaler = amp.GradScaler(init_scale=4.0, sync_free=True, growth_interval=1)
    return [w, b], opt, scaler


def _unscale(scaler, params, values):
    """One MegEngine-style check: a scaled loss, gradients (scaled by 4), ``scaler.unscale``."""
    scaler.scale((params[1] * 0.0).sum())
    for p, v in zip(params, values):
        p.grad = mg.tensor(np.full(p.shape, v, np.float32))
    scaler.unscale(params)


def _snapshot(params, opt):
    state = [(k, np.array(v, copy=True)) for p in params
             for k, v in sorted(opt.state.get(p, {}).items())]
    return [p.numpy().copy() for p in params], state


def _same(a, b):
    assert all(x.tobytes() == y.tobytes() for x, y in zip(a[0], b[0]))
    assert [k for k, _ in a[1]] == [k for k, _ in b[1]]
    assert all(x.tobytes() == y.tobytes() for (_, x), (_, y) in zip(a[1], b[1]))


def _flag(g):
    return getattr(g, "_found_inf", None)


@pytest.mark.parametrize("make_opt", OPTS)
@pytest.mark.parametrize("bad", [INF, NAN])
def test_step_after_sync_free_unscale_of_bad_grads_changes_nothing(make_opt, bad):
    params, opt, scaler = _setup(make_opt)
    _unscale(scaler, params, [4.0, 8.0])
    opt.step()                                   # a clean step first: the state exists
    scaler.update()
    before = _snapshot(params, opt)
    _unscale(scaler, params, [4.0, bad])         # one gradient of one parameter is bad
    assert all(p.grad is not None for p in params)  # sync-free keeps them (no host read)
    assert opt.step() is opt
    _same(before, _snapshot(params, opt))
    assert all(_flag(p.grad) is None for p in params)   # consumed by the step
    scaler.update()
    assert scaler.last_step_skipped and scaler.get_scale() == 4.0


@pytest.mark.parametrize("make_opt", OPTS)
def test_no_stale_flag_after_a_step(make_opt):
    params, opt, scaler = _setup(make_opt)
    _unscale(scaler, params, [INF, 4.0])
    before = _snapshot(params, opt)
    opt.step()                                   # skipped, and the flag is gone with it
    _same(before, _snapshot(params, opt))
    params[0].grad.data[...] = 1.0               # the same gradient objects, repaired
    opt.step()                                   # no flag left: this step applies
    assert not np.array_equal(params[0].numpy(), before[0][0])
    scaler.update()

    clean = _snapshot(params, opt)
    _unscale(scaler, params, [4.0, 4.0])         # a clean check: flag 0
    opt.step()
    assert all(_flag(p.grad) is None for p in params)
    after = _snapshot(params, opt)
    assert not np.array_equal(after[0][0], clean[0][0])
    opt.step()                                   # again on the same gradients: applies again
    assert not np.array_equal(params[0].numpy(), after[0][0])


def test_flag_does_not_pass_to_a_new_gradient():
    params, opt, scaler = _setup(OPTS[0])
    _unscale(scaler, params, [INF, 4.0])
    scaler.update()                              # the user drops this iteration without a step
    opt.clear_grad()
    before = _snapshot(params, opt)
    for p in params:                             # a fresh gradient, never checked by a scaler
        p.grad = mg.tensor(np.ones(p.shape, np.float32))
    opt.step()
    assert not np.array_equal(params[0].numpy(), before[0][0])


def test_explicit_found_inf_and_a_carried_flag_both_skip():
    params, opt, scaler = _setup(OPTS[1])
    _unscale(scaler, params, [INF, 4.0])
    before = _snapshot(params, opt)
    opt.step(found_inf=np.zeros(1, np.int32))    # the carried flag still says inf
    _same(before, _snapshot(params, opt))
    scaler.update()
    _unscale(scaler, params, [4.0, 4.0])
    opt.step(found_inf=np.ones(1, np.int32))     # the explicit flag says inf
    _same(before, _snapshot(params, opt))


def test_megengine_backward_then_step_skips_on_overflowing_grads():
    w = mg.Parameter(np.ones(3, np.float32))
    opt = Adam([w], lr=0.1)
    gm = mg.autodiff.GradManager().attach([w])
    scaler = amp.GradScaler(init_scale=2.0 ** 4, sync_free=True, max_nonfinite_losses=0)
    with gm:
        scaler.backward(gm, (w * 2.0).sum())
    opt.step().clear_grad()
    before = _snapshot([w], opt)
    with gm:               # a finite loss (9e8) whose scaled gradient overflows float32
        scaler.backward(gm, (w * 1e-30).sum() * 3e38)
    assert w.grad is not None
    opt.step().clear_grad()
    _same(before, _snapshot([w], opt))
    assert scaler.last_step_skipped and scaler.get_scale() == 8.0


def test_nothing_outlives_the_gradients():
    params, opt, scaler = _setup(OPTS[0])
    _unscale(scaler, params, [INF, 4.0])
    grad, flag = weakref.ref(params[0].grad), weakref.ref(_flag(params[0].grad))
    opt.step()
    scaler.update()
    scaler.history                                # reads (and drops) the pending telemetry
    opt.clear_grad()
    gc.collect()
    assert grad() is None and flag() is None
    assert not hasattr(optimizer_module, "_marked")   # no module-global registry
