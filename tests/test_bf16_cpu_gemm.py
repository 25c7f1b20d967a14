"""The AVX512_BF16 GEMM (``_backend/bf16_cpu_gemm.py``, ``_bf16_gemm.c`` of the ``_parallel``
extension) against float64 products of the same bfloat16 values and against its twin, the
float32 GEMM of the widened operands (``kernels.matmul`` with the extension switched off): every
tile edge of both kernel forms, every stride layout, any thread count giving the same bits, IEEE
specials as in float32, subnormals flushed (the instruction's rule, a row of the deviations
table), and the convolutions and linear layers that use it agreeing with the twin to a bfloat16
rounding."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.functional as F
from minigrad._backend import bf16_cpu_gemm, kernels, matmul_paths

pytestmark = pytest.mark.skipif(not bf16_cpu_gemm.AVAILABLE,
                                reason="the _parallel extension is not built or the CPU lacks "
                                       "AVX512_BF16")

BF16 = np.dtype(ml_dtypes.bfloat16)
PACKED, INNER = 1, 2


def _bf16(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(BF16)


def _check_product(a, b, form=0):
    """``product(a, b)`` within float32 accumulation error of the exact product."""
    got = bf16_cpu_gemm.product(a, b, form)
    assert got.dtype == np.float32 and got.shape == (a.shape[0], b.shape[1])
    assert got.flags.c_contiguous
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    # each partial sum rounds once to float32: |error| <= k * 2**-24 * sum |a_ik b_kj|
    bound = (a.shape[1] + 1) * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64))
    assert np.all(np.abs(got - exact) <= bound), np.abs(got - exact).max()
    return got


def _layout(x, how):
    """The same matrix under another memory layout."""
    if how == "c":
        return np.ascontiguousarray(x)
    if how == "f":
        return np.asfortranarray(x)
    if how == "sliced":  # every other column of a wider array: column stride 2
        wide = np.zeros((x.shape[0], 2 * x.shape[1] + 1), dtype=x.dtype)
        wide[:, 1::2] = x
        return wide[:, 1::2]
    if how == "reversed":  # negative strides
        return np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]
    raise ValueError(how)


@pytest.mark.parametrize("m, k, n", [
    (1, 1, 1), (1, 2, 1), (5, 3, 31), (6, 25, 33), (7, 26, 64), (13, 511, 65), (6, 512, 32),
    (2, 513, 3), (16, 150, 200), (150, 16, 70), (64, 400, 120), (3, 1025, 5)])
@pytest.mark.parametrize("form", [0, PACKED])
def test_packed_form_every_edge(rng, m, k, n, form):
    # rows past a 6-row tile, columns past a 32-column tile, odd k (a half-empty last pair),
    # k past the 512-long packed block (partial sums added in C)
    _check_product(_bf16(rng, (m, k)), _bf16(rng, (k, n)), form)


@pytest.mark.parametrize("m, k, n", [
    (1, 1, 1), (1, 31, 1), (6, 32, 4), (7, 33, 5), (6, 57, 25), (16, 2047, 9), (5, 2048, 3),
    (13, 2049, 11), (2, 4097, 6), (6, 300, 1)])
@pytest.mark.parametrize("form", [0, INNER])
def test_inner_form_every_edge(rng, m, k, n, form):
    # the dot-product form reads A's rows and B's columns in place: B is the transpose of a
    # C-ordered array (a weight gradient's gy @ cols.T); k past 32-wide steps and 2048-long
    # chunks, tiles of 6 x 4 cut short
    a = _bf16(rng, (m, k))
    b = np.ascontiguousarray(_bf16(rng, (n, k))).T
    _check_product(a, b, form)


@pytest.mark.parametrize("a_layout", ["c", "f", "sliced", "reversed"])
@pytest.mark.parametrize("b_layout", ["c", "f", "sliced", "reversed"])
def test_any_strides(rng, a_layout, b_layout):
    a, b = _bf16(rng, (9, 37)), _bf16(rng, (37, 41))
    want = bf16_cpu_gemm.product(np.ascontiguousarray(a), np.ascontiguousarray(b), PACKED)
    got = _check_product(_layout(a, a_layout), _layout(b, b_layout))
    if (a_layout, b_layout) != ("c", "f"):  # (the inner form sums in another order)
        np.testing.assert_array_equal(got, want)


def test_inner_form_refuses_other_strides(rng):
    a, b = _bf16(rng, (4, 8)), _bf16(rng, (8, 4))
    with pytest.raises(ValueError, match="inner form needs unit k strides"):
        bf16_cpu_gemm.product(a, b, INNER)


@pytest.mark.parametrize("threads", [0, 2, 3, 5, 99])
@pytest.mark.parametrize("transposed_b", [False, True])
def test_threads_give_the_same_bits(rng, threads, transposed_b):
    from minigrad._backend import _parallel

    a = _bf16(rng, (10, 700))
    b = (np.ascontiguousarray(_bf16(rng, (333, 700))).T if transposed_b
         else _bf16(rng, (700, 333)))
    outs = []
    for t in (1, threads):
        out = np.empty((10, 333), dtype=np.float32)
        _parallel.bf16_gemm(a.view(np.uint16), b.view(np.uint16), out, t, 0)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


def _threaded_product(seed):
    from minigrad._backend import _parallel

    rng = np.random.default_rng(seed)
    a, b = _bf16(rng, (8, 300)), _bf16(rng, (300, 200))
    out = np.empty((8, 200), dtype=np.float32)
    _parallel.bf16_gemm(a.view(np.uint16), b.view(np.uint16), out, 2, 0)
    return out


def test_workers_after_fork_and_from_many_python_threads():
    # The extension's workers outlive each call: a forked child (DataLoader workers, fork-based
    # multiprocessing) must start its own instead of waiting on its parent's, and Python
    # threads multiplying at once must each get their answer (one uses the pool at a time).
    import concurrent.futures
    import multiprocessing

    want = [_threaded_product(s) for s in range(4)]  # the parent's workers exist from here on
    with multiprocessing.get_context("fork").Pool(2) as pool:
        got = pool.map(_threaded_product, range(4), chunksize=1)
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        got_threads = list(ex.map(_threaded_product, list(range(4)) * 8))
    for g, w in zip(got + got_threads, want * 9):
        np.testing.assert_array_equal(g, w)


def test_empty_and_zero_length_products():
    z = np.zeros
    assert bf16_cpu_gemm.product(z((0, 3), BF16), z((3, 4), BF16)).shape == (0, 4)
    assert bf16_cpu_gemm.product(z((2, 3), BF16), z((3, 0), BF16)).shape == (2, 0)
    out = bf16_cpu_gemm.product(z((2, 0), BF16), z((0, 4), BF16))
    np.testing.assert_array_equal(out, np.zeros((2, 4), np.float32))


def test_shape_mismatch_is_an_error():
    from minigrad._backend import _parallel

    a, b = np.zeros((2, 3), np.uint16), np.zeros((4, 5), np.uint16)
    with pytest.raises(ValueError, match="bf16_gemm: shapes of a, b and out do not agree"):
        _parallel.bf16_gemm(a, b, np.empty((2, 5), np.float32), 1, 0)
    with pytest.raises(ValueError, match="2-D array of 16-bit elements"):
        _parallel.bf16_gemm(np.zeros(3, np.uint16), b, np.empty((2, 5), np.float32), 1, 0)


@pytest.mark.parametrize("form", [PACKED, INNER])
def test_specials_as_in_float32(rng, form):
    # inf * 0 and inf - inf are NaN, a NaN anywhere in a row or column makes its products NaN,
    # an infinity alone stays infinite: the same pattern as the float32 GEMM of the same values
    a, b = _bf16(rng, (7, 40)), _bf16(rng, (40, 9))
    a[0, 3], a[1, 5], a[2, 7], a[2, 8] = np.inf, np.nan, np.inf, -np.inf
    b[3, 4], b[7, 1], b[8, 1] = 0.0, 1.0, 1.0
    if form == INNER:
        b = np.ascontiguousarray(b.T).T
    got = bf16_cpu_gemm.product(a, b, form)
    with np.errstate(invalid="ignore", over="ignore"):
        want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    assert np.isnan(got[0, 4]) and np.isnan(got[1]).all() and np.isnan(got[2, 1])


@pytest.mark.parametrize("form", [PACKED, INNER])
def test_subnormals_flush_to_zero(form):
    # The instruction's rule (and PyTorch's oneDNN bfloat16 kernels' on this CPU): a subnormal
    # input counts as zero, and so does a subnormal result (docs/migrating.md, deviations).
    tiny = float(np.array(1e-39, dtype=BF16))
    assert 0 < tiny < 2.0 ** -126

    def product(row, column):
        a = np.array([row], dtype=BF16)
        b = np.ascontiguousarray(np.array([column], dtype=BF16)).T
        return float(bf16_cpu_gemm.product(a, b if form == INNER else np.ascontiguousarray(b),
                                           form)[0, 0])

    assert product([tiny, 0.0], [1.0, 0.0]) == 0.0          # subnormal input
    assert product([1e-20, 0.0], [1e-19, 0.0]) == 0.0        # subnormal product (1e-39)
    assert product([1e-17, 1.0], [1e-18, 0.0]) == float(np.float32(  # normal ones stay
        float(np.array(1e-17, BF16)) * float(np.array(1e-18, BF16))))


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(1, 600), n=st.integers(1, 80),
       transposed_b=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_random_shapes(m, k, n, transposed_b, seed):
    rng = np.random.default_rng(seed)
    a = _bf16(rng, (m, k))
    b = np.ascontiguousarray(_bf16(rng, (n, k))).T if transposed_b else _bf16(rng, (k, n))
    _check_product(a, b)


# ------------------------------------------------------------------ the ops that use it
def _twin(monkeypatch, native):
    monkeypatch.setattr(bf16_cpu_gemm, "AVAILABLE", native)


def _within_one_ulp(a, b):
    """bfloat16 results of two float32 sums in different orders: equal, or one rounding
    apart (adjacent bfloat16 values)."""
    ai = a.view(np.int16).astype(np.int32)
    bi = b.view(np.int16).astype(np.int32)
    assert np.abs(ai - bi).max() <= 1
    assert np.mean(ai != bi) < 0.05


def _conv_step(monkeypatch, native, x, w, b, **kw):
    _twin(monkeypatch, native)
    xt, wt, bt = (mg.tensor(v, requires_grad=True) for v in (x, w, b))
    with matmul_paths.record() as paths:
        y = F.conv2d(xt, wt, bt, **kw)
        y.backward(mg.tensor(np.cos(np.arange(y.size)).reshape(y.shape).astype(BF16)))
    return [v.numpy() for v in (y, xt.grad, wt.grad, bt.grad)], paths


@pytest.mark.parametrize("kw, shape", [
    ({}, (4, 3, 12, 12)),                               # full-width columns
    ({"padding": 1, "stride": 2}, (4, 3, 9, 9)),        # batch-inner columns
    ({"padding": 2, "dilation": 2}, (2, 5, 16, 16))])
def test_conv2d_matches_the_twin(rng, monkeypatch, kw, shape):
    x = _bf16(rng, shape)
    w, b = _bf16(rng, (8, shape[1], 3, 3), 0.3), _bf16(rng, 8)
    # forward, data and weight gradients (the bias gradient is a float32 GEMV, "cpu")
    native, paths = _conv_step(monkeypatch, True, x, w, b, **kw)
    assert paths.count("cpu-avx512-bf16") == 3 and "cpu-emulated-fp32-accumulate" not in paths
    twin, paths = _conv_step(monkeypatch, False, x, w, b, **kw)
    assert paths == ["cpu"] * 4  # float32 GEMMs of operands converted before im2col
    for got, want in zip(native, twin):
        assert got.dtype == BF16
        _within_one_ulp(got, want)


def test_linear_and_matmul_match_the_twin(rng, monkeypatch):
    x, w, bias = _bf16(rng, (64, 400)), _bf16(rng, (120, 400), 0.05), _bf16(rng, 120)
    outs = {}
    for native in (True, False):
        _twin(monkeypatch, native)
        xt, wt, bt = (mg.tensor(v, requires_grad=True) for v in (x, w, bias))
        y = F.linear(xt, wt, bt)
        y.backward(mg.tensor(np.sin(np.arange(y.size)).reshape(y.shape).astype(BF16)))
        outs[native] = [v.numpy() for v in (y, xt.grad, wt.grad, bt.grad,
                                            F.matmul(xt, wt.T))]
    for got, want in zip(outs[True], outs[False]):
        assert got.dtype == BF16
        _within_one_ulp(got, want)


def test_linear_bias_is_added_before_the_one_rounding(monkeypatch):
    # 1 + 2**-8 lies halfway between two bfloat16s (8 significant bits) and would round to 1,
    # and 1 + 2**-9 again to 1; added to the float32 accumulator, 1 + 2**-8 + 2**-9 rounds
    # once, up to 1 + 2**-7
    _twin(monkeypatch, True)
    x = mg.tensor(np.array([[1.0, 2.0 ** -8]], dtype=BF16))
    w = mg.tensor(np.array([[1.0, 1.0]], dtype=BF16))
    y = F.linear(x, w, mg.tensor(np.array([2.0 ** -9], dtype=BF16)))
    assert float(y.numpy()[0, 0]) == 1.0 + 2.0 ** -7


def test_float16_and_batched_products_keep_the_float32_gemm(rng):
    a16, b16 = rng.standard_normal((8, 8)).astype(np.float16), np.eye(8, dtype=np.float16)
    with matmul_paths.record() as paths:
        kernels.matmul(a16, b16)
        kernels.matmul(_bf16(rng, (2, 3, 4)), _bf16(rng, (2, 4, 5)))
        kernels.matmul(_bf16(rng, (3, 4)), rng.standard_normal((4, 2)).astype(np.float16))
    assert paths == ["cpu-emulated-fp32-accumulate"] * 3


def test_benchmark_script_runs_and_agrees_with_pytorch():
    # benchmarks/cpu_bf16_gemm.py: LeNet-5's products, timed; the kernel's bfloat16 results
    # within one rounding of PyTorch's bfloat16 matmul (on the development machine: equal)
    import importlib.util
    import pathlib

    pytest.importorskip("torch")
    path = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "cpu_bf16_gemm.py"
    spec = importlib.util.spec_from_file_location("cpu_bf16_gemm", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main(["--repeats", "1"])
    assert len(rows) == len(bench.SHAPES)
    for row in rows:
        assert all(row[c] > 0 for c in ("f32 BLAS", "+ convert", "bf16 1t", "bf16 2t"))
        assert row["max |diff|"] <= 1


def test_pytorch_flushes_the_same_subnormals_on_this_cpu():
    # The deviations row says PyTorch's oneDNN bfloat16 linear and conv flush subnormals on a
    # CPU with AVX512_BF16 too: both give zero where the exact answer is subnormal.
    torch = pytest.importorskip("torch")
    if not torch.backends.mkldnn.is_available():
        pytest.skip("PyTorch without oneDNN")
    tiny = np.full((64, 400), 1e-39, dtype=BF16)  # subnormal inputs
    small = np.full((64, 400), 1e-20, dtype=BF16)  # normal inputs, subnormal products
    w_one, w_small = np.ones((120, 400), BF16), np.full((120, 400), 1e-19, BF16)
    for x, w in ((tiny, w_one), (small, w_small)):
        ours = F.linear(mg.tensor(x), mg.tensor(w)).numpy().astype(np.float32)
        theirs = torch.nn.functional.linear(
            *(torch.from_numpy(v.astype(np.float32)).bfloat16() for v in (x, w))).float()
        np.testing.assert_array_equal(ours, theirs.numpy())
        assert not ours.any()
    x = np.full((2, 1, 8, 8), 1e-20, dtype=BF16)
    w = np.full((4, 1, 3, 3), 1e-19, dtype=BF16)
    ours = F.conv2d(mg.tensor(x), mg.tensor(w)).numpy().astype(np.float32)
    theirs = torch.nn.functional.conv2d(
        *(torch.from_numpy(v.astype(np.float32)).bfloat16() for v in (x, w))).float()
    np.testing.assert_array_equal(ours, theirs.numpy())
    assert not ours.any()
