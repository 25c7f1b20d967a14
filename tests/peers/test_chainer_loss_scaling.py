"""The intents of Chainer's loss-scaling tests (``optimizer.loss_scaling(interval, scale)`` and
``set_loss_scale``), re-expressed for minigrad's GradScaler: a static scale divides the gradients
before the update rule; dynamic scaling starts at the float16 maximum, halves and skips the
update on inf/NaN, grows by ``2 ** (1 / interval)`` per clean step, and stays clamped to
[1, 65504]."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import amp
from minigrad.optimizer import SGD, Adam

FP16_MAX = 65504.0


def _chainer_dynamic(interval=1000, scale=None):
    """minigrad's spelling of ``optimizer.loss_scaling(interval, scale)``."""
    return amp.GradScaler(init_scale=FP16_MAX if scale is None else scale,
                          growth_factor=math.pow(2.0, 1.0 / interval), backoff_factor=0.5,
                          growth_interval=1, min_scale=1.0, max_scale=FP16_MAX)


def _iteration(scaler, p, opt, grad_value):
    scaler.scale((p * 1.0).sum()).backward()       # the gradients stand for this loss's
    p.grad = mg.tensor(np.full(p.shape, grad_value * scaler.get_scale(), np.float32))
    out = scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    return out


@pytest.mark.parametrize("opt_cls", [lambda p: SGD(p, lr=0.5), lambda p: Adam(p, lr=0.5)])
def test_static_scale_update_sees_unscaled_gradients(opt_cls):
    ref, p = mg.Parameter(np.ones(3, np.float32)), mg.Parameter(np.ones(3, np.float32))
    o_ref, o = opt_cls([ref]), opt_cls([p])
    scaler = amp.StaticGradScaler(2.0 ** 10)       # Chainer's set_loss_scale(1024)
    for g in (0.25, -1.5, 3.0):
        ref.grad = mg.tensor(np.full(3, g, np.float32))
        o_ref.step()
        o_ref.zero_grad()
        _iteration(scaler, p, o, g)
    np.testing.assert_array_equal(p.numpy(), ref.numpy())
    assert scaler.get_scale() == 2.0 ** 10


def test_dynamic_scaling_starts_at_fp16_max_and_halves_on_nan():
    p = mg.Parameter(np.ones(2, np.float32))
    opt = SGD([p], lr=0.1)
    scaler = _chainer_dynamic()
    assert scaler.get_scale() == FP16_MAX
    assert _iteration(scaler, p, opt, float("nan")) is None
    np.testing.assert_array_equal(p.numpy(), 1.0)            # the update was skipped
    assert scaler.get_scale() == FP16_MAX / 2


def test_dynamic_scaling_grows_gradually_and_is_clamped_above():
    p = mg.Parameter(np.ones(2, np.float32))
    opt = SGD([p], lr=0.0)
    interval = 4
    scaler = _chainer_dynamic(interval=interval, scale=2.0 ** 8)
    for _ in range(interval):
        _iteration(scaler, p, opt, 1.0)
    assert scaler.get_scale() == pytest.approx(2.0 ** 9, rel=1e-12)   # doubled per interval
    for _ in range(200):
        _iteration(scaler, p, opt, 1.0)
    assert scaler.get_scale() == FP16_MAX                         # never above fp16 max


def test_dynamic_scaling_is_clamped_below_at_one():
    p = mg.Parameter(np.ones(2, np.float32))
    opt = SGD([p], lr=0.1)
    scaler = _chainer_dynamic(scale=8.0)
    for _ in range(10):
        _iteration(scaler, p, opt, float("inf"))
    assert scaler.get_scale() == 1.0 and scaler.skipped_steps == 10
    np.testing.assert_array_equal(p.numpy(), 1.0)
    _iteration(scaler, p, opt, 1.0)                 # the first clean step applies
    np.testing.assert_allclose(p.numpy(), 0.9, rtol=1e-6)


def test_dynamic_trajectory_equals_chainer_rule():
    rng = np.random.default_rng(3)
    events = rng.random(60) < 0.2
    interval = 5
    p = mg.Parameter(np.ones(2, np.float32))
    opt = SGD([p], lr=0.0)
    scaler = _chainer_dynamic(interval=interval, scale=1024.0)
    ref = 1024.0
    mult = math.pow(2.0, 1.0 / interval)
    for bad in events:
        _iteration(scaler, p, opt, float("nan") if bad else 1.0)
        ref = max(ref * 0.5, 1.0) if bad else min(ref * mult, FP16_MAX)
        assert scaler.get_scale() == ref
