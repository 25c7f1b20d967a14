"""The convolution data gradient's col2im in C (``_backend/col2im_cpu.py``, ``_col2im.c`` of the
``_parallel`` extension) against its NumPy twin (``_BatchInner.col2im``): the same bits over
random geometries (strides, padding, dilation, windows wider than the input), float32 and
float64, inputs holding signed zeros, infinities and NaN, any thread count; and the
convolutions that use it."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.functional as F
from minigrad._backend import col2im_cpu
from minigrad.functional import _conv_kernels as ck

pytestmark = pytest.mark.skipif(not col2im_cpu.AVAILABLE,
                                reason="the _parallel extension is not built here")


@st.composite
def geometries(draw):
    n, c = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    ph, pw = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    h = draw(st.integers(max(1, dh * (kh - 1) + 1 - 2 * ph), 9))
    w = draw(st.integers(max(1, dw * (kw - 1) + 1 - 2 * pw), 9))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return ck._Geometry((n, c, h, w), (1, c, kh, kw), (oh, ow), (sh, sw), (ph, pw), (dh, dw), 1)


def _both(geo, dcols, monkeypatch):
    layout = ck._BatchInner(geo)
    monkeypatch.setattr(col2im_cpu, "AVAILABLE", False)
    twin = np.ascontiguousarray(layout.col2im(dcols, dcols.dtype))
    monkeypatch.setattr(col2im_cpu, "AVAILABLE", True)
    native = layout.col2im(dcols, dcols.dtype)
    assert native.shape == twin.shape == (geo.n, geo.c, geo.h, geo.w)
    assert native.dtype == dcols.dtype and native.flags.c_contiguous
    return native, twin


def _same_bits(a, b):
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(a)
    np.testing.assert_array_equal(a[ok], b[ok])
    np.testing.assert_array_equal(np.signbit(a[ok]), np.signbit(b[ok]))


@settings(max_examples=150, deadline=None)
@given(geo=geometries(), dtype=st.sampled_from([np.float32, np.float64]),
       special=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_same_bits_as_the_twin(geo, dtype, special, seed):
    rng = np.random.default_rng(seed)
    shape = (geo.c * geo.kh * geo.kw, geo.oh * geo.ow * geo.n)
    dcols = rng.standard_normal(shape).astype(dtype)
    if special:
        dcols = rng.choice(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.0], dtype),
                           size=shape)
    with np.errstate(invalid="ignore"), pytest.MonkeyPatch.context() as mp:
        _same_bits(*_both(geo, dcols, mp))


@pytest.mark.parametrize("threads", [0, 1, 2, 3, 64])
def test_any_thread_count_gives_the_same_bits(threads):
    from minigrad._backend import _parallel

    rng = np.random.default_rng(0)
    dcols = rng.standard_normal((6 * 25, 100 * 16)).astype(np.float32)
    g = (16, 6, 14, 14, 5, 5, 10, 10, 1, 1, 0, 0, 1, 1)
    outs = []
    for t in (1, threads):
        out = np.empty((16, 6, 14, 14), np.float32)
        _parallel.col2im(dcols, out, g, t)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_bad_arguments_are_errors():
    from minigrad._backend import _parallel

    g = (1, 1, 3, 3, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1)
    with pytest.raises(ValueError, match="col2im: array sizes do not match the geometry"):
        _parallel.col2im(np.zeros(15, np.float32), np.empty((1, 1, 3, 3), np.float32), g, 1)
    with pytest.raises(ValueError, match="col2im: float32/float64 arrays and a valid geometry"):
        _parallel.col2im(np.zeros(16, np.float16), np.empty((1, 1, 3, 3), np.float16), g, 1)
    with pytest.raises(ValueError, match="valid geometry"):
        _parallel.col2im(np.zeros(16, np.float32), np.empty((1, 1, 3, 3), np.float32),
                         g[:8] + (0,) + g[9:], 1)
    assert col2im_cpu.col2im(np.zeros((2, 2), np.int64), g) is None  # the twin takes it


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_conv_input_gradient_matches_the_twin(monkeypatch, dtype):
    # conv2d's data gradient (batch-inner columns: a stride-2 conv), native and twin
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 11, 11)).astype(np.float32)
    w = (rng.standard_normal((5, 3, 3, 3)) * 0.3).astype(np.float32)
    grads = []
    for native in (True, False):
        monkeypatch.setattr(col2im_cpu, "AVAILABLE", native)
        xt = mg.tensor(x).astype(dtype).detach().requires_grad_()
        y = F.conv2d(xt, mg.tensor(w).astype(dtype), stride=2, padding=1)
        y.backward(mg.ones_like(y))
        grads.append(xt.grad.numpy())
    assert grads[0].dtype == grads[1].dtype == np.dtype(xt.dtype)
    np.testing.assert_array_equal(grads[0].view(np.uint8), grads[1].view(np.uint8))


@st.composite
def convolutions(draw):
    geo = draw(geometries())
    groups = draw(st.sampled_from([g for g in (1, 2) if geo.c % g == 0]))
    return geo, groups, groups * draw(st.integers(1, 3))


@settings(max_examples=80, deadline=None)
@given(conv=convolutions(), dtype=st.sampled_from(["float32", "float64", "bfloat16"]),
       seed=st.integers(0, 2**31 - 1))
def test_convolution_same_bits_with_and_without_the_kernel(conv, dtype, seed):
    # col2im changes no bit of a conv2d's output, input, weight and bias gradients, in either
    # column layout (the full-width one never calls it) and with groups
    geo, groups, o = conv
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((geo.n, geo.c, geo.h, geo.w)).astype(np.float32)
    w = rng.standard_normal((o, geo.c // groups, geo.kh, geo.kw)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    kw = {"stride": geo.stride, "padding": geo.padding, "dilation": geo.dilation,
          "groups": groups}
    results = []
    for native in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(col2im_cpu, "AVAILABLE", native)
            ts = [mg.tensor(v).astype(dtype).detach().requires_grad_() for v in (x, w, b)]
            y = F.conv2d(*ts, **kw)
            y.backward(mg.tensor(np.cos(np.arange(y.size)).reshape(y.shape)).astype(dtype))
            results.append([y.numpy()] + [t.grad.numpy() for t in ts])
    for a, c in zip(*results):
        np.testing.assert_array_equal(a.view(np.uint8), c.view(np.uint8))
