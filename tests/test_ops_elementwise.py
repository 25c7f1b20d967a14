"""Elementwise ops: forward against NumPy, gradients by gradcheck, broadcasting properties."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.functional as F
from minigrad.testing import gradcheck


def _erf_ref(a):
    return np.vectorize(math.erf)(a)


def _pos(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def _any(rng, shape):
    return rng.standard_normal(shape)


def _away0(rng, shape):  # away from the kinks of abs/relu/clip
    return rng.uniform(0.2, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


UNARY = [
    ("exp", F.exp, np.exp, _any),
    ("log", F.log, np.log, _pos),
    ("log1p", F.log1p, np.log1p, _pos),
    ("expm1", F.expm1, np.expm1, _any),
    ("sqrt", F.sqrt, np.sqrt, _pos),
    ("rsqrt", F.rsqrt, lambda a: 1 / np.sqrt(a), _pos),
    ("square", F.square, np.square, _any),
    ("abs", F.abs, np.abs, _away0),
    ("sin", F.sin, np.sin, _any),
    ("cos", F.cos, np.cos, _any),
    ("tanh", F.tanh, np.tanh, _any),
    ("sigmoid", F.sigmoid, lambda a: 1 / (1 + np.exp(-a)), _any),
    ("relu", F.relu, lambda a: np.maximum(a, 0), _away0),
    ("leaky_relu", lambda t: F.leaky_relu(t, 0.1), lambda a: np.where(a > 0, a, 0.1 * a),
     _away0),
    ("gelu", F.gelu, lambda a: 0.5 * a * (1 + _erf_ref(a / math.sqrt(2))), _any),
    ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"),
     lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))), _any),
    ("silu", F.silu, lambda a: a / (1 + np.exp(-a)), _any),
    ("softplus", F.softplus, lambda a: np.log1p(np.exp(a)), _any),
    ("softplus_beta", lambda t: F.softplus(t, beta=2.0, threshold=1.0),
     lambda a: np.where(2 * a > 1, a, np.log1p(np.exp(2 * a)) / 2), _away0),
    ("erf", F.erf, _erf_ref, _any),
    ("neg", F.neg, np.negative, _any),
    ("clip", lambda t: F.clip(t, -0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7), _away0),
    ("pow_scalar", lambda t: t ** 3, lambda a: a ** 3, _any),
    ("pow_frac", lambda t: F.pow(t, 0.5), np.sqrt, _pos),
    ("rpow", lambda t: 2.0 ** t, lambda a: 2.0 ** a, _any),
]


@pytest.mark.parametrize("name,fn,ref,gen", UNARY, ids=[u[0] for u in UNARY])
def test_unary_forward_and_grad(name, fn, ref, gen, device, rng):
    a = gen(rng, (3, 4))
    out = fn(mg.tensor(a, dtype=mg.float64, device=device))
    np.testing.assert_allclose(out.numpy(), ref(a), rtol=1e-10, atol=1e-12)
    assert gradcheck(fn, [a], device=device)


BINARY = [
    ("add", F.add, np.add), ("sub", F.sub, np.subtract), ("mul", F.mul, np.multiply),
    ("div", F.div, np.divide), ("maximum", F.maximum, np.maximum),
    ("minimum", F.minimum, np.minimum), ("pow", F.pow, np.power),
]


def _broadcastable(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    other = list(shape)
    for i in range(len(other)):  # knock some sides down to 1 (broadcast)
        if draw(st.booleans()):
            other[i] = 1
    drop = draw(st.integers(0, len(other)))
    other = tuple(other[drop:])
    return (shape, other) if draw(st.booleans()) else (other, shape)


@pytest.mark.parametrize("name,fn,ref", BINARY, ids=[b[0] for b in BINARY])
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_binary_broadcasting_property(name, fn, ref, data):
    sa, sb = _broadcastable(data.draw)
    seed = data.draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, sa)
    b = rng.uniform(0.5, 2.0, sb)
    b = np.where(np.abs(b - 1.25) < 1e-3, 1.3, b)
    ta = mg.tensor(a, dtype=mg.float64, requires_grad=True)
    tb = mg.tensor(b, dtype=mg.float64, requires_grad=True)
    y = fn(ta, tb)
    assert y.shape == np.broadcast_shapes(sa, sb)
    np.testing.assert_allclose(y.numpy(), ref(a, b), rtol=1e-12)
    (y * y).sum().backward()
    assert ta.grad.shape == sa and tb.grad.shape == sb
    if name not in ("maximum", "minimum"):  # ties are measure-zero but skip kinks anyway
        assert gradcheck(fn, [a, b])


@pytest.mark.parametrize("name,fn,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_scalar_either_side(name, fn, ref, device, rng):
    a = rng.uniform(0.5, 2.0, (2, 3))
    t = mg.tensor(a, dtype=mg.float64, device=device)
    np.testing.assert_allclose(fn(t, 1.5).numpy(), ref(a, 1.5), rtol=1e-12)
    np.testing.assert_allclose(fn(1.5, t).numpy(), ref(1.5, a), rtol=1e-12)
    assert gradcheck(lambda x: fn(x, 1.5), [a], device=device)
    assert gradcheck(lambda x: fn(1.5, x), [a], device=device)


@pytest.mark.parametrize("dtype", [mg.float16, mg.bfloat16])
def test_python_scalar_does_not_widen_low_precision(dtype):
    x = mg.ones((2, 2), dtype=dtype)
    for y in (x + 1.5, 2.0 * x, x - 1, x / 3.0, x ** 2, 2.0 ** x, F.maximum(x, 0.5),
              F.where(x > 0, x, 0.0), F.clip(x, 0.0, 0.5), F.relu(x), F.sigmoid(x),
              F.gelu(x), F.silu(x), F.softplus(x), F.erf(x), F.leaky_relu(x)):
        assert y.dtype == dtype


def test_sign_has_no_gradient_and_abs_grad():
    x = mg.tensor([-2.0, 0.0, 3.0], requires_grad=True)
    np.testing.assert_array_equal(F.sign(x).numpy(), [-1, 0, 1])
    F.abs(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [-1, 0, 1])


def test_maximum_minimum_ties_split_gradient():
    a = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = mg.tensor([2.0, 2.0, 1.0], requires_grad=True)
    F.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0, 0.5, 1])
    np.testing.assert_array_equal(b.grad.numpy(), [1, 0.5, 0])
    a.grad = b.grad = None
    F.minimum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1, 0.5, 0])


def test_clip_gradient_includes_bounds_and_errors():
    x = mg.tensor([-1.0, 0.0, 0.5, 1.0, 2.0], requires_grad=True)
    y = F.clip(x, 0.0, 1.0)
    np.testing.assert_array_equal(y.numpy(), [0, 0, 0.5, 1, 1])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(F.clip(x, lower=0.5).numpy(), [0.5, 0.5, 0.5, 1, 2])
    np.testing.assert_array_equal(x.clip(None, 0.0).numpy(), [-1, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="clip"):
        F.clip(x)


def test_clip_with_tensor_bounds(rng):
    a = _away0(rng, (3, 4))
    lo = np.full((1, 4), -0.3)
    assert gradcheck(lambda x, low: F.clip(x, low, 0.9), [a, lo])
    np.testing.assert_allclose(F.clip(mg.tensor(a), mg.tensor(lo), 0.9).numpy(),
                               np.clip(a, lo, 0.9), rtol=1e-6)


def test_where_scalars_broadcasting_and_grad(device, rng):
    a = rng.standard_normal((3, 1))
    b = rng.standard_normal((1, 4))
    cond = mg.tensor(rng.random((3, 4)) > 0.5, device=device)
    y = F.where(cond, mg.tensor(a, device=device), mg.tensor(b, device=device))
    np.testing.assert_allclose(y.numpy(), np.where(cond.numpy(), a, b))
    assert gradcheck(lambda x, z: F.where(cond, x, z), [a, b], device=device)
    assert gradcheck(lambda x: F.where(cond, x, 0.0), [a], device=device)
    assert gradcheck(lambda x: F.where(cond, 1.0, x), [b], device=device)
    y2 = F.where(cond, 1.0, 0.0)
    assert y2.dtype == mg.float32 and y2.numpy().sum() == cond.numpy().sum()


def test_pow_tensor_exponent_and_zero_base(rng):
    a = rng.uniform(0.5, 2.0, (3,))
    b = rng.uniform(-1.0, 2.0, (3,))
    assert gradcheck(F.pow, [a, b])
    x = mg.tensor([0.0, 1.0], requires_grad=True)
    e = mg.tensor([2.0, 2.0], requires_grad=True)
    (x ** e).sum().backward()
    assert np.isfinite(e.grad.numpy()).all() and e.grad.numpy()[0] == 0
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 2.0])


def test_stable_sigmoid_softplus_no_warnings():
    x = mg.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = F.sigmoid(x)
        sp = F.softplus(x)
        (s.sum() + sp.sum() + F.silu(x).sum()).backward()
    np.testing.assert_allclose(s.numpy(), [0, 1.9287e-22, 0.5, 1, 1], rtol=1e-4, atol=1e-30)
    np.testing.assert_allclose(sp.numpy(), [0, 1.9287e-22, math.log(2), 50, 1000], rtol=1e-4)
    assert np.isfinite(x.grad.numpy()).all()


def test_erf_accuracy():
    a = np.concatenate([np.linspace(-7, 7, 20001), np.geomspace(1e-12, 30, 2000), [0.0]])
    got = F.erf(mg.tensor(a, dtype=mg.float64)).numpy()
    ref = _erf_ref(a)
    rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)
    assert rel.max() < 1e-14
    got32 = F.erf(mg.tensor(a, dtype=mg.float32)).numpy().astype(np.float64)
    ref32 = _erf_ref(a.astype(np.float32).astype(np.float64))
    assert (np.abs(got32 - ref32) / np.maximum(np.abs(ref32), 1e-30)).max() < 1e-6
    assert F.erf(mg.tensor([np.inf, -np.inf])).numpy().tolist() == [1.0, -1.0]
    assert np.isnan(F.erf(mg.tensor([np.nan])).numpy()).all()


def test_prelu_forward_and_grad(device, rng):
    x = _away0(rng, (2, 3, 4))
    w = np.array([0.1, 0.2, 0.3])
    y = F.prelu(mg.tensor(x, device=device), mg.tensor(w, device=device))
    np.testing.assert_allclose(y.numpy(), np.where(x > 0, x, x * w[None, :, None]), rtol=1e-6)
    assert gradcheck(F.prelu, [x, w], device=device)
    assert gradcheck(F.prelu, [x, np.array([0.25])], device=device)
    with pytest.raises(ValueError, match="prelu"):
        F.prelu(mg.tensor(x), mg.tensor(np.ones(4)))


def test_against_torch_activations(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((4, 5)) * 3
    t = torch.tensor(a)
    cases = [(F.gelu, torch.nn.functional.gelu), (F.silu, torch.nn.functional.silu),
             (lambda x: F.softplus(x, 2.0, 3.0), lambda x: torch.nn.functional.softplus(x, 2, 3)),
             (F.erf, torch.erf), (lambda x: F.gelu(x, "tanh"),
                                  lambda x: torch.nn.functional.gelu(x, approximate="tanh"))]
    for ours, theirs in cases:
        np.testing.assert_allclose(ours(mg.tensor(a, dtype=mg.float64)).numpy(),
                                   theirs(t).numpy(), rtol=1e-12, atol=1e-14)


COMPARE = [
    (F.equal, np.equal), (F.not_equal, np.not_equal), (F.less, np.less),
    (F.less_equal, np.less_equal), (F.greater, np.greater), (F.greater_equal, np.greater_equal),
    (F.logical_and, np.logical_and), (F.logical_or, np.logical_or),
]


@pytest.mark.parametrize("fn,ref", COMPARE)
def test_comparisons(fn, ref, device):
    a = np.array([[0.0, 1.0, 2.0]])
    b = np.array([[1.0], [0.0]])
    ta = mg.tensor(a, device=device, requires_grad=True)
    out = fn(ta, mg.tensor(b, device=device))
    assert out.dtype == mg.bool_ and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), ref(a, b))
    np.testing.assert_array_equal(fn(ta, 1.0).numpy(), ref(a, 1.0))
    np.testing.assert_array_equal(fn(1.0, ta).numpy(), ref(1.0, a))


def test_operator_sugar_and_unary_tests():
    x = mg.tensor([1.0, np.inf, -np.inf, np.nan, 0.0])
    assert F.isfinite(x).tolist() == [True, False, False, False, True]
    assert F.isnan(x).tolist() == [False, False, False, True, False]
    assert F.isinf(x).tolist() == [False, True, True, False, False]
    m = x > 0.5
    assert (~m).tolist() == [False, False, True, True, True]
    assert (m & F.isfinite(x)).tolist() == [True, False, False, False, False]
    assert (m | (x == 0.0)).tolist() == [True, True, False, False, True]
    assert F.logical_not(m).dtype == mg.bool_
    assert (x != 1.0).tolist() == [False, True, True, True, True]


def test_binary_needs_a_tensor_and_accepts_arrays():
    with pytest.raises(TypeError, match="add"):
        F.add(1.0, 2.0)
    y = F.mul(mg.tensor([1.0, 2.0]), np.array([3.0, 4.0], dtype=np.float32))
    assert y.tolist() == [3.0, 8.0]


@pytest.mark.parametrize("size", [7, 5000])  # both sides of kernels.clamp's array-bound path
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_relu_and_clip_large_and_small(device, size, dtype):
    x = np.linspace(-3, 3, size)
    x[:3] = [np.nan, -np.inf, np.inf]
    t = mg.tensor(x, device=device).astype(dtype)
    ref = np.asarray(t.numpy(), np.float64)
    relu, clipped = F.relu(t), F.clip(t, -1.5, 2.0)
    assert relu.dtype == t.dtype and clipped.dtype == t.dtype
    np.testing.assert_array_equal(np.asarray(relu.numpy(), np.float64),
                                  np.where(np.isnan(ref), np.nan, np.maximum(ref, 0)))
    np.testing.assert_array_equal(np.asarray(clipped.numpy(), np.float64),
                                  np.where(np.isnan(ref), np.nan, np.clip(ref, -1.5, 2.0)))


ZERO_D_OPS = {"relu": F.relu, "sigmoid": F.sigmoid, "tanh": F.tanh, "silu": F.silu,
              "softplus": F.softplus, "clip": lambda x: F.clip(x, -0.5, 0.5), "erf": F.erf,
              "gelu": F.gelu, "abs": F.abs, "exp": F.exp}


@pytest.mark.parametrize("name", sorted(ZERO_D_OPS))
def test_zero_d_input_gives_a_zero_d_array_gradient(device, name):
    # NumPy ufuncs turn 0-d arrays into scalars; a Tensor must never hold one (x.grad.numpy()
    # used to raise, and erf/gelu's in-place kernel refused the scalar in the forward).
    fn = ZERO_D_OPS[name]
    x = mg.tensor(0.3, dtype=mg.float64, device=device, requires_grad=True)
    y = fn(x)
    assert y.shape == () and not isinstance(y._data, np.generic)
    y.backward()
    assert x.grad.shape == () and not isinstance(x.grad._data, np.generic)
    assert np.asarray(x.grad.numpy()).shape == ()
    (g,) = mg.autodiff.grad(fn(x), [x])
    assert not isinstance(g._data, np.generic) and g.item() == x.grad.item()
    assert gradcheck(fn, [np.array(0.3)], device=device)


def test_erf_and_gelu_on_0d_match_math():
    assert F.erf(mg.tensor(0.7, dtype=mg.float64)).item() == pytest.approx(math.erf(0.7),
                                                                             rel=1e-14)
    g = F.gelu(mg.tensor(-1.2, dtype=mg.float64)).item()
    assert g == pytest.approx(-1.2 * 0.5 * (1 + math.erf(-1.2 / math.sqrt(2))), rel=1e-14)


@pytest.mark.parametrize("op", [F.logical_and, F.logical_or])
def test_logical_broadcast_errors_name_the_op_and_shapes(op):
    name = op.__name__
    with pytest.raises(ValueError, match=rf"{name}: shapes \(2, 3\) and \(4,\) cannot be "
                                         "broadcast"):
        op(mg.ones((2, 3)), mg.ones(4))
    assert op(mg.ones((2, 3)), mg.ones(3)).shape == (2, 3)


def test_atan2_promotes_integers_to_float():
    """int tensors give float32 (PyTorch), not the truncated int64 arctan."""
    from minigrad.functional.transcendental import atan2

    out = atan2(mg.tensor(np.array([1, 2, -3])), mg.tensor(np.array([1, 1, 1])))
    assert out.dtype == mg.float32
    np.testing.assert_allclose(out.numpy(), np.arctan2([1.0, 2.0, -3.0], 1.0), rtol=1e-6)


@pytest.mark.parametrize("name", ["atan2", "addcmul", "addcdiv"])
def test_broadcast_errors_name_the_called_op(name):
    args = (mg.tensor(np.ones((2, 3))), mg.tensor(np.ones(4)), mg.tensor(np.ones((2, 3))))
    with pytest.raises(ValueError) as e:
        getattr(mg.functional, name)(*args[:2 if name == "atan2" else 3])
    msg = str(e.value)
    assert msg.startswith(f"{name}:") and "(2, 3)" in msg and "(4,)" in msg, msg


def test_relu_gradient_at_special_values_follows_pytorch():
    # threshold_backward: 0 where the output is <= 0, else the incoming gradient; a NaN
    # activation passes its gradient and an inf gradient of a zeroed unit becomes 0
    x = mg.tensor([np.nan, 0.0, -1.0, 2.0, 3.0, -2.0], requires_grad=True)
    mg.functional.relu(x).backward(mg.tensor([1.0, 1.0, np.inf, np.inf, np.nan, np.nan]))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 0.0, np.inf, np.nan, 0.0])
