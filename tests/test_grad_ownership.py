"""Every leaf's ``.grad`` is its own writable array (PyTorch's AccumulateGrad never hands one
buffer to two leaves): an in-place change of one gradient, an unscale by one of two optimizers'
scaler steps, never reaches another parameter's gradient."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import amp
from minigrad.optimizer import SGD


def _pair():
    return (mg.Parameter(np.ones(2, np.float32)), mg.Parameter(np.ones(2, np.float32)))


def test_two_leaves_of_one_add_get_their_own_gradient_arrays():
    p0, p1 = _pair()
    ((p0 + p1) * mg.tensor([2.0, 3.0])).sum().backward()
    assert p0.grad is not p1.grad
    assert not np.shares_memory(p0.grad._data, p1.grad._data)
    for p in (p0, p1):
        p.grad.mul_(0.5)
    np.testing.assert_array_equal(p0.grad.numpy(), [1.0, 1.5])
    np.testing.assert_array_equal(p1.grad.numpy(), [1.0, 1.5])


def test_a_view_of_the_same_gradient_is_not_shared_either():
    p0 = mg.Parameter(np.ones(4, np.float32))
    p1 = mg.Parameter(np.ones((2, 2), np.float32))
    (p0 + p1.reshape(4)).sum().backward()
    assert not np.shares_memory(p0.grad._data, p1.grad._data)


def test_a_broadcast_gradient_is_writable():
    p = mg.Parameter(np.ones(3, np.float32))
    p.sum().backward()
    p.grad.mul_(0.5)
    np.testing.assert_array_equal(p.grad.numpy(), [0.5, 0.5, 0.5])


def test_a_leaf_root_does_not_keep_the_callers_seed():
    p = mg.Parameter(np.ones(3, np.float32))
    seed = mg.tensor([1.0, 2.0, 3.0])
    p.backward(seed)
    seed.mul_(10.0)
    np.testing.assert_array_equal(p.grad.numpy(), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("sync_free", [False, True])
def test_two_optimizers_with_one_scaler_each_get_the_unscaled_gradient(sync_free):
    # The first scaler.step unscales its parameter's gradient in place; the second parameter's
    # must still be scaled once, not twice.
    p0, p1 = _pair()
    o0, o1 = SGD([p0], lr=0.1), SGD([p1], lr=0.1)
    scaler = amp.GradScaler(init_scale=1024.0, sync_free=sync_free)
    loss = ((p0 + p1) * mg.tensor([2.0, 3.0])).sum()
    scaler.scale(loss).backward()
    scaler.step(o0)
    scaler.step(o1)
    scaler.update()
    for p in (p0, p1):
        np.testing.assert_allclose(p.numpy(), [1.0 - 0.2, 1.0 - 0.3], rtol=1e-6)
