"""The low-precision CPU kernel policy (``_backend/lowp_cpu.py``): float16/bfloat16 ops compute
in float32 and round once, the dtypes stay, and the values are those of NumPy's own
half-precision loops (which minigrad used before): the same bits for ``+ - * /`` and ``sqrt``
(and for every selection and comparison, up to the sign of a zero tie), within one ulp for
transcendental functions. Random inputs plus the special values: infinities, NaN, signed zeros,
subnormals, the largest finite number and sums and products that overflow to inf."""

import warnings

import ml_dtypes
import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad._backend import casts, kernels, lowp_cpu

F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
LOW = [F16, BF16]
N = 3 * (1 << 15) + 123   # several blocks of the block kernels, and a ragged last one


@pytest.fixture(autouse=True)
def _quiet():
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def specials(dtype):
    """Special values of ``dtype``, as float32."""
    fi = ml_dtypes.finfo(dtype)
    tiny, sub = float(fi.smallest_normal), float(fi.smallest_subnormal)
    big = float(fi.max)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, sub, -sub,
                     3 * sub, tiny, -tiny, tiny - sub, big, -big, big / 2, 1.5, 0.1, -2.5,
                     1e-3, 7.0, 1e4, -6e4], np.float32)


def values(dtype, n=N, seed=0, scale=3.0):
    """``n`` values of ``dtype``: specials, then normal noise over several binades, then a few
    subnormals and huge numbers."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * scale * np.exp2(rng.integers(-12, 12, n))).astype(np.float32)
    sp = specials(dtype)[:n]
    x[:sp.size] = sp
    x[rng.integers(0, n, 50)] = sp[rng.integers(0, sp.size, 50)]
    return x.astype(dtype)


def bits(a):
    return a.view(f"u{a.dtype.itemsize}")


def same_bits(a, b):
    """Equal bit patterns, any NaN matching any NaN."""
    assert a.dtype == b.dtype and a.shape == b.shape
    nan_a, nan_b = np.isnan(a.astype(np.float32)), np.isnan(b.astype(np.float32))
    np.testing.assert_array_equal(nan_a, nan_b)
    ok = nan_a | (bits(a) == bits(b))
    assert ok.all(), (a[~ok][:5], b[~ok][:5])


def same_values(a, b):
    """Equal values (zeros of either sign equal), NaN where NaN."""
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.astype(np.float32), b.astype(np.float32))


def ulps(a, b):
    """Distance in ulps between two arrays of one 16-bit float dtype (NaN must match)."""
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(fa), np.isnan(fb))
    ka, kb = (bits(x).astype(np.int64) for x in (a, b))
    ka = np.where(ka >= 0x8000, 0x8000 - ka, ka)
    kb = np.where(kb >= 0x8000, 0x8000 - kb, kb)
    d = np.abs(ka - kb)
    d[np.isnan(fa)] = 0
    return int(d.max(initial=0))


def run(fn, *arrays):
    """``fn`` over Tensors made of ``arrays`` (Python numbers pass as they are)."""
    args = [mg.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]
    return fn(*args).numpy()


# ------------------------------------------------------------------------------------ casts
@pytest.fixture(params=["f16c", "numpy"])
def cast_kernels(request, monkeypatch):
    """Each float16 cast test runs on the C extension's F16C kernels (where they were built and
    the CPU has F16C) and on their NumPy twin."""
    if request.param == "f16c" and not lowp_cpu.F16C:
        pytest.skip("the _f16c extension is not built here, or the CPU lacks F16C")
    monkeypatch.setattr(lowp_cpu, "F16C", request.param == "f16c")
    return request.param


def test_float16_widen_is_astype_for_every_bit_pattern(cast_kernels):
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(F16)
    for a in (every, every[5:], every[:0xFC05]):  # ragged ends: quiet, then signalling NaNs
        same = bits(lowp_cpu.widen(a)) == bits(a.astype(np.float32))
        assert same.all()


def test_bfloat16_widen_is_astype_for_every_bit_pattern(cast_kernels):
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16)
    for a in (every, every[5:]):  # ragged end
        assert (bits(lowp_cpu.widen(a)) == bits(a.astype(np.float32))).all()


def _float32_probe():
    """float32 bit patterns: random, and every float16 value and halfway point +-1 and +-2
    ulps of float32 (where rounding to nearest even decides), around every binade."""
    rng = np.random.default_rng(1)
    rand = rng.integers(0, 1 << 32, 1 << 20, dtype=np.int64)
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(F16).astype(np.float32)
    h = bits(h[np.isfinite(h)]).astype(np.int64)
    near = [h + d for d in (-0x1002, -0x1001, -0x1000, -0xFFF, -1, 0, 1, 0xFFF, 0x1000,
                            0x1001, 0x1002)]
    fixed = [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC12345, 0x80000000, 0, 1,
             0x80000001, 0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x47800000,
             0x7F7FFFFF, 0x387FE000, 0x387FF000, 0x33000000, 0x33000001, 0x32FFFFFF]
    allb = np.concatenate([rand, *near, np.array(fixed, np.int64)]) & 0xFFFFFFFF
    return allb.astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("finite", [True, False], ids=["finite", "with-inf-nan-overflow"])
def test_float16_narrow_is_astype(cast_kernels, finite):
    # finite values that stay finite take the F16C kernel whole; an array holding an inf, a NaN
    # or a value that overflows is handed back to the NumPy kernel (NumPy's NaN bits, warning)
    x = _float32_probe()
    if finite:
        x = x[np.abs(x) < 65520]
        if cast_kernels == "f16c":
            assert lowp_cpu._native_cast(x, F16) is not None
    same_bits_exact = bits(lowp_cpu.narrow(x, F16)) == bits(x.astype(F16))
    assert same_bits_exact.all(), x[~same_bits_exact][:5]


def _bfloat16_probe():
    """float32 bit patterns: random, and every bfloat16 value and the points around its
    halfway to the next one (ties round to even), subnormals and overflow included."""
    rand = np.random.default_rng(4).integers(0, 1 << 32, 1 << 20, dtype=np.int64)
    top = np.arange(1 << 16, dtype=np.int64) << 16
    near = [top + d for d in (0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF)]
    return (np.concatenate([rand, *near]) & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("finite", [True, False], ids=["no-nan", "with-nan"])
def test_bfloat16_narrow_is_astype(cast_kernels, finite):
    # NaN-free arrays take the C kernel whole (infinities and overflow included); one NaN hands
    # the array to ml_dtypes, whose NaN is its own
    x = _bfloat16_probe()
    if finite:
        x = x[~np.isnan(x)]
        if cast_kernels == "f16c":
            assert lowp_cpu._native_cast(x, BF16) is not None
    for part in (x, x[3:]):  # a ragged tail for the vector loop
        same = bits(lowp_cpu.narrow(part, BF16)) == bits(part.astype(BF16))
        assert same.all(), part[~same][:5]


@pytest.mark.parametrize("shape,order", [((N,), "C"), ((300, 400), "F"), ((5000,), "C"),
                                         ((0,), "C"), ((), "C"), ((257, 513), "C")])
def test_casts_keep_shape_and_layout(shape, order, cast_kernels):
    x = np.asarray(np.random.default_rng(2).standard_normal(shape), np.float32, order=order)
    for y, ref in ((lowp_cpu.narrow(x, F16), x.astype(F16)),
                   (lowp_cpu.widen(x.astype(F16)), x.astype(F16).astype(np.float32))):
        assert y.shape == ref.shape and y.dtype == ref.dtype
        assert y.flags.f_contiguous == ref.flags.f_contiguous
        assert (bits(y) == bits(ref)).all()


def test_casts_of_strided_views(cast_kernels):
    x = np.random.default_rng(3).standard_normal((400, 300)).astype(np.float32)[::2, 1::3]
    same_bits(casts.astype(x, F16), x.astype(F16))
    h = x.astype(F16)
    assert (bits(casts.astype(h[::3], np.float32)) == bits(h[::3].astype(np.float32))).all()


def test_narrow_overflow_warns_as_astype(cast_kernels):
    x = np.full(N, 70000.0, np.float32)
    with np.errstate(over="warn"), pytest.warns(RuntimeWarning, match="overflow"):
        y = lowp_cpu.narrow(x, F16)
    assert np.isinf(y.astype(np.float32)).all()


# ------------------------------------------------------------------------- + - * / and sqrt
BIT_EXACT_BINARY = {"add": (F.add, np.add), "sub": (F.sub, np.subtract),
                    "mul": (F.mul, np.multiply), "div": (F.div, np.divide)}


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", sorted(BIT_EXACT_BINARY))
def test_arithmetic_is_bit_identical(dtype, name):
    op, ref = BIT_EXACT_BINARY[name]
    a, b = values(dtype, seed=1), values(dtype, seed=2)
    b[:40] = values(dtype, 40, seed=3)[::-1]  # specials against specials
    a[40:60] = 6e4 if dtype == F16 else 3e38   # overflow to inf
    b[40:60] = 6e4 if dtype == F16 else 3e38
    out = run(op, a, b)
    assert out.dtype == dtype
    same_bits(out, ref(a, b))


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", sorted(BIT_EXACT_BINARY))
@pytest.mark.parametrize("scalar", [0.1, 3, -2.5, 1e-7])
def test_arithmetic_with_a_python_number(dtype, name, scalar):
    """+ and - meet the number rounded to the dtype (NumPy's weak scalar rule, minigrad's for
    bfloat16, and PyTorch's); x * k, k * x and x / k keep it in float32 and round the result
    once, PyTorch's opmath (NumPy's rule, x / float16(70000.0) = x / inf, was up to 100% of
    elements away from PyTorch); k / x too (the quotient rounded once; PyTorch's is
    reciprocal(x) * k, docs/migrating.md)."""
    op, ref = BIT_EXACT_BINARY[name]
    a = values(dtype, seed=4)
    s = dtype.type(scalar)
    out, out_r = run(op, a, scalar), run(op, scalar, a)
    assert out.dtype == out_r.dtype == dtype
    if name in ("mul", "div"):
        with np.errstate(all="ignore"):
            same_bits(out, ref(a.astype(np.float32), np.float32(scalar)).astype(dtype))
    else:
        same_bits(out, ref(a, s))
    if name == "mul":
        same_bits(out_r, out)
    elif name == "div":
        with np.errstate(all="ignore"):
            same_bits(out_r, ref(np.float32(scalar), a.astype(np.float32)).astype(dtype))
    else:
        same_bits(out_r, ref(s, a))


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name,op,ref", [("sqrt", F.sqrt, np.sqrt), ("neg", F.neg, np.negative),
                                         ("square", F.square, np.square)])
def test_unary_arithmetic_is_bit_identical(dtype, name, op, ref):
    a = values(dtype, seed=5)
    out = run(op, a)
    assert out.dtype == dtype
    same_bits(out, ref(a))


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_small_and_broadcast_operands(dtype):
    a = values(dtype, 7 * 9, seed=6).reshape(7, 9)
    b = values(dtype, 9, seed=7)
    same_bits(run(F.mul, a, b), a * b)
    same_bits(run(F.add, a[:, :1], b), a[:, :1] + b)
    z = np.asarray(values(dtype, 1, seed=8)[0])
    y = run(F.div, z, z)
    assert y.shape == () and y.dtype == dtype


def test_mixed_precision_keeps_numpys_dtype():
    a, b = values(F16, 1000), values(F16, 1000, seed=9).astype(np.float32)
    out = run(F.add, a, b)
    assert out.dtype == np.float32
    same_bits(out, a.astype(np.float32) + b)


# --------------------------------------------------------------------- comparisons, selections
COMPARISONS = [(F.equal, np.equal), (F.not_equal, np.not_equal), (F.less, np.less),
               (F.less_equal, np.less_equal), (F.greater, np.greater),
               (F.greater_equal, np.greater_equal)]


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("op,ref", COMPARISONS)
def test_comparisons_are_exact(dtype, op, ref):
    a, b = values(dtype, seed=10), values(dtype, seed=11)
    b[::7] = a[::7]  # ties
    b[1::7] = -a[1::7]
    np.testing.assert_array_equal(run(op, a, b), ref(a, b))
    np.testing.assert_array_equal(run(op, a, 0.5), ref(a, dtype.type(0.5)))


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("op,ref", [(F.isnan, np.isnan), (F.isinf, np.isinf),
                                    (F.isfinite, np.isfinite)])
def test_value_tests_are_exact(dtype, op, ref):
    a = values(dtype, seed=12)
    np.testing.assert_array_equal(run(op, a), ref(a))


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("op,ref", [(F.maximum, np.maximum), (F.minimum, np.minimum)])
def test_maximum_minimum_same_values(dtype, op, ref):
    a, b = values(dtype, seed=13), values(dtype, seed=14)
    b[::5] = a[::5]
    b[1:40:2] = -a[1:40:2]  # -0 against +0 among them
    out = run(op, a, b)
    assert out.dtype == dtype
    same_values(out, ref(a, b))


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("n", [N, 100])  # the bit kernels, and the small path
@pytest.mark.parametrize("c_relu", [True, False], ids=["c", "numpy"])
def test_relu_and_its_gradient(dtype, n, c_relu, monkeypatch):
    if c_relu and not lowp_cpu.C_RELU:
        pytest.skip("the _f16c extension is not built here")
    monkeypatch.setattr(lowp_cpu, "C_RELU", c_relu)
    x = values(dtype, n, seed=15)
    x[n // 2:n // 2 + 4] = np.array([0.0, -0.0, np.nan, -np.nan], np.float32).astype(dtype)
    y = run(F.relu, x)
    assert y.dtype == dtype
    same_values(y, np.maximum(x, dtype.type(0)))
    y32, x32 = y.astype(np.float32), x.astype(np.float32)
    # only -0.0 keeps its sign bit (PyTorch's clamp keeps x where it equals the bound)
    assert (np.signbit(y32) == ((x32 == 0) & np.signbit(x32)))[~np.isnan(y32)].all()
    gy = values(dtype, n, seed=16)
    gy[:4] = np.array([np.inf, -np.inf, np.nan, 1.0], np.float32).astype(dtype)
    g = kernels.relu_grad(gy, y)
    same_bits(g, np.where(y <= 0, dtype.type(0), gy))


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_relu_kernels_equal_their_numpy_twin_on_every_bit_pattern(dtype, monkeypatch):
    if not lowp_cpu.C_RELU:
        pytest.skip("the _f16c extension is not built here")
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    gy = np.random.default_rng(18).permutation(x)
    out = {}
    for c_relu in (True, False):
        monkeypatch.setattr(lowp_cpu, "C_RELU", c_relu)
        out[c_relu] = lowp_cpu.relu(x), lowp_cpu.relu_grad(gy, x)
    for c, twin in zip(out[True], out[False]):
        assert c.dtype == dtype
        np.testing.assert_array_equal(c.view(np.uint16), twin.view(np.uint16))


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("bounds", [(0.0, None), (-0.5, 0.5), (None, 1.0), (-1e-6, 2.0)])
def test_clip_same_values(dtype, bounds):
    x = values(dtype, seed=17)
    lo, hi = bounds
    ref = x if lo is None else np.maximum(x, dtype.type(lo))
    ref = ref if hi is None else np.minimum(ref, dtype.type(hi))
    out = run(lambda t: F.clip(t, lo, hi), x)
    assert out.dtype == dtype
    same_values(out, ref)


def _max_pool_reference(x, k):
    """max_pool2d in float32 (NaN propagates) and the flat argmax of every window."""
    n, c, h, w = x.shape
    win = x.astype(np.float32).reshape(n, c, h // k, k, w // k, k).transpose(0, 1, 2, 4, 3, 5)
    return win.reshape(n, c, h // k, w // k, k * k).max(-1)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("nan", [False, True])
def test_max_pool_same_values_and_gradient_routes(dtype, nan, cast_kernels):
    x = values(dtype, 8 * 6 * 28 * 28, seed=18).reshape(8, 6, 28, 28)
    if not nan:
        x[np.isnan(x.astype(np.float32))] = 0
    x[0, 0, :2, :2] = np.array([[0.0, -0.0], [-0.0, 0.0]], np.float32).astype(dtype)
    t = mg.tensor(x, requires_grad=True)
    y = F.max_pool2d(t, 2)
    assert y.dtype == dtype
    same_values(y.numpy(), _max_pool_reference(x, 2).astype(dtype))
    y.sum().backward()
    t32 = mg.tensor(x.astype(np.float32), requires_grad=True)
    F.max_pool2d(t32, 2).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy().astype(np.float32), t32.grad.numpy())


# --------------------------------------------------------------------- transcendental functions
TRANSCENDENTAL = [("exp", F.exp, np.exp), ("log", F.log, np.log), ("log1p", F.log1p, np.log1p),
                  ("expm1", F.expm1, np.expm1), ("sin", F.sin, np.sin), ("cos", F.cos, np.cos),
                  ("tanh", F.tanh, np.tanh),
                  ("rsqrt", F.rsqrt, lambda a: np.reciprocal(np.sqrt(a)))]


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name,op,ref", TRANSCENDENTAL, ids=[t[0] for t in TRANSCENDENTAL])
def test_transcendental_within_one_ulp(dtype, name, op, ref):
    x = values(dtype, seed=19, scale=1.0)
    out = run(op, x)
    assert out.dtype == dtype
    assert ulps(out, ref(x)) <= 1


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_pow_within_one_ulp(dtype):
    a = np.abs(values(dtype, seed=20, scale=1.0))
    b = values(dtype, seed=21, scale=0.5)
    assert ulps(run(F.pow, a, b), np.power(a, b)) <= 1
    assert ulps(run(F.pow, a, 2.5), np.power(a, dtype.type(2.5))) <= 1


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_float32_sums_of_low_precision(dtype):
    x = values(dtype, seed=22).reshape(-1, 3)
    x[~(np.abs(x.astype(np.float32)) < 1e5)] = 0  # finite sums
    for axis in (None, 0, 1):
        out = kernels.sum_fp32(x, axis=axis)
        assert out.dtype == np.float32
        ref = np.sum(x.astype(np.float64), axis=axis)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-3)


# --------------------------------------------------------------------------------- the policy
def test_float32_and_gpu_arrays_are_left_alone():
    a = np.ones(4, np.float32)
    assert kernels.unary(lambda v: v, a) is a
    assert kernels.binary(lambda u, v: u, a, a) is a
    assert not lowp_cpu.is_low(a) and lowp_cpu.is_low(a.astype(F16))


def test_keep_selects_bits_of_any_dtype():
    for dt in (np.float16, BF16, np.float32, np.float64, np.int32):
        a = values(F16, 1000, seed=23).astype(dt)
        m = np.random.default_rng(5).random(1000) < 0.5
        same_bits(lowp_cpu.keep(a, m), np.where(m, a, np.zeros((), dt)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_training_steps_are_the_same_bits_on_both_cast_kernels(dtype, monkeypatch):
    # LeNet-5 under autocast (float16 with its GradScaler): the C casts and their NumPy twin
    # give the same losses and weights, bit for bit
    if not lowp_cpu.F16C:
        pytest.skip("the _f16c extension is not built here, or the CPU lacks F16C")
    from minigrad import amp
    from minigrad.autodiff import GradManager
    from minigrad.models import lenet5
    from minigrad.optimizer import SGD

    x = np.random.default_rng(5).standard_normal((4, 16, 1, 32, 32)).astype(np.float32)
    y = np.random.default_rng(6).integers(0, 10, (4, 16))

    def train(native):
        monkeypatch.setattr(lowp_cpu, "F16C", native)
        mg.manual_seed(0)
        model = lenet5()
        opt = SGD(model.parameters(), lr=0.05, momentum=0.9)
        gm = GradManager().attach(model.parameters())
        scaler = amp.GradScaler() if dtype == "float16" else None
        losses = []
        for xb, yb in zip(x, y):
            with amp.autocast(dtype=dtype), gm:
                loss = F.cross_entropy(model(mg.tensor(xb)), mg.tensor(yb))
                scaler.backward(gm, loss) if scaler else gm.backward(loss)
            opt.step().clear_grad()
            losses.append(loss.item())
        return losses, [p.numpy() for p in model.parameters()]

    (loss_c, w_c), (loss_np, w_np) = train(True), train(False)
    assert loss_c == loss_np
    for a, b in zip(w_c, w_np):
        assert (bits(a) == bits(b)).all()


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("kind", ["readonly", "broadcast", "reversed", "unaligned"])
def test_casts_of_unusual_arrays(cast_kernels, dtype, kind):
    # what the C kernels receive through the buffer protocol: read-only, zero-stride,
    # negative-stride and unaligned float32 arrays convert as astype does
    x = np.random.default_rng(8).standard_normal(5003).astype(np.float32)
    if kind == "readonly":
        a = x.copy()
        a.flags.writeable = False
    elif kind == "broadcast":
        a = np.broadcast_to(x[:1], x.shape)
    elif kind == "reversed":
        a = x[::-1]
    else:
        raw = np.zeros(4 * x.size + 1, np.uint8)
        a = raw[1:].view(np.float32)
        a[:] = x
        assert not a.flags.aligned
    y = lowp_cpu.narrow(a, dtype)
    assert y.shape == a.shape and (bits(y) == bits(a.astype(dtype))).all()
    assert (bits(lowp_cpu.widen(y)) == bits(y.astype(np.float32))).all()
