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


# ------------------------------------------------------------------ tests/test_oracle_variants.py
# Found by the views and special-values variants of the oracle; PyTorch 2.13's answers as data.
_INF, _NAN = float("inf"), float("nan")


def _value_and_grad(f, x, dy=None, dtype=np.float32):
    t = mg.tensor(np.asarray(x, dtype), requires_grad=True)
    y = f(t)
    if dy is None:
        (y.sum() if y.ndim else y).backward()
    else:
        y.backward(mg.tensor(np.asarray(dy, dtype)))
    return y.numpy(), (np.zeros(t.shape, dtype) if t.grad is None else t.grad.numpy())


def test_backward_through_a_view_into_an_op_without_gradient():
    """``sign(x.T)`` gives x no gradient (PyTorch: zeros); the transpose between them made the
    backward raise TypeError (no zeros of an unknown shape for the view's node)."""
    x = mg.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    F.sign(x.T).sum().backward()
    assert x.grad is None or not x.grad.numpy().any()
    y = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (F.sign(y[::2]).sum() + y.sum()).backward()       # another path still delivers
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("op, value, grad", [
    # x = [-0.0, -1e-45, NaN, 2.0]: PyTorch's results (zero signs too) and gradients
    ("relu", [-0.0, 0.0, _NAN, 2.0], [0, 0, 1, 1]),
    ("leaky_relu", [-0.0, -0.0, _NAN, 2.0], [0.01, 0.01, 0.01, 1]),
    ("elu", [-0.0, -1e-45, _NAN, 2.0], [1, 1, 1, 1]),
    ("celu", [-0.0, -1e-45, _NAN, 2.0], [1, 1, 1, 1]),
    ("selu", [-0.0, -2.8e-45, _NAN, 2.101402], [1.758099, 1.758099, 1.050701, 1.050701]),
    ("relu6", [-0.0, 0.0, _NAN, 2.0], [0, 0, 1, 1]),
    ("hardtanh", [-0.0, -1e-45, _NAN, 1.0], [1, 1, 1, 0]),
    ("hardswish", [-0.0, -0.0, _NAN, 1.666667], [0.5, 0.5, 1, 1.166667]),
    ("clip", [-0.0, 0.0, _NAN, 2.0], [1, 0, 0, 1]),
])
def test_activations_keep_signed_zeros_and_pass_nan_gradients(op, value, grad):
    """PyTorch keeps -0.0 (and a negative underflow) negative, and its comparisons send a
    NaN's gradient where its formula does; minigrad gave +0.0 and NaN or 0 gradients."""
    f = (lambda t: F.clip(t, lower=0.0)) if op == "clip" else getattr(F, op)
    y, g = _value_and_grad(f, [-0.0, -1e-45, _NAN, 2.0])
    value = np.asarray(value, np.float32)
    np.testing.assert_allclose(y, value, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(value))
    np.testing.assert_allclose(g, grad, rtol=1e-6)


def test_relu_of_low_precision_keeps_negative_zero():
    for dtype in ("float16", "bfloat16"):
        y = F.relu(mg.tensor(np.array([-0.0, -1.0, 0.0, 2.0], np.float32)).astype(dtype))
        assert np.signbit(y.numpy().astype(np.float32)).tolist() == [True, False, False, False]


def test_erfinv_and_logsigmoid_signed_zeros():
    assert np.signbit(F.erfinv(mg.tensor([-0.0])).numpy()).all()               # PyTorch: -0.0
    y = F.logsigmoid(mg.tensor([_INF, 3e38]))
    assert y.numpy().tolist() == [0.0, 0.0] and not np.signbit(y.numpy()).any()  # +0.0


def test_prelu_positive_input_never_meets_its_weight():
    """PyTorch's ``x > 0 ? x : w * x``: an inf weight leaves positive inputs (and their
    gradient) alone; minigrad's max + min * w gave 0 * inf = NaN."""
    x = mg.tensor([[1.0, -2.0]], requires_grad=True)
    w = mg.tensor([_INF], requires_grad=True)
    y = F.prelu(x, w)
    y.sum().backward()
    assert y.numpy().tolist() == [[1.0, -_INF]]
    assert x.grad.numpy().tolist() == [[1.0, _INF]] and w.grad.numpy().tolist() == [-2.0]


def test_maximum_minimum_gradients_at_nan_and_with_inf_cotangents():
    """PyTorch: a NaN operand makes neither lose (both get the gradient); the loser gets an
    exact 0 even for an inf cotangent (minigrad: 0 to a, and 0 * inf = NaN)."""
    a = mg.tensor([_NAN, 1.0, 2.0], requires_grad=True)
    b = mg.tensor([1.0, _NAN, 3.0], requires_grad=True)
    F.maximum(a, b).sum().backward()
    assert a.grad.numpy().tolist() == [1.0, 1.0, 0.0] and b.grad.numpy().tolist() == [1, 1, 1]
    a = mg.tensor([1.0, 5.0], requires_grad=True)
    F.maximum(a, mg.tensor([2.0, 3.0])).backward(mg.tensor([_INF, _INF]))
    assert a.grad.numpy().tolist() == [0.0, _INF]
    x = mg.tensor([-1.0, 0.5], requires_grad=True)
    F.clip(x, lower=0.0).backward(mg.tensor([_INF, 1.0]))
    assert x.grad.numpy().tolist() == [0.0, 1.0]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_maximum_minimum_ties_of_signed_zeros_give_the_first_operand(dtype):
    """PyTorch's maximum(-0.0, 0.0) is -0.0 and maximum(0.0, -0.0) is 0.0 (minimum alike);
    minigrad gave NumPy's answer, the second operand, in every dtype."""
    a = mg.tensor([-0.0, 0.0, -0.0]).astype(dtype)
    b = mg.tensor([0.0, -0.0, 1.0]).astype(dtype)
    for op in (F.maximum, F.minimum):
        y = op(a, b).numpy().astype(np.float64)
        assert y[:2].tolist() == [0.0, 0.0] and np.signbit(y[:2]).tolist() == [True, False]
    assert np.signbit(F.minimum(a, b).numpy()[2].astype(np.float64))
    assert np.signbit(F.maximum(a[:1], 0.0).numpy().astype(np.float64)).all()  # a Python zero


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sign_of_negative_zero_is_positive_zero_in_low_precision(dtype):
    """sign(-0.0) is 0.0 in PyTorch and in minigrad's float32; ml_dtypes' own bfloat16 sign,
    which minigrad called directly, gave -0.0."""
    y = mg.sign(mg.tensor([-0.0, -2.0, 3.0]).astype(dtype))
    assert str(y.dtype) == dtype
    out = y.numpy().astype(np.float64)
    assert out.tolist() == [0.0, -1.0, 1.0] and not np.signbit(out[0])


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_fused_ops_of_an_empty_output_have_zero_gradients(op):
    """Broadcast operands holding inf/NaN meet an empty output: PyTorch's gradients are 0
    (sums over nothing); minigrad multiplied their zero sum by inf (NaN)."""
    a = mg.tensor([_INF, 1.0], requires_grad=True)
    b = mg.tensor([2.0, _NAN], requires_grad=True)
    getattr(F, op)(mg.zeros(0, 2), a, b).sum().backward()
    assert a.grad.numpy().tolist() == [0.0, 0.0] and b.grad.numpy().tolist() == [0.0, 0.0]


def test_gradients_and_values_near_the_float_limits():
    """Intermediate over- and underflow where PyTorch's result is representable."""
    a = mg.tensor([1e-45], requires_grad=True)
    b = mg.tensor([0.0], requires_grad=True)
    F.hypot(a, b).sum().backward()                           # PyTorch: 1 and 0 (was inf, NaN)
    assert a.grad.numpy().tolist() == [1.0] and b.grad.numpy().tolist() == [0.0]
    y = F.lerp(mg.tensor([0.5]), mg.tensor([3e38]), mg.tensor([-1.0]))  # PyTorch: -3e38
    np.testing.assert_allclose(y.numpy(), [-3e38], rtol=1e-6)
    y = F.lerp(mg.tensor(np.array([0.5])), mg.tensor(np.array([1e308])), -1.0)
    np.testing.assert_allclose(y.numpy(), [-1e308], rtol=1e-12)
    a = mg.tensor([3e38], requires_grad=True)
    b = mg.tensor([1.5], requires_grad=True)
    (a / b).backward(mg.tensor([2.0]))                       # PyTorch: -2.6667e38 (was -inf)
    np.testing.assert_allclose(b.grad.numpy(), [-2.6666667e38], rtol=1e-6)
    _, g = _value_and_grad(lambda t: F.mse_loss(t, mg.tensor([0.0, 0.0])), [3e38, 0.0])
    np.testing.assert_allclose(g, [3e38, 0.0], rtol=1e-6)     # PyTorch (was inf)
    y = F.round(mg.tensor(np.array([6e4, 1.2345], np.float16)), decimals=2)
    assert y.numpy().tolist() == [60000.0, np.float16(1.2305)]   # PyTorch (was inf)


@pytest.mark.parametrize("x", [_INF, _NAN, 1e-45])
@pytest.mark.parametrize("op", ["prod", "cumprod"])
def test_product_of_one_element_has_gradient_one(op, x):
    """PyTorch: d x / d x = 1 at inf, NaN and a subnormal (minigrad's dy * y / x gave NaN, or
    0 where dy * y underflows)."""
    f = F.prod if op == "prod" else (lambda t: F.cumprod(t, 0))
    _, g = _value_and_grad(f, x, dy=0.125)
    assert g.tolist() == 0.125


@pytest.mark.parametrize("op", ["norm", "vector_norm"])
def test_norms_of_one_element_and_nan_slices(op):
    """PyTorch: the norm of one element is its magnitude (minigrad squared it: inf for 3e38,
    0 for 1e-45) with gradient 1; a NaN norm's gradient is NaN for the whole slice
    (minigrad's was finite beside the NaN)."""
    f = getattr(F, op)
    for v in (3e38, 1e-45):
        y, g = _value_and_grad(f, [v])
        np.testing.assert_allclose(y, np.float32(v), rtol=1e-6)
        assert g.tolist() == [1.0]
    _, g = _value_and_grad(f, [_NAN, 1.0, 2.0])
    assert np.isnan(g).all()


def test_std_gradient_of_huge_values():
    """The std of float32 3e38s is representable (minigrad computes it in float64) and so is
    its gradient (PyTorch's in float64: +-0.25); minigrad's float32 mean overflowed (-inf)."""
    y, g = _value_and_grad(F.std, [3e38, 0.0, 0.0, 3e38])
    np.testing.assert_allclose(y, 1.5e38, rtol=1e-6)
    np.testing.assert_allclose(g, [0.25, -0.25, -0.25, 0.25], rtol=1e-6)


def test_margin_losses_clamp_as_pytorch():
    """PyTorch's margin losses take max(z, 0) as clamp_min: the gradient passes at z == 0 and
    stops at NaN (minigrad's relu did the opposite)."""
    a = mg.tensor([0.5, 2.0], requires_grad=True)
    F.margin_ranking_loss(a, mg.tensor([0.5, 1.0]), mg.tensor([1.0, 1.0]),
                          reduction="sum").backward()
    assert a.grad.numpy().tolist() == [-1.0, 0.0]
    x = mg.tensor([_NAN, 0.2], requires_grad=True)
    F.hinge_embedding_loss(x, mg.tensor([-1.0, -1.0]), margin=0.5, reduction="sum").backward()
    assert x.grad.numpy().tolist() == [0.0, -1.0]


def test_loss_gradients_at_infinite_inputs():
    """PyTorch: huber's gradient at inf is delta, and bce_with_logits' at -inf is -target
    (minigrad: NaN, from 0 * inf in an unused branch and softplus(x) - x = inf - inf)."""
    _, g = _value_and_grad(lambda t: F.huber_loss(t, mg.tensor([0.0, 0.0]), delta=0.7,
                                                  reduction="sum"), [_INF, 0.2])
    np.testing.assert_allclose(g, [0.7, 0.2], rtol=1e-6)
    _, g = _value_and_grad(lambda t: F.binary_cross_entropy_with_logits(
        t, mg.tensor([0.25, 0.25]), reduction="sum"), [-_INF, _INF])
    assert g.tolist() == [-0.25, 0.75]


def test_kl_div_of_a_negative_target_is_nan():
    """PyTorch's xlogy(t, t) - t * x: NaN for a negative target, 0 at 0 (minigrad: finite)."""
    y = F.kl_div(mg.tensor([0.3, 0.3, 0.3]), mg.tensor([-0.5, 0.0, -_INF]), reduction="none")
    assert np.isnan(y.numpy()[[0, 2]]).all() and y.numpy()[1] == 0.0


@pytest.mark.parametrize("where", ["input", "target"])
def test_binary_cross_entropy_refuses_nan_probabilities(where):
    """PyTorch raises "all elements of input (target) should be between 0 and 1" for NaN;
    minigrad's range check let NaN through."""
    p, t = mg.tensor([0.3, 0.5]), mg.tensor([1.0, 0.0])
    bad = mg.tensor([_NAN, 0.5])
    with pytest.raises(ValueError, match=f"binary_cross_entropy: {where} values"):
        F.binary_cross_entropy(bad if where == "input" else p, bad if where == "target" else t)


def test_renorm_keeps_the_gradient_of_a_nan_slice():
    """A slice whose norm is NaN is not rescaled (NaN > maxnorm is false) and PyTorch passes
    its gradient unchanged; minigrad's leaked the NaN norm's gradient (0 * NaN) into it."""
    x = mg.tensor([[_NAN, 1.0], [3.0, 4.0]], requires_grad=True)
    F.renorm(x, 2, 0, 1.0).backward(mg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert x.grad.numpy()[0].tolist() == [1.0, 2.0]            # PyTorch's
    np.testing.assert_allclose(x.grad.numpy()[1], [1.2e-8, 1.6e-8], atol=1e-7)
