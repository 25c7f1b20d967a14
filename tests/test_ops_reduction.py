"""Reductions: NumPy references, float32 accumulation, gradients by gradcheck."""

import math

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad.testing import gradcheck

AXES = [None, 0, 1, -1, (0, 2), (2, 0)]


def _t(a, device, dtype=mg.float64):
    return mg.tensor(a, dtype=dtype, device=device)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_mean_var_std(axis, keepdims, device, rng):
    a = rng.standard_normal((2, 3, 4))
    t = _t(a, device)
    ax = tuple(axis) if isinstance(axis, tuple) else axis
    np.testing.assert_allclose(F.sum(t, axis, keepdims).numpy(), a.sum(ax, keepdims=keepdims))
    np.testing.assert_allclose(F.mean(t, axis, keepdims).numpy(), a.mean(ax, keepdims=keepdims))
    for ddof in (0, 1):
        np.testing.assert_allclose(F.var(t, axis, keepdims, ddof=ddof).numpy(),
                                   a.var(ax, keepdims=keepdims, ddof=ddof))
        np.testing.assert_allclose(F.std(t, axis, keepdims, ddof=ddof).numpy(),
                                   a.std(ax, keepdims=keepdims, ddof=ddof))
        # the Tensor methods are PyTorch's: dim, keepdim, correction (N - 1 by default)
        np.testing.assert_allclose(t.std(axis, keepdim=keepdims, correction=ddof).numpy(),
                                   a.std(ax, keepdims=keepdims, ddof=ddof))
    for fn in (F.sum, F.mean, F.var, F.std):
        assert gradcheck(lambda x, fn=fn: fn(x, axis, keepdims), [a], device=device)
    assert gradcheck(lambda x: F.var(x, axis, keepdims, ddof=1), [a], device=device)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_max_min_prod_logsumexp_norm(axis, keepdims, device, rng):
    a = rng.standard_normal((2, 3, 4))
    t = _t(a, device)
    ax = tuple(axis) if isinstance(axis, tuple) else axis
    np.testing.assert_allclose(F.max(t, axis, keepdims).numpy(), a.max(ax, keepdims=keepdims))
    np.testing.assert_allclose(F.min(t, axis, keepdims).numpy(), a.min(ax, keepdims=keepdims))
    np.testing.assert_allclose(t.prod(axis, keepdims).numpy(), a.prod(ax, keepdims=keepdims))
    ref = np.log(np.exp(a).sum(ax, keepdims=keepdims))
    np.testing.assert_allclose(F.logsumexp(t, axis, keepdims).numpy(), ref)
    np.testing.assert_allclose(F.norm(t, 2, axis, keepdims).numpy(),
                               np.sqrt((a * a).sum(ax, keepdims=keepdims)))
    for fn in (F.max, F.min, F.prod, F.logsumexp):
        assert gradcheck(lambda x, fn=fn: fn(x, axis, keepdims), [a], device=device)
    for ord_ in (1, 2, math.inf, "fro", 3):
        assert gradcheck(lambda x, o=ord_: F.norm(x, o, axis, keepdims), [a], device=device)


def test_norm_values_and_zero_gradient(device):
    a = np.array([[3.0, -4.0], [0.0, 1.0]])
    t = _t(a, device)
    assert F.norm(t).item() == pytest.approx(np.sqrt(26))
    assert F.norm(t, "fro").item() == pytest.approx(np.sqrt(26))
    assert F.norm(t, 1).item() == 8.0
    assert F.norm(t, "inf").item() == 4.0
    np.testing.assert_allclose(F.norm(t, 1, axis=1).numpy(), [7, 1])
    np.testing.assert_allclose(F.norm(t, 3).numpy(), (np.abs(a) ** 3).sum() ** (1 / 3))
    z = mg.zeros(3, requires_grad=True, device=device)
    F.norm(z).backward()
    np.testing.assert_array_equal(z.grad.numpy(), [0, 0, 0])
    with pytest.raises(ValueError, match="norm"):
        F.norm(t, -1)


def test_low_precision_accumulates_in_float32():
    ones = mg.ones(4096, dtype=mg.float16)
    s = F.sum(ones)
    assert s.dtype == mg.float16 and s.item() == 4096
    assert F.mean(ones).item() == 1.0
    x = mg.tensor(np.full(4096, 0.1), dtype=mg.float16)
    assert F.var(x).dtype == mg.float16 and abs(F.var(x).item()) < 1e-3
    assert F.norm(ones).item() == 64.0
    assert F.logsumexp(mg.zeros(4096, dtype=mg.float16)).item() == pytest.approx(
        math.log(4096), rel=1e-3)
    assert F.cumsum(ones)[-1].item() == 4096  # a float16 running sum would stall at 2048
    b = mg.ones(4096, dtype=mg.bfloat16)
    assert F.sum(b).dtype == mg.bfloat16 and float(F.sum(b).item()) == 4096


def test_max_return_indices_and_ties(device):
    a = np.array([[1.0, 3.0, 3.0], [5.0, 2.0, 5.0]])
    x = mg.tensor(a, requires_grad=True, device=device)
    v, i = F.max(x, axis=1, return_indices=True)
    assert v.tolist() == [3.0, 5.0] and i.tolist() == [1, 0] and i.dtype == mg.int64
    v.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])
    v, i = F.min(x, axis=None, keepdims=True, return_indices=True)
    assert v.shape == (1, 1) and i.item() == 0
    x.grad = None
    F.max(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0], [1, 0, 0]])


def test_argmax_argmin(device, rng):
    a = rng.standard_normal((3, 4))
    t = _t(a, device)
    assert F.argmax(t).item() == a.argmax()
    np.testing.assert_array_equal(t.argmax(1).numpy(), a.argmax(1))
    np.testing.assert_array_equal(F.argmin(t, 0, keepdims=True).numpy(),
                                  a.argmin(0)[None])
    assert F.argmax(t, keepdims=True).shape == (1, 1)
    assert F.argmin(t, -1).dtype == mg.int64


def test_logsumexp_stable():
    a = np.array([[1000.0, 1000.0], [-1000.0, -1001.0], [-np.inf, -np.inf]])
    y = F.logsumexp(mg.tensor(a), axis=1).numpy()
    np.testing.assert_allclose(y[:2], [1000 + math.log(2), -1000 + math.log1p(math.exp(-1))],
                               rtol=1e-6)
    assert y[2] == -np.inf


@pytest.mark.parametrize("a", [
    np.array([[1.0, 0.0, 2.0], [3.0, 4.0, 0.5]]),
    np.array([[0.0, 0.0, 2.0], [3.0, 4.0, 0.5]]),
])
def test_prod_gradient_with_zeros(a, device):
    x = mg.tensor(a, dtype=mg.float64, requires_grad=True, device=device)
    F.prod(x, axis=1).sum().backward()
    expected = np.stack([[np.prod(np.delete(r, j)) for j in range(3)] for r in a])
    np.testing.assert_allclose(x.grad.numpy(), expected)
    assert gradcheck(lambda t: F.prod(t, 1), [a], device=device)
    assert gradcheck(lambda t: F.prod(t), [a], device=device)


def test_cumsum(device, rng):
    a = rng.standard_normal((3, 4))
    for axis in (0, 1, -1):
        np.testing.assert_allclose(F.cumsum(_t(a, device), axis).numpy(), np.cumsum(a, axis))
        assert gradcheck(lambda x, ax=axis: F.cumsum(x, ax), [a], device=device)
    np.testing.assert_allclose(F.cumsum(_t(a, device)).numpy(), np.cumsum(a))


def test_reduction_errors():
    x = mg.zeros((2, 3))
    with pytest.raises(ValueError, match="sum: axis 2"):
        F.sum(x, 2)
    with pytest.raises(ValueError, match="max"):
        F.max(mg.zeros((0,)))


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((3, 5))
    t = torch.tensor(a)
    np.testing.assert_allclose(F.logsumexp(mg.tensor(a), 1).numpy(),
                               torch.logsumexp(t, 1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(F.std(mg.tensor(a), 0, ddof=1).numpy(),
                               t.std(0).numpy(), rtol=1e-6)


def test_empty_mean_var_std_are_nan_like_pytorch():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # no NumPy divide-by-zero warnings
        for fn in (F.mean, F.var, F.std):
            assert np.isnan(fn(mg.zeros(0)).item())
            out = fn(mg.zeros((0, 3)), 0)
            assert out.shape == (3,) and np.isnan(out.numpy()).all()
        assert np.isnan(F.var(mg.tensor([2.0]), ddof=1).item())   # N - ddof = 0
    np.testing.assert_array_equal(F.mean(mg.zeros((2, 0)), 0).numpy(), np.zeros(0))
    torch = pytest.importorskip("torch")
    assert torch.zeros(0).mean().isnan()


def test_axis_errors_name_the_op_and_rank():
    x = mg.zeros((2, 3))
    for fn, name in ((F.sum, "sum"), (F.mean, "mean"), (F.var, "var"), (F.max, "max"),
                     (F.argmax, "argmax"), (F.logsumexp, "logsumexp"), (F.cumsum, "cumsum")):
        with pytest.raises(IndexError, match=rf"{name}: axis 2 is out of range for a 2-D"):
            fn(x, 2)
    with pytest.raises(IndexError, match=r"softmax: axis 2 .*\[-2, 1\]"):
        F.softmax(x, axis=2)
    with pytest.raises(IndexError, match="log_softmax: axis -3"):
        F.log_softmax(x, axis=-3)
    with pytest.raises(ValueError, match="repeats"):
        F.sum(x, (1, -1))


def test_zero_d_reductions_accept_axis_0_and_minus_1():
    s = mg.tensor(3.0, requires_grad=True)
    for axis in (0, -1, (0,)):
        assert F.sum(s, axis).item() == 3.0 and F.sum(s, axis).shape == ()
    assert F.mean(s, 0).item() == 3.0 and F.max(s, 0).item() == 3.0
    assert F.argmax(s, 0).item() == 0
    assert F.softmax(s, axis=0).item() == 1.0
    with pytest.raises(IndexError, match="sum: axis 1 is out of range for a 0-D"):
        F.sum(s, 1)
    F.sum(s, 0).backward()
    assert s.grad.item() == 1.0


@pytest.mark.parametrize("name", ["std", "norm", "prod", "var", "logsumexp"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), ((0, 1), False), (None, True),
                                           (1, False)])
def test_second_derivative_over_all_axes(name, axis, keepdims, rng):
    # Over all axes the output is 0-d and NumPy hands back a scalar: the saved output y must
    # still be recognised as the op's output in backward, or d(y)/dx silently drops out of
    # the second derivative (std/norm/prod were wrong with axis=None, right with axis=1).
    from minigrad.testing import gradgradcheck

    fn = getattr(F, name)
    x = rng.uniform(-1, 1, (3, 4))
    assert gradgradcheck(lambda x: fn(x, axis=axis, keepdims=keepdims), [x])


def test_std_hessian_matches_torch_over_all_axes(rng):
    torch = pytest.importorskip("torch")
    from minigrad.autodiff import grad

    a, v = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    x = mg.tensor(a, requires_grad=True)
    (g,) = grad(F.std(x), [x], create_graph=True)
    (hv,) = grad((g * mg.tensor(v)).sum(), [x])
    tx = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad(tx.std(unbiased=False), tx, create_graph=True)
    (thv,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), tx)
    np.testing.assert_allclose(hv.numpy(), thv.numpy(), rtol=1e-10, atol=1e-12)


def test_logsumexp_nan_inf_and_empty():
    nan, inf = math.nan, math.inf
    assert math.isnan(F.logsumexp(mg.tensor([1.0, nan, 2.0])).item())
    assert F.logsumexp(mg.tensor([1.0, inf])).item() == inf
    assert F.logsumexp(mg.tensor([-inf, -inf])).item() == -inf
    assert F.logsumexp(mg.zeros(0)).item() == -inf  # the log of an empty sum, as in PyTorch
    np.testing.assert_array_equal(F.logsumexp(mg.zeros((0, 3)), axis=0).numpy(), [-inf] * 3)
    assert F.logsumexp(mg.zeros((0, 3)), axis=1).shape == (0,)
    x = mg.tensor(np.zeros((0, 3)), requires_grad=True)
    F.logsumexp(x, axis=0).sum().backward()
    assert x.grad.shape == (0, 3)


BAD_AXIS = [(F.sum, "sum"), (F.mean, "mean"), (F.var, "var"), (F.std, "std"), (F.prod, "prod"),
            (F.norm, "norm"), (F.max, "max"), (F.min, "min"), (F.argmax, "argmax"),
            (F.argmin, "argmin"), (F.logsumexp, "logsumexp"), (F.cumsum, "cumsum"),
            (F.softmax, "softmax"), (F.log_softmax, "log_softmax")]


@pytest.mark.parametrize("fn,name", BAD_AXIS, ids=[n for _, n in BAD_AXIS])
def test_bad_axis_is_pytorchs_dimension_out_of_range(fn, name):
    with pytest.raises(IndexError, match=rf"^{name}: axis 2 .*Dimension out of range \(expected "
                                         r"to be in range of \[-2, 1\], but got 2\)"):
        fn(mg.zeros((2, 3)), axis=2)


def test_extrema_of_an_empty_tensor_over_a_non_empty_axis(rng):
    # PyTorch: zeros(0, 4).max(dim=1) is empty; only a reduction over no elements raises.
    from minigrad.testing import gradcheck

    x = mg.tensor(np.zeros((0, 4)), requires_grad=True)
    values, idx = F.max(x, axis=1, return_indices=True)
    assert values.shape == (0,) and idx.shape == (0,) and idx.dtype == mg.int64
    assert F.min(x, axis=1, keepdims=True).shape == (0, 1)
    assert F.argmax(x, axis=1).shape == (0,) and F.argmin(x, axis=-1).shape == (0,)
    assert F.norm(x, ord=math.inf, axis=1).shape == (0,)
    F.max(x, axis=1).sum().backward()
    assert x.grad.shape == (0, 4)
    assert gradcheck(lambda x: F.min(x, axis=(1, 2)), [np.zeros((0, 3, 4))])
    for call, name in ((lambda: F.max(x), "max"), (lambda: F.min(x, axis=0), "min"),
                       (lambda: F.argmax(x), "argmax"), (lambda: F.argmin(x, axis=0), "argmin"),
                       (lambda: F.norm(x, ord=math.inf, axis=0), "norm")):
        with pytest.raises(ValueError, match=rf"^{name}: .*(empty|no elements)"):
            call()


def test_any_and_all_over_every_axis_hold_a_0d_array():
    t = mg.tensor([0.0, 1.0])
    for r, expect in ((t.any(), True), (t.all(), False)):
        assert r.shape == () and not isinstance(r._data, np.generic)
        assert r.numpy().item() is expect and r.item() is expect


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [0, -1])
def test_scan_of_0d_stays_0d(name, axis):
    """PyTorch: cumsum/cumprod of a 0-d tensor along 0/-1 is 0-d (NumPy's would be (1,))."""
    x = mg.tensor(np.array(-1.5), requires_grad=True)
    y = getattr(F, name)(x, axis)
    assert y.shape == () and float(y.numpy()) == -1.5
    (y * 3.0).backward()
    assert x.grad.shape == () and float(x.grad.numpy()) == 3.0
    assert gradcheck(lambda t: getattr(F, name)(t, axis), [np.array(0.7)])
    assert getattr(F, name)(x).shape == (1,)  # axis=None flattens, as in NumPy
    with pytest.raises(IndexError, match=name):
        getattr(F, name)(x, 1)
