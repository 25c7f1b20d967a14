"""The last float16/bfloat16 CPU work that went through NumPy's element-by-element float16 paths
(an audit after the casts moved to the backend): batch norm's backend casts, the comparisons in
the hard activations' and the ELU family's backwards (and PReLU's), and prod's casting
reduction. They now take the vectorised casts and compare in float32; the results must be the
bits the old code gave.

Each test compares, bit for bit (NaN payloads, infinities, signed zeros and dtype included), with
the old formula written out in NumPy (each 16-bit op computed in float32 on exact copies and
rounded once, as minigrad's elementwise ops compute it; the comparisons NumPy's own on the 16-bit
arrays), or with the same op on an exact float32 copy rounded once where the op computes so.
The 16-bit activations run over every bit pattern of the dtype (all specials, the thresholds
+-3, 0, 6, +-1 and their neighbours); float32 and float64 over random values with the
thresholds, their neighbours and the specials.
"""

import math
import operator
import warnings

import ml_dtypes
import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad._backend import batch_norm as BN
from minigrad._backend import lowp_cpu
from minigrad.functional import activation

F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
LOW = pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])
ALL = pytest.mark.parametrize("dtype", [F16, BF16, F32, F64],
                              ids=["float16", "bfloat16", "float32", "float64"])


@pytest.fixture(autouse=True)
def _quiet():
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow in casts
        yield


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 3.0, -3.0, 6.0, 1.0, -1.0, 65504.0, -7e4, 1e-7,
            -6e-8, 0.5]


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    u = f"u{got.dtype.itemsize}"
    g, w = np.ascontiguousarray(got).view(u), np.ascontiguousarray(want).view(u)
    bad = np.argwhere(g != w)
    assert bad.size == 0, f"{bad.shape[0]} differ, e.g. at {bad[:3].tolist()}: " \
        f"{[(got[tuple(i)], want[tuple(i)]) for i in bad[:3]]}"


def noise(shape, seed, dtype=F32, scale=1.0, specials=True):
    """Random values in ``dtype`` with SPECIALS sprinkled in."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * scale
    if specials:
        flat = x.reshape(-1)
        at = rng.choice(flat.size, size=min(flat.size, 3 * len(SPECIALS)), replace=False)
        flat[at] = np.resize(np.array(SPECIALS), at.size)
    return x.astype(dtype)


def activation_input(dtype):
    """Every bit pattern of a 16-bit dtype (256 x 256); else random values with the thresholds,
    their neighbours on both sides and the specials."""
    if dtype.itemsize == 2:
        return np.arange(1 << 16, dtype=np.uint16).view(dtype).reshape(256, 256)
    x = noise((256, 256), 7, dtype, scale=4.0)
    kinks = np.array([-3.0, 3.0, 0.0, -0.0, 6.0, -1.0, 1.0, 2.0, -2.0, 0.5, np.inf, -np.inf,
                      np.nan], dtype)
    near = np.concatenate([kinks, np.nextafter(kinks, dtype.type(np.inf)),
                           np.nextafter(kinks, dtype.type(-np.inf))])
    x.reshape(-1)[:near.size] = near
    return x


def leaf(a, grad=True):
    t = mg.tensor(a)
    if t.dtype != a.dtype:
        t = t.astype(a.dtype)
    t = t.detach()
    t.requires_grad = grad
    return t


def c(value, dtype):
    """A Python number as minigrad's ops meet it with an array of ``dtype`` (NumPy's weak
    scalars; bfloat16's lifted to bfloat16)."""
    return dtype.type(value)


def opmath(value, dtype):
    """A Python number as a product or quotient meets an array of ``dtype``: kept in float32
    for float16/bfloat16 (PyTorch's opmath), else in the dtype."""
    return np.float32(value) if dtype.itemsize == 2 else dtype.type(value)


def wide_of(a):
    return a if a.dtype == F64 else a.astype(F32)


def op16(f, a, b):
    """``f(a, b)`` as minigrad's elementwise ops compute it in ``a``'s dtype: a 16-bit dtype in
    float32 on exact copies, rounded once (which NaN a product of two NaNs keeps is float32's
    rule, not necessarily NumPy's float16 loop's), others as they are."""
    dt = a.dtype
    if dt.itemsize != 2:
        return f(a, b)
    return np.asarray(f(a.astype(F32), np.asarray(b).astype(F32))).astype(dt)


# ----------------------------------------------------------------------- the activations
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946

# name -> (alpha, scale, input_scale), as ELUFunction takes them
ELU_ARGS = {"elu": (1.0, 1.0, 1.0), "selu": (_SELU_ALPHA, _SELU_SCALE, 1.0),
            "celu": (2.0, 1.0, 0.5)}


def old_hardswish_grad(x, gy):
    dt = x.dtype
    low, inside = x <= -3, (x > -3) & (x < 3)
    t = op16(operator.mul, gy, op16(operator.add, op16(operator.mul, x, opmath(1 / 3, dt)),
                                    c(0.5, dt)))
    return np.where(low, dt.type(0), np.where(inside, t, gy))


def old_hardsigmoid_grad(x, gy):
    dt = x.dtype
    inside = (x > -3) & (x < 3)
    return np.where(inside, op16(operator.mul, gy, opmath(1 / 6, dt)), dt.type(0))


def old_hardtanh_grad(lo, hi):
    def grad(x, gy):
        keep = ~((x <= lo) | (x >= hi))  # NumPy's own comparison of x with the bounds
        return np.where(keep, gy, gy.dtype.type(0))
    return grad


def old_elu_grad(name):
    alpha, scale, input_scale = ELU_ARGS[name]

    def grad(x, gy):
        pos = ~(x <= 0)
        k = scale * alpha * input_scale
        xd = wide_of(x)
        d = np.where(pos, scale, np.exp(np.minimum(xd, 0) * input_scale) * k)
        return (wide_of(gy) * d).astype(gy.dtype)  # rounded once, as PyTorch's elu_backward
    return grad


# name -> (the op, the old gradient formula)
ACTIVATIONS = {
    "hardswish": (F.hardswish, old_hardswish_grad),
    "hardsigmoid": (F.hardsigmoid, old_hardsigmoid_grad),
    "hardtanh": (F.hardtanh, old_hardtanh_grad(-1.0, 1.0)),
    "hardtanh(-2,0.5)": (lambda x: F.hardtanh(x, -2.0, 0.5), old_hardtanh_grad(-2.0, 0.5)),
    # bounds that are no float16/bfloat16 value keep NumPy's comparison (float16 rounds them to
    # float16 first)
    "hardtanh(-0.1,0.1)": (lambda x: F.hardtanh(x, -0.1, 0.1), old_hardtanh_grad(-0.1, 0.1)),
    "hardtanh(-1e6,3e38)": (lambda x: F.hardtanh(x, -1e6, 3e38), old_hardtanh_grad(-1e6, 3e38)),
    "relu6": (F.relu6, old_hardtanh_grad(0.0, 6.0)),
    "elu": (F.elu, old_elu_grad("elu")),
    "selu": (F.selu, old_elu_grad("selu")),
    "celu": (lambda x: F.celu(x, 2.0), old_elu_grad("celu")),
}


@ALL
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_forward_and_grad(name, dtype):
    """Forward: the float32 op on the exact copy, rounded once (the 16-bit forwards compute so);
    gradient: the old formula, its masks NumPy's comparisons of the 16-bit arrays."""
    fn, old_grad = ACTIVATIONS[name]
    xa = activation_input(dtype)
    x = leaf(xa)
    y = fn(x)
    want = fn(leaf(wide_of(xa), grad=False))._data
    same_bits(y._data, want.astype(dtype) if dtype.itemsize == 2 else want)
    gy = noise(xa.shape, 11, dtype, scale=2.0)
    y.backward(mg.tensor(gy))
    same_bits(x.grad._data, old_grad(xa, gy))


@pytest.fixture
def old_comparisons(monkeypatch):
    """The activations' backwards as they were: NumPy's comparisons on the 16-bit arrays."""
    def patch():
        monkeypatch.setattr(activation, "cpu_wide", lambda a: a)
        monkeypatch.setattr(activation, "_comparable", lambda a, *bounds: a)
    return patch


@LOW
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_create_graph_grad(name, dtype, old_comparisons):
    """The recorded (create_graph) backward: its masks are the same, so are its bits (and the
    second derivative's)."""
    fn, _ = ACTIVATIONS[name]
    xa = activation_input(dtype)
    gy = mg.tensor(noise(xa.shape, 12, dtype, scale=2.0))

    def grads():
        x = leaf(xa)
        (g,) = mg.autograd.grad(fn(x), [x], grad_outputs=gy, create_graph=True)
        if not g.requires_grad:  # piecewise linear in x: no second derivative to record
            return g._data, None
        (gg,) = mg.autograd.grad(g.sum(), [x], allow_unused=True)
        return g._data, None if gg is None else gg._data

    new = grads()
    old_comparisons()
    old = grads()
    same_bits(new[0], old[0])
    if old[1] is not None:
        same_bits(new[1], old[1])


@ALL
def test_prelu_grads(dtype):
    """PReLU's backward mask (x > 0) compared in float32: the old formula's gradients."""
    x = activation_input(dtype).reshape(64, 4, 256)
    wa = np.array([0.25, -0.0, np.inf, -1.5], dtype)
    gy = noise(x.shape, 13, dtype)
    xt, w = leaf(x), leaf(wa)
    F.prelu(xt, w).backward(mg.tensor(gy))
    pos = x > 0
    wb = wa.reshape(1, 4, 1)
    same_bits(xt.grad._data, np.where(pos, gy, op16(operator.mul, gy, wb)))
    t = np.where(pos, dtype.type(0), op16(operator.mul, gy, x))
    acc = F64 if dtype == F64 else F32
    same_bits(w.grad._data, np.sum(t.astype(acc), axis=(0, 2), dtype=acc).astype(dtype))


@LOW
@pytest.mark.parametrize("bound", [-3, 3, 0, -0.0, 6, -1, 1.0, 2.5, -2.0, 0.5, 65504.0,
                                   math.inf, -math.inf])
@pytest.mark.parametrize("op", [operator.le, operator.lt, operator.ge, operator.gt,
                                operator.eq], ids=["le", "lt", "ge", "gt", "eq"])
def test_float32_comparison_is_numpys(op, bound, dtype):
    """The reason the masks are the same: a bound that is a value of the dtype compares with the
    exactly widened array as with the 16-bit one, over every bit pattern."""
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    np.testing.assert_array_equal(op(lowp_cpu.widen(x), bound), op(x, bound))


@LOW
def test_comparable_keeps_inexact_bounds(dtype):
    x = activation_input(dtype)
    for bounds in [(0.1,), (-1.0, 0.1), (1e6,), (math.nan,), (10 ** 400,)]:
        assert activation._comparable(x, *bounds) is x
    got = activation._comparable(x, -3, 3.0, math.inf)
    assert got.dtype == F32
    same_bits(got, x.astype(F32))
    y = np.arange(10.0)
    assert activation._comparable(y, 0.1) is y


# ----------------------------------------------------------------------- batch norm's backend
def old_moments(x, axes):
    xf = x.astype(BN.acc_dtype(x.dtype), copy=False)
    mean = xf.mean(axis=axes, keepdims=True)
    centred = xf - mean
    return mean, (centred * centred).mean(axis=axes, keepdims=True)


def bn_inputs(dtype, layout, seed):
    """x (C = 6) with specials, of 9216 elements (above the NumPy cast kernels' 8192)."""
    x = noise((8, 6, 16, 12), seed, dtype, scale=3.0)
    x[:, 2] = noise((8, 16, 12), seed + 1, dtype, specials=False) * dtype.type(9000)  # overflows
    if layout == "strided":
        x = noise((8, 6, 16, 24), seed, dtype, scale=3.0)[..., ::2]
    elif layout == "F":
        x = np.asfortranarray(x)
    return x


@ALL
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_batch_norm_backend_functions(dtype, layout, f16c):
    acc = BN.acc_dtype(dtype)
    axes = (0, 2, 3)
    x = bn_inputs(dtype, layout, 20)
    gy = bn_inputs(dtype, layout, 30)
    mean, var = BN.moments(x, axes)
    om, ov = old_moments(x, axes)
    same_bits(mean, om)
    same_bits(var, ov)

    rng = np.random.default_rng(40)
    pshape = (1, 6, 1, 1)
    scale = (rng.standard_normal(pshape) * 3).astype(acc)
    shift = rng.standard_normal(pshape).astype(acc)
    same_bits(BN.affine_apply(x, scale, shift),
              (x.astype(acc, copy=False) * scale + shift).astype(x.dtype, copy=False))

    s1, s2 = BN.backward_sums(gy, x, mean, axes)
    gyf = gy.astype(acc, copy=False)
    same_bits(s1, gyf.sum(axis=axes, keepdims=True))
    same_bits(s2, (gyf * (x.astype(acc, copy=False) - mean)).sum(axis=axes, keepdims=True))

    k, a, b = (rng.standard_normal(pshape).astype(acc) for _ in range(3))
    want = k * (gy.astype(acc, copy=False) - a - (x.astype(acc, copy=False) - mean) * b)
    same_bits(BN.grad_input(gy, x, mean, k, a, b), np.asarray(want).astype(x.dtype, copy=False))


@LOW
def test_instance_norm_running_stats(dtype, f16c):
    """instance_norm hands the 16-bit input to the backend's moments itself."""
    x = noise((4, 6, 48, 50), 50, dtype, scale=2.0)
    rm, rv = mg.tensor(np.zeros(6, np.float32)), mg.tensor(np.ones(6, np.float32))
    F.instance_norm(mg.tensor(x), rm, rv, use_input_stats=True, momentum=0.3)
    mean, var = old_moments(x.reshape(4, 6, -1), (2,))
    wm, wv = np.zeros(6, np.float32), np.ones(6, np.float32)
    n = 48 * 50
    BN.running_update(wm, mean.mean(0), 0.3, 1.0)
    BN.running_update(wv, var.mean(0), 0.3, n / (n - 1))
    same_bits(rm._data, wm)
    same_bits(rv._data, wv)


# ----------------------------------------------------------------------------------- prod
def prod_input(shape, seed, dtype, zeros=False):
    """Factors near 1 (long products stay finite and their rounding depends on the order), a few
    large and tiny ones (overflow or underflow part way: the order decides inf or 0), the
    specials, and NaNs of different payloads and signs (which one survives depends on the
    order)."""
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    x = 1 + rng.standard_normal(n) * 0.05
    at = rng.choice(n, size=n // 20, replace=False)
    x[at] = np.exp(rng.standard_normal(at.size) * 4) * rng.choice([-1, 1], at.size)
    sp = [np.inf, -np.inf, np.nan, 65504.0, -1e-7, 6e-8, 3.0] + ([0.0, -0.0] if zeros else [])
    at = rng.choice(n, size=n // 200, replace=False)
    x[at] = rng.choice(sp, at.size)
    x = x.astype(dtype).reshape(shape)
    if dtype.itemsize == 2:  # NaN payloads
        u = x.view(np.uint16)
        nan = np.isnan(x.astype(F32))
        inf = 0x7C00 if dtype == F16 else 0x7F80
        top = 0x400 if dtype == F16 else 0x80
        k = int(nan.sum())
        u[nan] = (rng.integers(0, 2, k) << 15 | inf | rng.integers(1, top, k)).astype(np.uint16)
    return x


LAYOUTS = {
    "C": lambda t: t,
    "F": lambda t: t.T,                         # F-ordered: widened in its own layout
    "permuted": lambda t: t.permute(1, 0, 2),   # neither: keeps the casting reduction
    "reversed": lambda t: t[::-1],
    "step": lambda t: t[:, ::2],
}
PROD_AXES = [None, 0, 1, 2, (0, 1), (0, 2), (1, 2)]


@ALL
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("axis", PROD_AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_prod_forward(dtype, layout, axis, keepdims, f16c):
    """The old forward itself: NumPy's casting reduction np.prod(x, dtype=float32) rounded once
    (more than 8192 elements per product in places: NumPy's buffer size)."""
    xa = prod_input((12, 40, 30), 60, dtype)
    v = LAYOUTS[layout](mg.tensor(xa))
    va = v._data
    y = F.prod(v, axis=axis, keepdims=keepdims)
    acc = F64 if dtype == F64 else F32
    want = np.asarray(np.prod(va, axis=axis, keepdims=keepdims, dtype=acc))
    same_bits(y._data, want.astype(dtype) if dtype != acc else want)


@LOW
def test_prod_forward_long_and_4d(dtype, f16c):
    for shape, axis in [((40000,), None), ((3, 9000), 1), ((9000, 3), 0),
                        ((4, 5, 6, 7), (0, 2)), ((4, 5, 6, 7), (1, 3)), ((4, 5, 6, 7), None)]:
        xa = prod_input(shape, 61, dtype)
        for arr in (xa, np.asfortranarray(xa)):
            y = F.prod(mg.tensor(xa).T if arr is not xa else mg.tensor(xa), axis=axis)
            src = xa.T if arr is not xa else xa
            want = np.asarray(np.prod(src, axis=axis, dtype=F32)).astype(dtype)
            same_bits(y._data, want)


@LOW
def test_prod_data_is_order_sensitive(dtype):
    """The forward tests can see a change of order: multiplying the same factors in reverse
    gives other bits for many of the products."""
    xa = lowp_cpu.widen(prod_input((12, 40, 30), 60, dtype))
    fwd = np.prod(xa, axis=1, dtype=F32)
    rev = np.prod(xa[:, ::-1], axis=1, dtype=F32)
    assert (fwd.view(np.uint32) != rev.view(np.uint32)).sum() > 20


def old_prod_grad(x, gy, axes):
    """The old backward: g * y / x in x's dtype (no zeros), or g times the product of the
    other factors (prefix times suffix in float32, rounded once)."""
    dt = x.dtype
    acc = F64 if dt == F64 else F32
    keep = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    y = np.asarray(np.prod(x, axis=axes, dtype=acc)).astype(dt)
    g = np.broadcast_to(gy.reshape(keep), x.shape)
    if not (x == 0).any():
        return op16(operator.truediv,
                    op16(operator.mul, g, np.broadcast_to(y.reshape(keep), x.shape)), x)
    rest = [i for i in range(x.ndim) if i not in axes]
    z = np.transpose(x, rest + list(axes)).reshape(
        tuple(x.shape[i] for i in rest) + (-1,)).astype(acc)
    ones = np.ones(z.shape[:-1] + (1,), acc)
    before = np.cumprod(np.concatenate([ones, z[..., :-1]], -1), -1)
    after = np.flip(np.cumprod(np.flip(np.concatenate([z[..., 1:], ones], -1), -1), -1), -1)
    others = (before * after).reshape(tuple(x.shape[i] for i in rest) +
                                      tuple(x.shape[a] for a in axes))
    inverse = [0] * x.ndim
    for pos, a in enumerate(rest + list(axes)):
        inverse[a] = pos
    return op16(operator.mul, g, np.transpose(others, inverse).astype(dt))


@ALL
@pytest.mark.parametrize("zeros", [False, True], ids=["no-zeros", "zeros"])
@pytest.mark.parametrize("axis", [1, (0, 2)], ids=str)
def test_prod_grad(dtype, zeros, axis):
    xa = prod_input((12, 40, 30), 62, dtype, zeros=zeros)
    assert bool((xa == 0).any()) == zeros
    x = leaf(xa)
    y = F.prod(x, axis=axis)
    gy = noise(y.shape, 63, dtype)
    y.backward(mg.tensor(gy))
    axes = (axis,) if isinstance(axis, int) else axis
    same_bits(x.grad._data, old_prod_grad(xa, gy, axes))
