"""PyTorch's answers at special points: gradients at non-differentiable points are its
subgradients (never 0/0 = NaN, which would make a GradScaler skip every step), an inf reaches
only the outputs that read it, empty axes give empty results, and sizes PyTorch refuses to
broadcast are refused. Expected values are PyTorch 2.x's."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F


def _grad(f, x):
    t = mg.tensor(x, requires_grad=True)
    f(t).sum().backward()
    return t.grad.numpy()


@pytest.mark.parametrize("name,f,x,expect", [
    ("std of a constant slice", lambda t: F.std(t, ddof=1), [2.0, 2.0], [0.0, 0.0]),
    ("std of one element", F.std, [2.0], [0.0]),
    ("0 ** 0 with a tensor exponent", lambda t: t ** mg.tensor([0.0]), [0.0], [0.0]),
    ("atan2 at the origin", lambda t: F.atan2(t, mg.tensor([0.0])), [0.0], [0.0]),
    ("norm p < 1 at a zero", lambda t: F.norm(t, 0.5), [0.0, 1.0], [0.0, 1.0]),
    ("norm p = 3 at a zero", lambda t: F.norm(t, 3), [0.0, 1.0], [0.0, 1.0]),
])
def test_subgradients_at_non_differentiable_points(name, f, x, expect):
    np.testing.assert_allclose(_grad(f, x), expect, atol=1e-7)


@pytest.mark.parametrize("loss", [
    lambda t: F.cross_entropy(t, mg.tensor([-100, -100])),
    lambda t: F.cross_entropy(t, mg.tensor([-100, -100]), label_smoothing=0.1),
    lambda t: F.nll_loss(t, mg.tensor([-100, -100])),
])
def test_every_target_ignored_gives_nan_loss_and_zero_gradient(loss):
    t = mg.tensor([[1.0, 2.0], [0.0, 1.0]], requires_grad=True)
    out = loss(t)
    assert np.isnan(out.item())                      # 0 / 0, as PyTorch
    out.backward()
    np.testing.assert_array_equal(np.abs(t.grad.numpy()), 0.0)


def test_adaptive_avg_pool_inf_reaches_only_its_bin():
    x = mg.tensor(np.array([[[[1, np.inf, 3, 4, 5]]]], np.float32))
    np.testing.assert_array_equal(F.adaptive_avg_pool2d(x, (1, 2)).numpy(), [[[[np.inf, 4.0]]]])


@pytest.mark.parametrize("f", [F.softmax, F.log_softmax])
def test_softmax_over_an_empty_axis_is_empty(f):
    x = mg.zeros(2, 0, requires_grad=True)
    y = f(x, 1)
    assert y.shape == (2, 0)
    y.sum().backward()
    assert x.grad.shape == (2, 0)


@pytest.mark.parametrize("f", [F.binary_cross_entropy_with_logits, F.binary_cross_entropy])
def test_binary_cross_entropy_refuses_a_target_of_another_size(f):
    with pytest.raises(ValueError, match="target size must be the same as input size"):
        f(mg.full((4, 3), 0.5), mg.zeros(4, 1))


def test_gelu_tanh_gradient_saturates_in_every_float_dtype():
    x = np.array([-800, -700, 0.5, 700, 800], np.float32)
    for dtype in ("float16", "bfloat16", "float32"):
        t = mg.tensor(x).astype(dtype)
        t.requires_grad = True
        F.gelu(t, approximate="tanh").sum().backward()
        g = t.grad.numpy().astype(np.float32)
        assert t.grad.dtype == t.dtype and np.isfinite(g).all()
        np.testing.assert_allclose(g[[0, 1, 3, 4]], [0, 0, 1, 1])


def test_std_of_huge_float32_values_does_not_overflow():
    out = F.std(mg.tensor(np.array([1e38, 0.0], np.float32)))
    assert out.dtype == mg.float32
    np.testing.assert_allclose(out.item(), 5e37, rtol=1e-6)


@pytest.mark.parametrize("name,f,x,expect", [
    ("relu6 at 0 and 6", F.relu6, [0.0, 6.0, 3.0], [0.0, 0.0, 1.0]),
    ("hardtanh at its bounds", F.hardtanh, [-1.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
    ("hardsigmoid at +-3", F.hardsigmoid, [-3.0, 3.0, 0.0], [0.0, 0.0, 1 / 6]),
    ("hardswish at +-3", F.hardswish, [-3.0, 3.0, 0.0], [0.0, 1.0, 0.5]),
    ("elu at 0 (the exponential side)", lambda t: F.elu(t, 2.0), [0.0], [2.0]),
    ("celu at 0", lambda t: F.celu(t, 2.0), [0.0], [1.0]),
    ("selu at 0", F.selu, [0.0], [1.0507009873554805 * 1.6732632423543772]),
    ("round on halves", F.round, [0.5, 1.5, -2.5], [0.0, 0.0, 0.0]),
    ("floor on integers", F.floor, [1.0, -2.0], [0.0, 0.0]),
    ("copysign of zero", lambda t: F.copysign(t, mg.tensor([-1.0, 1.0])), [0.0, -0.0],
     [0.0, 0.0]),
    ("hypot at the origin (PyTorch: NaN)", lambda t: F.hypot(t, mg.tensor([0.0, 4.0])),
     [0.0, 3.0], [0.0, 0.6]),
    ("normalize of a zero row", lambda t: F.normalize(t.reshape(1, 2)), [0.0, 0.0],
     [1e12, 1e12]),
])
def test_subgradients_of_the_issue_21_ops(name, f, x, expect):
    np.testing.assert_allclose(_grad(f, x), expect, rtol=1e-7, atol=1e-7)


def test_rounding_keeps_integers_and_fmod_by_zero_raises():
    i = mg.tensor(np.array([3, -4], np.int32))
    for f in (F.floor, F.ceil, F.trunc, F.round):
        out = f(i)
        assert out.dtype == mg.int32 and out.numpy().tolist() == [3, -4]
    assert F.round(mg.tensor([2.5, 3.5, -0.5])).numpy().tolist() == [2.0, 4.0, -0.0]
    assert F.remainder(mg.tensor([-5, 5]), 3).numpy().tolist() == [1, 2]      # Python's sign
    assert F.fmod(mg.tensor([-5, 5]), 3).numpy().tolist() == [-2, 2]          # C's sign
    for f in (F.fmod, F.remainder):
        with pytest.raises(ZeroDivisionError, match=f"^{f.__name__}: integer division by zero"):
            f(mg.tensor([1, 2]), mg.tensor([1, 0]))
    assert np.isnan(F.fmod(mg.tensor([1.0]), 0.0).item())
