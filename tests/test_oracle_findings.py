"""Regression tests for the minigrad bugs the PyTorch oracle (tests/test_oracle.py) found when
its mapping reached the whole op table; each states PyTorch's answer as data, so it runs
without PyTorch too."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F


def _cell_args(dtype, n=2, device="cpu"):
    rng = np.random.default_rng(0)
    arrays = (rng.integers(-3, 4, (n, 3)), rng.integers(-3, 4, (n, 4)),
              rng.integers(-3, 4, (4, 3)), rng.integers(-3, 4, (4, 4)),
              rng.integers(-3, 4, (4,)), rng.integers(-3, 4, (4,)))
    return [mg.tensor(a.astype(dtype), device=device) for a in arrays]


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_rnn_cells_compute_integer_input(device, dtype):
    """PyTorch's rnn_relu_cell of integer tensors is exact integer arithmetic in their dtype,
    rnn_tanh_cell the tanh of that exact sum in the default float; minigrad refused both as
    float-only (a false alarm)."""
    x, h, w_ih, w_hh, b_ih, b_hh = args = _cell_args(dtype, device=device)
    pre = sum(a.numpy().astype(np.int64) for a in (x @ w_ih.T, h @ w_hh.T)) + (
        b_ih.numpy() + b_hh.numpy())
    relu = F.rnn_relu_cell(*args)
    assert relu.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(relu.numpy(), np.maximum(pre, 0))
    tanh = F.rnn_tanh_cell(*args)
    assert tanh.dtype == mg.float32
    np.testing.assert_allclose(tanh.numpy(), np.tanh(pre.astype(np.float32)), rtol=1e-6)
    unbatched = F.rnn_relu_cell(x[0], h[0], w_ih, w_hh)   # no biases, one sample
    np.testing.assert_array_equal(
        unbatched.numpy(), np.maximum(x[0].numpy() @ w_ih.numpy().T
                                      + h[0].numpy() @ w_hh.numpy().T, 0))


def test_rnn_cells_integer_input_refusals():
    """Bool products and integer input mixed with floating weights still raise, naming the op
    (as PyTorch's addmm does); an empty bool batch gives the empty float32 state."""
    args = _cell_args(np.bool_)
    with pytest.raises(ValueError, match="rnn_tanh_cell.*bool"):
        F.rnn_tanh_cell(*args)
    empty = F.rnn_tanh_cell(*_cell_args(np.bool_, n=0))
    assert empty.shape == (0, 4) and empty.dtype == mg.float32
    x, h, w_ih, w_hh, *_ = _cell_args(np.int64)
    with pytest.raises(ValueError, match="rnn_relu_cell"):
        F.rnn_relu_cell(x, h, w_ih.astype("float32"), w_hh)
    with pytest.raises(ValueError, match="lstm_cell.*floating"):   # PyTorch refuses too
        F.lstm_cell(x, (h, h), mg.tensor(np.ones((16, 3), np.int64)),
                    mg.tensor(np.ones((16, 4), np.int64)))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_dropout_of_an_empty_integer_tensor(dtype):
    """Nothing to drop: PyTorch returns the empty tensor, as minigrad already did for
    ``p=0`` and ``training=False``; minigrad refused it as float-only."""
    x = mg.zeros((0, 4), dtype=dtype)
    y = F.dropout(x, 0.5)
    assert y.shape == (0, 4) and y.dtype == x.dtype
    with pytest.raises(ValueError, match="dropout.*floating"):   # a non-empty one: refused
        F.dropout(mg.ones((2, 4), dtype=dtype), 0.5)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_l1_loss_of_integers_is_exact_for_sum_and_none(dtype):
    """PyTorch computes l1_loss of integer tensors exactly (reduction "none" in their dtype,
    "sum" in int64) and refuses only their mean; minigrad refused all three."""
    a, b = mg.tensor(np.array([1, 5, -2], dtype)), mg.tensor(np.array([0, 2, 2], dtype))
    none = F.l1_loss(a, b, reduction="none")
    assert none.dtype == np.dtype(dtype) and none.tolist() == [1, 3, 4]
    total = F.l1_loss(a, b, reduction="sum")
    assert total.dtype == np.int64 and total.item() == 8
    with pytest.raises(ValueError, match="l1_loss"):
        F.l1_loss(a, b)
    with pytest.raises(ValueError, match="l1_loss"):
        F.l1_loss(mg.tensor([True]), mg.tensor([False]), reduction="sum")


@pytest.mark.parametrize("op, expected", [("l1_loss", 0.75), ("mse_loss", 0.625),
                                          ("smooth_l1_loss", 0.3125)])
def test_integer_input_with_a_float_target_is_promoted(op, expected):
    """PyTorch promotes an integer input to the float target's dtype; minigrad refused it."""
    y = getattr(F, op)(mg.tensor([1, 2]), mg.tensor([0.5, 1.0]))
    assert y.dtype == np.float32 and y.item() == pytest.approx(expected, rel=1e-7)
    if op != "l1_loss":                        # bool too, except where PyTorch can't subtract
        assert getattr(F, op)(mg.tensor([True, False]), mg.tensor([0.5, 1.0])).item() == \
            pytest.approx(0.625 if op == "mse_loss" else 0.3125, rel=1e-7)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scales_by_each_rows_own_count(mode):
    """scale_grad_by_freq divides each row's gradient by how often that row occurs in the
    batch (PyTorch 2.15; 2.13's CPU kernel divides row 3 below by row 2's count)."""
    idx = mg.tensor([[2, 2, 3], [2, 1, 3]])
    grads = []
    for scale in (False, True):
        bag = mg.nn.EmbeddingBag(7, 3, mode=mode, scale_grad_by_freq=scale)
        bag(idx).sum().backward()
        grads.append(bag.weight.grad.numpy())
    counts = np.bincount(idx.numpy().ravel(), minlength=7)[:, None]
    np.testing.assert_allclose(grads[1], grads[0] / np.maximum(counts, 1), rtol=1e-6)
    assert grads[1][3].tolist() == pytest.approx([1.0 if mode == "sum" else 1 / 3] * 3)
