"""Where PyTorch computes the right answer, minigrad must not raise: a backward version-checks
only the saved tensors it reads (a product needs each factor only for the other's gradient),
kl_div takes a broadcast target, attention takes mixed dtypes inside autocast."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F


def test_a_first_layers_weight_may_change_before_backward():
    lin = mg.nn.Linear(2, 2)
    y = lin(mg.ones(1, 2)).sum()               # x needs no gradient: backward never reads w
    with mg.no_grad():
        lin.weight.mul_(2.0)
    y.backward()
    np.testing.assert_array_equal(lin.weight.grad.numpy(), np.ones((2, 2)))
    x = mg.ones(1, 2, requires_grad=True)      # now dX needs w: the change must raise
    y = lin(x).sum()
    with mg.no_grad():
        lin.weight.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified in place after the forward"):
        y.backward()


@pytest.mark.parametrize("op", ["mul", "matmul"])
def test_a_factor_may_change_when_only_it_needs_a_gradient(op):
    w = mg.Parameter(np.ones((2, 2), np.float32))
    c = mg.tensor([[2.0, 3.0], [4.0, 5.0]])
    y = ((w * c) if op == "mul" else (c @ w)).sum()
    with mg.no_grad():
        w.mul_(2.0)
    y.backward()
    expect = c.numpy() if op == "mul" else c.numpy().T @ np.ones((2, 2))
    np.testing.assert_array_equal(w.grad.numpy(), expect)


def test_kl_div_with_a_broadcast_target_has_both_gradients():
    x = mg.tensor(np.log(np.full((2, 3), 1 / 3, np.float32)), requires_grad=True)
    t = mg.tensor(np.array([[0.2, 0.3, 0.5]], np.float32), requires_grad=True)
    F.kl_div(x, t, reduction="sum").backward()
    np.testing.assert_allclose(x.grad.numpy(), -np.repeat(t.numpy(), 2, axis=0), rtol=1e-6)
    expect = 2 * (np.log(t.numpy()) + 1) - x.numpy().sum(0, keepdims=True)
    np.testing.assert_allclose(t.grad.numpy(), expect, rtol=1e-5)


def test_attention_with_mixed_dtypes_inside_autocast():
    q, v = mg.randn(1, 2, 4, 8), mg.randn(1, 2, 4, 8)
    k = mg.randn(1, 2, 4, 8).astype("float16")
    with mg.autocast():
        out = F.scaled_dot_product_attention(q, k, v)
    assert out.shape == (1, 2, 4, 8) and out.dtype == mg.float16
    with pytest.raises(ValueError, match="must share a dtype"):   # outside autocast: refused
        F.scaled_dot_product_attention(q, k, v)
