"""float16/bfloat16 ops on the CPU take the low-precision route (``kernels.unary``/``binary``:
float32 compute, one rounding) instead of NumPy's float16 loops (element by element, each step
rounded) or ml_dtypes' bfloat16 loops.

Value tests pin what the direct NumPy arithmetic got wrong (leaky_relu's slope rounded to the
dtype first, fast backwards 1-2 ulp off, bfloat16's sign of -0 in gradients); route tests check
the ops whose direct arithmetic was exact but 5-50x slower than float32.
"""

import math
import sys

import ml_dtypes
import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad._backend import lowp_cpu
from minigrad.core.function import Function

DTYPES = ["float16", "bfloat16"]
_MANT = {"float16": (10, -14), "bfloat16": (7, -126)}  # fraction bits, smallest normal exponent


def _t(values, dtype, grad=False):
    x = mg.tensor(np.asarray(values, dtype=np.float32)).astype(dtype)
    return x.detach().requires_grad_() if grad else x


def _f64(t):
    return np.asarray(t._data).astype(np.float64)


def _ulps(got, exact, dtype):
    """|got - exact| in units of ``dtype``'s last place at ``exact``."""
    bits, emin = _MANT[dtype]
    e = np.floor(np.log2(np.maximum(np.abs(exact), 2.0 ** emin)))
    return np.abs(got - exact) / 2.0 ** (e - bits)


@pytest.fixture
def routed(monkeypatch):
    """The (Function class, method) whose own code called ``lowp_cpu.compute``."""
    calls = set()
    real = lowp_cpu.compute

    def spy(f, *args):
        frame = sys._getframe(1)
        while frame is not None:
            owner = frame.f_locals.get("self")
            if isinstance(owner, Function):
                calls.add((type(owner).__name__, frame.f_code.co_name))
                break
            frame = frame.f_back
        return real(f, *args)

    monkeypatch.setattr(lowp_cpu, "compute", spy)
    return calls


# ----------------------------------------------------------------------------- values
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("slope", [0.01, 0.2, 1 / 3])
def test_leaky_relu_slope_not_rounded_to_dtype(dtype, slope, rng):
    """PyTorch multiplies by the float32 slope (opmath); NumPy's float16 product met the slope
    rounded to float16 first: 1 ulp off for about a third of the negative elements."""
    torch = pytest.importorskip("torch")
    v = np.concatenate([[-0.0, 0.0, -70.375, np.nan, -np.inf, np.inf, 65504.0],
                        rng.standard_normal(3000) * 100]).astype(np.float32)
    g = rng.standard_normal(v.size).astype(np.float32) * 100
    x, gy = _t(v, dtype, grad=True), _t(g, dtype)
    y = F.leaky_relu(x, slope)
    y.backward(gy)
    tx = torch.tensor(v).to(getattr(torch, dtype)).requires_grad_()
    ty = torch.nn.functional.leaky_relu(tx, slope)
    ty.backward(torch.tensor(g).to(tx.dtype))
    for got, want in ((y, ty), (x.grad, tx.grad)):
        assert str(got.dtype) == dtype
        want = want.detach().float().numpy()
        got = np.asarray(got._data).astype(np.float32)
        np.testing.assert_array_equal(got, want)  # NaN where PyTorch's is
        number = ~np.isnan(want)  # (PyTorch's bfloat16 NaN has its sign bit set)
        assert np.array_equal(np.signbit(got[number]), np.signbit(want[number]))  # -0.0 stays -0.0


_BACKWARDS = {  # op, its derivative in float64 from (x, y)
    "tanh": (F.tanh, lambda x, y: 1 - y * y),
    "sigmoid": (F.sigmoid, lambda x, y: y * (1 - y)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(_BACKWARDS))
def test_fast_backward_rounds_once(op, dtype, rng):
    """The fused array backwards compute in float32 and round once, as PyTorch's fused
    tanh_backward and sigmoid_backward (bfloat16; its float16 sigmoid_backward rounds each
    step): within half an ulp of the exact value. NumPy's float16 arithmetic rounded every
    step (tanh: up to 15 ulp off, sigmoid: 2)."""
    f, derivative = _BACKWARDS[op]
    v = rng.uniform(0.05, 3.0, 4000) * rng.choice([-1, 1], 4000)
    g = rng.uniform(0.5, 2.0, 4000)
    x, gy = _t(v, dtype, grad=True), _t(g, dtype)
    y = f(x)
    y.backward(gy)
    assert str(x.grad.dtype) == dtype
    exact = _f64(gy) * derivative(_f64(x), _f64(y))
    assert _ulps(_f64(x.grad), exact, dtype).max() <= 0.51


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["erf", "pow3", "pow2.5", "pow-1.5"])
def test_composite_backwards_round_as_pytorch(op, dtype, rng):
    """erf's and pow's gradients are compositions of ops in PyTorch (``k * exp(-x.pow(2)) *
    grad``, ``grad * (e * x.pow(e - 1))``), each rounded to the dtype with the Python number
    unrounded: the same bits as PyTorch's. (NumPy's float16 loops rounded the number first:
    erf was 2 ulp off; rounding the composition once gave another answer too.)"""
    torch = pytest.importorskip("torch")
    f, tf = {"erf": (F.erf, torch.erf)}.get(op, (None, None))
    if f is None:
        e = float(op[3:])
        f, tf = (lambda x: F.pow(x, e)), (lambda x: torch.pow(x, e))
    v = rng.uniform(0.05, 3.0, 4000) * (rng.choice([-1, 1], 4000) if op in ("erf", "pow3") else 1)
    g = rng.uniform(0.5, 2.0, 4000)
    x, gy = _t(v, dtype, grad=True), _t(g, dtype)
    f(x).backward(gy)
    tx = torch.tensor(v, dtype=torch.float32).to(getattr(torch, dtype)).requires_grad_()
    tf(tx).backward(torch.tensor(g, dtype=torch.float32).to(tx.dtype))
    assert str(x.grad.dtype) == dtype
    np.testing.assert_array_equal(_f64(x.grad), tx.grad.double().numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["abs", "norm1", "norm_inf"])
def test_sign_of_zero_in_gradients(op, dtype):
    """d|x|/dx at x = -0 is sign(-0) = +0, as in float32 and PyTorch: bfloat16's own sign
    (ml_dtypes) gave -0, so the gradient came out -0."""
    f = {"abs": F.abs, "norm1": lambda x: F.norm(x, 1),
         "norm_inf": lambda x: F.norm(x, math.inf)}[op]
    x = _t([-0.0, -0.0] if op == "norm_inf" else [-0.0, 0.0, -2.0, 3.0], dtype, grad=True)
    y = f(x)
    y.backward(mg.ones_like(y))
    g = np.asarray(x.grad._data).astype(np.float32)
    assert str(x.grad.dtype) == dtype
    assert not np.signbit(g[0]) and g[0] == 0
    if op != "norm_inf":
        np.testing.assert_array_equal(g, [0.0, 0.0, -1.0, 1.0])


# ----------------------------------------------------------------------------- routes
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["floor", "ceil", "trunc", "round"])
def test_rounding_routes(routed, op, dtype):
    """Exact either way, but NumPy's float16 floor/rint were ~50x float32's time (bfloat16's
    ~15x)."""
    v = np.array([-0.0, 0.0, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7, np.nan, np.inf, -np.inf,
                  65504.0, 1e-3], np.float32)
    x = _t(v, dtype)
    y = getattr(F, op)(x)
    assert (op.title(), "forward") in routed
    assert str(y.dtype) == dtype
    ref = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.rint}[op]
    want = ref(_f64(x))
    got = _f64(y)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


_ROUTED_BACKWARDS = {  # op, the Function whose backward computes its array gradient
    "copysign": (lambda a, b: F.copysign(a, b), "Copysign"),
    "fmod": (lambda a, b: F.fmod(a, b), "Fmod"),
    "remainder": (lambda a, b: F.remainder(a, b), "Remainder"),
    "max": (lambda a, b: F.max(a * b, axis=0), "Max"),
    "min": (lambda a, b: F.min(a * b, axis=0), "Min"),
    "leaky_relu": (lambda a, b: F.leaky_relu(a), "LeakyReLUFunction"),
    # the derivative in float32, the product with gy rounded once (no lowp_cpu.compute call)
    "gelu": (lambda a, b: F.gelu(a), None),
    "silu": (lambda a, b: F.silu(a), None),
    "softplus": (lambda a, b: F.softplus(a), None),
    "elu": (lambda a, b: F.elu(a), None),
    "mish": (lambda a, b: F.mish(a), None),
    "logsigmoid": (lambda a, b: F.logsigmoid(a), None),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(_ROUTED_BACKWARDS))
def test_fast_backward_routes(routed, op, dtype, rng):
    """Fast backwards whose direct float16 arithmetic was exact (or already rounded as now)
    but ran element by element: 3-15x the float32 backward."""
    f, owner = _ROUTED_BACKWARDS[op]
    a = _t(rng.uniform(-3, 3, (6, 5)), dtype, grad=True)
    b = _t(rng.uniform(0.5, 2, (6, 5)) * rng.choice([-1, 1], (6, 5)), dtype, grad=True)
    y = f(a, b)
    routed.clear()
    y.backward(mg.ones_like(y))
    assert owner is None or (owner, "backward") in routed
    assert str(a.grad.dtype) == dtype
    # the same values as the float32 gradient at the same (rounded) inputs, to the dtype's
    # rounding of the derivative and of the product (at most one ulp)
    a32 = mg.tensor(_f64(a).astype(np.float32), requires_grad=True)
    y32 = f(a32, mg.tensor(_f64(b).astype(np.float32)))
    y32.backward(mg.ones_like(y32))
    assert _ulps(_f64(a.grad), _f64(a32.grad), dtype).max() <= 1.01


@pytest.mark.parametrize("dtype", DTYPES)
def test_prelu_forward_routes(routed, dtype, rng):
    """``w * x`` of two float16 arrays: exact either way, float16's loop ~40x float32's."""
    v = np.concatenate([[-0.0, 0.0, np.nan, -np.inf], rng.standard_normal(60)])
    x = _t(v.reshape(8, 8), dtype)
    w = _t(rng.uniform(0.1, 0.5, 8), dtype)
    y = F.prelu(x, w)
    assert ("PReLUFunction", "forward") in routed
    assert str(y.dtype) == dtype
    xd, wd = _f64(x), _f64(w)[None, :]
    want = np.where(xd > 0, xd, xd * wd).astype(np.float32).astype(x._data.dtype)
    np.testing.assert_array_equal(_f64(y), want.astype(np.float64))
    assert np.signbit(_f64(y)[0, 0])  # -0.0 stays -0.0


_TORCH_BACKWARDS = {  # fused *_backward kernels in PyTorch: gy * derivative, rounded once
    "elu": (lambda x: F.elu(x, 0.7), "elu", {"alpha": 0.7}),
    "celu": (lambda x: F.celu(x, 1.3), "celu", {"alpha": 1.3}),
    "selu": (F.selu, "selu", {}),
    "softplus": (lambda x: F.softplus(x, 2.0), "softplus", {"beta": 2.0}),
    "silu": (F.silu, "silu", {}),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(_TORCH_BACKWARDS))
def test_fused_backwards_round_once_as_pytorch(op, dtype, rng):
    """The product of gy and the float32 derivative is rounded once, as PyTorch's fused
    elu/softplus/silu backward kernels: bit-identical to them (rounding the derivative to the
    dtype first was 1 ulp off for a sixth to a half of the elements)."""
    torch = pytest.importorskip("torch")
    f, name, kw = _TORCH_BACKWARDS[op]
    v, g = rng.standard_normal(4000) * 3, rng.standard_normal(4000)
    x, gy = _t(v, dtype, grad=True), _t(g, dtype)
    f(x).backward(gy)
    tx = torch.tensor(v, dtype=torch.float32).to(getattr(torch, dtype)).requires_grad_()
    getattr(torch.nn.functional, name)(tx, **kw).backward(
        torch.tensor(g, dtype=torch.float32).to(tx.dtype))
    np.testing.assert_array_equal(_f64(x.grad), tx.grad.double().numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("number", [0.1, 1 / 3, 1e-5, 70000.0])
def test_products_and_quotients_keep_a_python_number_in_float32(number, dtype, rng):
    """PyTorch multiplies and divides a half-precision tensor by a Python number in float32
    (opmath) and rounds once; minigrad rounded the number to the dtype first (NumPy's rule):
    a third of the elements 1 ulp off, and x / 70000.0 was x / inf = 0 in float16. The
    gradient of x * k meets k the same way."""
    torch = pytest.importorskip("torch")
    v = rng.standard_normal(4000) * 3
    x = _t(v, dtype, grad=True)
    tx = torch.tensor(v, dtype=torch.float32).to(getattr(torch, dtype)).requires_grad_()
    for y, ty in ((x * number, tx * number), (number * x, number * tx), (x / number, tx / number)):
        assert str(y.dtype) == dtype
        np.testing.assert_array_equal(_f64(y), ty.detach().double().numpy())
    (x * number).backward(mg.ones_like(x))
    (tx * number).backward(torch.ones_like(tx))
    np.testing.assert_array_equal(_f64(x.grad), tx.grad.double().numpy())
    # k / x: the quotient of the unrounded k, rounded once (PyTorch: reciprocal(x) * k, within
    # one ulp of it); finite where float16(70000.0) = inf made it inf
    q = _f64(number / x.detach())
    exact = number / _f64(x)
    top = float(ml_dtypes.finfo(getattr(ml_dtypes, dtype, np.float16)).max)
    fits = np.abs(exact) <= top
    assert _ulps(q[fits], exact[fits], dtype).max() <= 0.5
    # past the largest number by half an ulp or more: overflow, as PyTorch's
    beyond = np.abs(exact) >= top * (1 + 2.0 ** -(_MANT[dtype][0] + 1))
    assert np.isinf(q[beyond]).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_leaky_relu_recorded_backward_equals_the_fast_one(dtype, rng):
    """Under create_graph the gradient is gy or gy * slope (the slope unrounded) as in the
    fast backward; it was gy * (rounded slope array) there: 1 ulp off for a sixth of them."""
    v, g = rng.standard_normal(3000) * 30, rng.standard_normal(3000) * 10
    grads = []
    for create in (False, True):
        x, gy = _t(v, dtype, grad=True), _t(g, dtype)
        (gx,) = mg.autograd.grad([F.leaky_relu(x, 0.1)], [x], [gy], create_graph=create)
        grads.append(_f64(gx))
    np.testing.assert_array_equal(grads[1], grads[0])
