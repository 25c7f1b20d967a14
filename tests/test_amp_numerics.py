"""Numerics of low precision: fp32 accumulation of reductions (invariant 3), softmax in fp16,
Tensor Core matmul semantics (invariant 4), and what autocast's fp32 rows buy."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp

f16, bf16, f32 = mg.float16, mg.bfloat16, mg.float32


def test_fp16_sum_of_4096_ones(device):
    x = mg.ones(4096, dtype=f16, device=device)
    s = x.sum()
    assert s.dtype == f16 and s.item() == 4096.0  # naive fp16 accumulation stops at 2048
    with amp.autocast():
        s2 = x.sum()
    assert s2.dtype == f32 and s2.item() == 4096.0
    x2 = mg.ones(64, 4096, dtype=f16, device=device)
    np.testing.assert_array_equal(x2.sum(axis=1).numpy(), np.full(64, 4096.0, np.float16))


def test_fp16_softmax_over_4096_logits_sums_to_one(device):
    softmax = getattr(F, "softmax", None)
    if softmax is None:
        pytest.skip("F.softmax not implemented yet")
    rng = np.random.default_rng(0)
    logits = rng.standard_normal(4096).astype(np.float16) * 8
    x = mg.tensor(logits, device=device)
    p = softmax(x, axis=-1)
    assert p.dtype == f16
    np.testing.assert_allclose(p.numpy().astype(np.float64).sum(), 1.0, atol=2e-3)
    ref = np.exp(logits.astype(np.float64) - logits.max())
    ref /= ref.sum()
    np.testing.assert_allclose(p.numpy().astype(np.float64), ref, rtol=2e-2, atol=1e-6)
    with amp.autocast():
        p32 = softmax(x, axis=-1)
    assert p32.dtype == f32
    np.testing.assert_allclose(p32.numpy().sum(), 1.0, rtol=1e-5)
    np.testing.assert_allclose(p32.numpy(), ref, rtol=1e-4, atol=1e-9)


@pytest.mark.parametrize("low", [f16, bf16])
def test_low_precision_matmul_is_fp32_matmul_of_rounded_inputs_rounded(device, low):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((32, 64)).astype(np.float32)
    b = rng.standard_normal((64, 16)).astype(np.float32)
    ar, br = a.astype(low), b.astype(low)
    ref = (ar.astype(np.float32) @ br.astype(np.float32)).astype(low)
    with amp.autocast(dtype=str(low)):
        c = mg.tensor(a, device=device) @ mg.tensor(b, device=device)
    assert c.dtype == low
    got = c.numpy().astype(np.float32)
    if device == "cpu":
        np.testing.assert_array_equal(got, ref.astype(np.float32))
    else:  # cuBLAS sums in another order: within one rounding step of the low dtype
        eps = float(mg._backend.dtypes.finfo(low).eps)
        np.testing.assert_allclose(got, ref.astype(np.float32), rtol=2 * eps, atol=1e-3)
    # and close to the exact product: fp32 accumulation, one rounding at the end
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(got - exact).max() < 0.2


def test_autocast_exp_does_not_overflow():
    x = mg.tensor([12.0, -3.0], dtype=f16)
    with np.errstate(over="ignore"):
        assert np.isinf(F.exp(x).numpy()[0])      # e**12 > 65504
    with amp.autocast():
        y = F.exp(x)
    assert y.dtype == f32
    np.testing.assert_allclose(y.numpy(), np.exp([12.0, -3.0]), rtol=1e-6)


def test_autocast_sum_of_squares_does_not_overflow():
    h = mg.full((1024,), 300.0, dtype=f16)        # 1024 * 300**2 = 9.2e7 > 65504
    with amp.autocast(), np.errstate(over="ignore"):
        s = (h * h).sum()                         # the mul runs in fp16 (90000 -> inf!)
        s2 = F.exp(F.log(h) * 2).sum()            # via the fp32 rows: finite
    assert np.isinf(s.item())
    assert s2.dtype == f32
    np.testing.assert_allclose(s2.item(), 1024 * 300.0 ** 2, rtol=1e-3)
