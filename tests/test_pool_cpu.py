"""Max pooling's C kernels (``_backend/pool_cpu.py``, ``_pool.c`` of the ``_parallel``
extension) against their NumPy twin in ``functional/pooling.py``: the same maxima (bit for bit;
a window holding NaN gives NaN), the same indices, the same gradients (bit for bit where windows
do not overlap, and to the last bit where sums of three or more are added in another order),
over random geometries (padding, dilation, ceil_mode, 1-D and 2-D windows), every dtype the
kernels take, inputs full of ties, signed zeros, infinities and NaN, and any thread count."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.functional as F
from minigrad._backend import pool_cpu
from minigrad.core.engine import grad

pytestmark = pytest.mark.skipif(not pool_cpu.AVAILABLE,
                                reason="the _parallel extension is not built here")

DTYPES = [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16),
          np.dtype(ml_dtypes.bfloat16)]
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0]


def _input(rng, shape, dtype, special):
    """Random values with many ties (a few distinct values), and with ``special`` the signed
    zeros, infinities and NaN among them."""
    pool = np.array(SPECIAL if special else [-1.5, -0.5, 0.25, 1.0, 3.0])
    x = rng.choice(pool, size=shape)
    x += rng.integers(0, 2, size=shape) * rng.standard_normal(shape) * (not special)
    return x.astype(dtype)


def _pool(x, dim, kw, monkeypatch, native):
    """(values, indices, input gradient) of a max pool with the C kernels or the twin."""
    monkeypatch.setattr(pool_cpu, "AVAILABLE", native)
    t = mg.tensor(x, requires_grad=True)
    fn = F.max_pool2d if dim == 2 else F.max_pool1d
    y, idx = fn(t, return_indices=True, **kw)
    gy = np.random.default_rng(1).standard_normal(y.shape).astype(x.dtype)
    (gx,) = grad([y], [t], [mg.tensor(gy)])
    return y.numpy(), idx.numpy(), gx.numpy()


def _same_bits(a, b, signed_zeros=True):
    """Equal, NaN where the other is NaN (payloads may differ: the twin keeps a window's first
    NaN, the kernel its last, as PyTorch), -0 apart from +0."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    nan = np.isnan(a64)
    np.testing.assert_array_equal(nan, np.isnan(b64))
    np.testing.assert_array_equal(a64[~nan], b64[~nan])
    if signed_zeros:
        np.testing.assert_array_equal(np.signbit(a64[~nan]), np.signbit(b64[~nan]))


@st.composite
def geometries(draw):
    dim = draw(st.sampled_from([1, 2]))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(dim))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(dim))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dim))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    size = tuple(draw(st.integers(d * (k - 1) + 1, 9)) for k, d in zip(kernel, dilation))
    kw = {"kernel_size": kernel, "stride": stride, "padding": padding, "dilation": dilation,
          "ceil_mode": draw(st.booleans())}
    return dim, (draw(st.integers(0, 3)), draw(st.integers(1, 3))) + size, kw


@settings(max_examples=150, deadline=None)
@given(geometry=geometries(), dtype=st.sampled_from(DTYPES), special=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_kernels_equal_their_numpy_twin(geometry, dtype, special, seed):
    dim, shape, kw = geometry
    x = _input(np.random.default_rng(seed), shape, dtype, special)
    with pytest.MonkeyPatch.context() as mp:
        y, idx, gx = _pool(x, dim, kw, mp, native=True)
        y_np, idx_np, gx_np = _pool(x, dim, kw, mp, native=False)
    assert y.dtype == y_np.dtype == dtype and gx.dtype == dtype
    # The twin pools small float16/bfloat16 arrays as integer keys that make both zeros one
    # (lowp_cpu.selection), so a window whose maximum is -0 gives +0 there; the kernel keeps -0.
    _same_bits(y, y_np, signed_zeros=dtype.itemsize > 2)
    np.testing.assert_array_equal(idx, idx_np)
    overlapping = any(d * (k - 1) + 1 > s for k, s, d in
                      zip(kw["kernel_size"], kw["stride"], kw["dilation"]))
    if overlapping:  # summed in another order: within float rounding of the same sum
        np.testing.assert_allclose(gx.astype(np.float64), gx_np.astype(np.float64),
                                   rtol=1e-2 if dtype.itemsize == 2 else 1e-6, atol=1e-6)
    else:
        _same_bits(gx, gx_np)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lenet_pools_match_the_twin_and_a_loop(dtype, monkeypatch):
    """LeNet-5's two pools (the shapes the kernels were tuned on), and a direct loop."""
    rng = np.random.default_rng(0)
    for shape in [(4, 6, 28, 28), (4, 16, 10, 10)]:
        x = rng.standard_normal(shape).astype(dtype)
        y, idx, gx = _pool(x, 2, {"kernel_size": 2}, monkeypatch, native=True)
        y_np, idx_np, gx_np = _pool(x, 2, {"kernel_size": 2}, monkeypatch, native=False)
        windows = x.reshape(shape[0], shape[1], shape[2] // 2, 2, shape[3] // 2, 2)
        loop = windows.astype(np.float64).max(axis=(3, 5))
        np.testing.assert_array_equal(y.astype(np.float64), loop)
        np.testing.assert_array_equal(y.view(np.uint8), y_np.view(np.uint8))
        np.testing.assert_array_equal(idx, idx_np)
        np.testing.assert_array_equal(gx.view(np.uint8), gx_np.view(np.uint8))


@pytest.mark.parametrize("native", [True, False], ids=["kernel", "twin"])
def test_nan_takes_the_window_and_the_last_nan_wins(native, monkeypatch):
    x = np.array([[[[1.0, np.nan], [np.nan, 5.0]]]], np.float32)
    y, idx, gx = _pool(x, 2, {"kernel_size": 2}, monkeypatch, native)
    assert np.isnan(y).all() and idx.item() == 2 and np.flatnonzero(gx).tolist() == [2]


@pytest.mark.parametrize("native", [True, False], ids=["kernel", "twin"])
@pytest.mark.parametrize("first", [-0.0, 0.0])
def test_the_first_of_equal_maxima_wins_signed_zeros_too(first, native, monkeypatch):
    """PyTorch keeps a window's first maximum (``val > maxval``): its value, sign included."""
    x = np.array([[[[first, -first], [-first, -1.0]]]], np.float32)
    y, idx, _ = _pool(x, 2, {"kernel_size": 2}, monkeypatch, native)
    assert idx.item() == 0 and np.signbit(y).item() == np.signbit(first)
    torch = pytest.importorskip("torch")
    ty, tidx = torch.nn.functional.max_pool2d(torch.tensor(x), 2, return_indices=True)
    assert tidx.item() == 0 and bool(torch.signbit(ty).item()) == np.signbit(first)


def test_scatter_refuses_an_index_outside_the_kernel():
    gy = np.ones((1, 2, 2), np.float32)
    idx = np.array([[[0, 1], [4, 0]]], np.int8)  # a 2x2 kernel has offsets 0..3
    with pytest.raises(ValueError, match="outside the kernel"):
        pool_cpu.scatter(gy, idx, (1, 4, 4, 2, 2, 2, 2, 2, 2, 1, 1), np.float32, False)


def test_scan_refuses_windows_past_the_input():
    x = np.zeros((1, 3, 3), np.float32)
    with pytest.raises(ValueError, match="outside the padded input"):
        pool_cpu.scan(x, (1, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1))


def test_other_dtypes_and_large_windows_go_to_the_twin():
    assert pool_cpu.scan(np.zeros((1, 4, 4), np.int32), (1, 4, 4, 2, 2, 2, 2, 2, 2, 1, 1)) is None
    big = np.zeros((1, 12, 12), np.float32)  # 144 offsets do not fit int8
    assert pool_cpu.scan(big, (1, 12, 12, 1, 1, 12, 12, 1, 1, 1, 1)) is None
    x = mg.tensor(np.arange(144, dtype=np.float32).reshape(1, 1, 12, 12))
    assert F.max_pool2d(x, 12).numpy().item() == 143


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", [0, 2, 3, 64])
def test_any_thread_count_gives_the_same_bits(dtype, threads):
    # the pool's workers split the planes: every plane is the same scan and scatter
    from minigrad._backend import _parallel

    rng = np.random.default_rng(2)
    x = _input(rng, (13, 9, 9), dtype, special=False)
    geo = (13, 9, 9, 4, 4, 3, 3, 2, 2, 1, 1)  # overlapping 3x3 windows, stride 2
    kind = {2: "bf16" if dtype == DTYPES[3] else "f16", 4: "f32", 8: "f64"}[dtype.itemsize]
    add = "add_f64" if dtype.itemsize == 8 else "add_f32"
    gy = rng.standard_normal((13, 4, 4)).astype(np.float64 if dtype.itemsize == 8
                                                else np.float32)
    outs = []
    for t in (1, threads):
        best, idx = np.empty((13, 4, 4), dtype), np.empty((13, 4, 4), np.int8)
        _parallel.pool_scan(kind, x, best, idx, geo, t)
        acc = np.zeros((13, 9, 9), gy.dtype)
        _parallel.pool_scatter(add, gy, idx, acc, geo, t)
        outs.append((best.view(np.uint8), idx, acc))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
