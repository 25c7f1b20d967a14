"""matmul, bmm, linear, dot, einsum: values against NumPy, float64 gradchecks, low precision."""

import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad._backend import bf16_cpu_gemm, cpu_gemm, kernels, matmul_paths
from minigrad.functional.matmul import addr, bmm, dot, einsum, linear, matmul
from minigrad.testing import gradcheck, gradgradcheck


def t(a, device, **kw):
    return mg.tensor(np.asarray(a), device=device, **kw)


MATMUL_SHAPES = [((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                 ((2, 4, 3), (3, 5)), ((4, 3), (2, 3, 5)), ((2, 1, 2, 3), (4, 3, 2)),
                 ((3,), (2, 3, 4)), ((2, 4, 3), (3,))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_values_and_grad(device, rng, sa, sb):
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    np.testing.assert_allclose(matmul(t(a, device), t(b, device)).numpy(), a @ b, rtol=1e-12)
    assert gradcheck(matmul, [a, b], device=device)


def test_matmul_double_backward(device, rng):
    assert gradgradcheck(matmul, [rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 2))],
                         device=device)


def test_matmul_inner_mismatch_error(device):
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*\(4, 5\)"):
        matmul(t(np.ones((2, 3)), device), t(np.ones((4, 5)), device))


# (rows, reduction, columns, b's memory order, the form cpu_gemm takes): each form, its edges
# and the neighbours that take another
_GEMM_SHAPES = [
    (6, 25, 20000, "C", "column blocks"), (4, 9, 8192, "C", "column blocks"),
    (7, 128, 9000, "F", "column blocks"), (0, 25, 9000, "C", "column blocks"),
    (3, 0, 9000, "C", "column blocks"),
    (6, 8192, 25, "F", "reduction blocks"), (5, 12345, 64, "C", "reduction blocks"),
    (1, 9000, 1, "F", "reduction blocks"),
    (16, 6400, 150, "F", "transposed"), (8, 256, 100, "F", "transposed"),
    (64, 400, 120, "F", "transposed"),
    (16, 6400, 150, "C", "plain"), (65, 400, 120, "F", "plain"), (16, 255, 150, "F", "plain"),
    (4, 25, 30, "C", "plain"), (8, 25, 9000, "C", "plain"),
    (6, 25, 400, "C", "padded"), (7, 300, 30, "F", "padded"), (5, 129, 9000, "C", "padded"),
]


@pytest.mark.parametrize("rows, k, n, b_layout, how", _GEMM_SHAPES)
def test_cpu_gemm_forms_match(rng, rows, k, n, b_layout, how):
    # cpu_gemm rearranges skinny float32 products (column or reduction blocks, the transposed
    # product, padded rows): each form gives the product, C-ordered, in float32
    a = rng.standard_normal((rows, k)).astype(np.float32)
    b = np.asarray(rng.standard_normal((k, n)).astype(np.float32), order=b_layout)
    assert cpu_gemm.form(a, b) == how
    out = kernels.matmul(a, b)
    assert out.dtype == np.float32 and out.shape == (rows, n) and out.flags.c_contiguous
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=2e-3)


def test_cpu_gemm_blocks_propagate_non_finite():
    # a NaN or inf in one reduction or column block reaches the entries it feeds, as in one GEMM
    a = np.ones((6, 9000), np.float32)
    b = np.ones((9000, 25), np.float32, order="F")
    a[2, 8500], b[100, 3] = np.nan, np.inf
    ref = np.matmul(a.astype(np.float64), b)
    np.testing.assert_array_equal(np.isnan(kernels.matmul(a, b)), np.isnan(ref))
    a2, b2 = np.ones((6, 25), np.float32), np.ones((25, 20000), np.float32)
    b2[3, 15000] = np.inf
    out = kernels.matmul(a2, b2)
    assert np.isinf(out[:, 15000]).all() and np.isfinite(np.delete(out, 15000, axis=1)).all()


def test_bmm(device, rng):
    a, b = rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 4, 5))
    y = bmm(t(a, device), t(b, device))
    assert y.creator is None and y.shape == (3, 2, 5)
    np.testing.assert_allclose(y.numpy(), np.einsum("bij,bjk->bik", a, b), rtol=1e-12)
    assert gradcheck(bmm, [a, b], device=device)


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 4)), ((2, 2, 3), (3, 3, 4)),
                                   ((2, 2, 3), (2, 4, 4))])
def test_bmm_errors(device, sa, sb):
    with pytest.raises(ValueError, match="bmm.*" + re.escape(str(sa))):
        bmm(t(np.ones(sa), device), t(np.ones(sb), device))


@pytest.mark.parametrize("xs", [(4,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_values_and_grad(device, rng, xs, with_bias):
    x, w, b = rng.standard_normal(xs), rng.standard_normal((5, 4)), rng.standard_normal(5)
    y = linear(t(x, device), t(w, device), t(b, device) if with_bias else None)
    np.testing.assert_allclose(y.numpy(), x @ w.T + (b if with_bias else 0), rtol=1e-12)
    if with_bias:
        assert gradcheck(linear, [x, w, b], device=device)
    else:
        assert gradcheck(lambda x, w: linear(x, w), [x, w], device=device)


def test_linear_is_one_op_and_skips_unneeded_grads(device, rng):
    x = t(rng.standard_normal((6, 4)), device)  # does not require grad
    w = t(rng.standard_normal((3, 4)), device, requires_grad=True)
    b = t(rng.standard_normal(3), device, requires_grad=True)
    y = linear(x, w, b)
    assert y.creator.name == "linear" and y.creator.inputs[0] is x
    y.sum().backward()
    assert x.grad is None
    np.testing.assert_allclose(w.grad.numpy(), np.ones((3, 6)) @ x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, 6.0))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_linear_backward_on_arrays_equals_the_recorded_ops(device, rng, dtype):
    # create_graph=False computes the three products on arrays; create_graph=True records ops:
    # the gradients must agree to the bit.
    x0, w0, b0 = (rng.standard_normal(s) for s in [(2, 5, 4), (3, 4), (3,)])
    gy = t(rng.standard_normal((2, 5, 3)), device).astype(dtype)
    grads = []
    for create_graph in (False, True):
        x, w, b = (t(a, device).astype(dtype).detach().requires_grad_() for a in (x0, w0, b0))
        linear(x, w, b).backward(gy, create_graph=create_graph)
        grads.append([g.grad.numpy() for g in (x, w, b)])
    for fast, recorded in zip(*grads):
        assert fast.dtype == recorded.dtype == np.dtype(gy.numpy().dtype)
        np.testing.assert_array_equal(fast, recorded)


def test_linear_double_backward(device, rng):
    args = [rng.standard_normal((2, 3)), rng.standard_normal((4, 3)), rng.standard_normal(4)]
    assert gradgradcheck(linear, args, device=device)


def test_linear_errors(device):
    with pytest.raises(ValueError, match=r"linear.*out_features, in_features.*weight=\(3, 4\)"):
        linear(t(np.ones((2, 3)), device), t(np.ones((3, 4)), device))
    with pytest.raises(ValueError, match=r"linear: bias must have shape \(4,\)"):
        linear(t(np.ones((2, 3)), device), t(np.ones((4, 3)), device), t(np.ones(3), device))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_linear_low_precision_accumulates_in_fp32(device, dtype):
    # 4096 ones summed in fp16 would stall at 2048; fp32 accumulation gives exactly 4096.
    x = t(np.ones((2, 4096)), device).astype(dtype)
    w = t(np.ones((3, 4096)), device).astype(dtype)
    with matmul_paths.record() as paths:
        y = linear(x, w, t(np.zeros(3), device).astype(dtype))
    assert str(y.dtype) == dtype
    np.testing.assert_array_equal(y.numpy().astype(np.float32), np.full((2, 3), 4096.0))
    if device == "cpu":  # bfloat16 bits multiplied directly where the CPU has AVX512_BF16
        assert paths[-1] == ("cpu-avx512-bf16" if dtype == "bfloat16" and bf16_cpu_gemm.AVAILABLE
                             else "cpu-emulated-fp32-accumulate")


def test_linear_fp16_matches_rounded_fp32(device, rng):
    x, w, b = (rng.standard_normal(s).astype(np.float16) for s in [(8, 3, 16), (5, 16), (5,)])
    y = linear(t(x, device), t(w, device), t(b, device))
    assert y.dtype == np.float16 and y.shape == (8, 3, 5)
    ref = x.astype(np.float32) @ w.astype(np.float32).T + b.astype(np.float32)
    np.testing.assert_allclose(y.numpy().astype(np.float32), ref, rtol=2e-3, atol=2e-3)
    xs = t(x, device, requires_grad=True)
    ws = t(w, device, requires_grad=True)
    linear(xs, ws).sum().backward()
    assert xs.grad.dtype == np.float16 and ws.grad.dtype == np.float16
    np.testing.assert_allclose(ws.grad.numpy().astype(np.float32),
                               np.ones((5, 24)) @ x.reshape(24, 16).astype(np.float32),
                               rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_linear_low_precision_adds_the_bias_before_rounding(device, dtype):
    # x @ w.T = 1 + u/2 (u: the dtype's ulp at 1) is a tie that rounds to 1; adding the bias
    # u/2 to the rounded product ties again (1), while adding it to the float32 accumulator
    # gives 1 + u exactly: PyTorch's addmm epilogue rounds once, so must minigrad.
    u = float(np.finfo(np.float16).eps if dtype == "float16" else 2.0 ** -7)
    x = t(np.array([[1.0, 1.0]]), device).astype(dtype)
    w = t(np.array([[1.0, u / 2]]), device).astype(dtype)
    b = t(np.array([u / 2]), device).astype(dtype)
    with matmul_paths.record() as paths:
        y = linear(x, w, b)
    assert float(y.astype("float32").item()) == 1.0 + u
    if device == "cuda":
        assert paths[-1] == "cublas-gemmex-f32"


def test_dot(device, rng):
    a, b = rng.standard_normal(5), rng.standard_normal(5)
    y = dot(t(a, device), t(b, device))
    assert y.shape == () and y.item() == pytest.approx(a @ b)
    assert gradcheck(dot, [a, b], device=device)
    with pytest.raises(ValueError, match=r"dot.*1-D.*\(2, 5\)"):
        dot(t(np.ones((2, 5)), device), t(b, device))


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]), ("i,j->ij", [(3,), (2,)]), ("i,i", [(3,), (3,)]),
    ("ij,ij->", [(2, 3), (2, 3)]), ("ij,ij->ij", [(2, 3), (2, 3)]), ("ijk,k->i", [(2, 3, 4), (4,)]),
    ("ij,j->j", [(2, 3), (3,)]), ("iij,jk->ik", [(2, 2, 3), (3, 2)]), ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ijk->kj", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]), ("...i->...", [(2, 3, 4)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]), ("ij,kj->ik", [(2, 3), (1, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum_values_and_grad(device, rng, eq, shapes):
    xs = [rng.standard_normal(s) for s in shapes]
    y = einsum(eq, *[t(x, device) for x in xs])
    np.testing.assert_allclose(y.numpy(), np.einsum(eq, *xs), rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda *ts: einsum(eq, *ts), xs, device=device)


def test_einsum_double_backward_and_list_operands(device, rng):
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))
    assert gradgradcheck(lambda a, b: einsum("ii,ij->j", a, b), [a, b], device=device)
    y = einsum("ij,jk->ik", [t(a, device), t(b, device)])
    np.testing.assert_allclose(y.numpy(), a @ b, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_einsum_low_precision(device, rng, dtype):
    a, b = rng.standard_normal((4, 64)), rng.standard_normal((64, 3))
    ta, tb = t(a, device).astype(dtype), t(b, device).astype(dtype)
    y = einsum("ik,kj->ij", ta, tb)
    assert str(y.dtype) == dtype
    ref = (ta.numpy().astype(np.float32) @ tb.numpy().astype(np.float32))
    np.testing.assert_array_equal(y.numpy(), ref.astype(y.dtype))  # fp32 result, rounded once


def test_einsum_errors(device):
    a = t(np.ones((2, 3)), device)
    with pytest.raises(ValueError, match="einsum: the equation has 2 operand"):
        einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="einsum: label 'j' has sizes 3 and 4"):
        einsum("ij,jk->ik", a, t(np.ones((4, 2)), device))
    with pytest.raises(ValueError, match="einsum: operand subscripts 'ijk'"):
        einsum("ijk->i", a)
    with pytest.raises(ValueError, match="einsum: output subscripts"):
        einsum("ij->iq", a)


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    ref = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    np.testing.assert_allclose(linear(mg.tensor(x), mg.tensor(w), mg.tensor(b)).numpy(),
                               ref.numpy(), rtol=1e-12)
    a, c = rng.standard_normal((2, 3, 3)), rng.standard_normal((3, 4))
    for eq, ops in [("bii->bi", [a]), ("bij,jk->bik", [a, c]), ("bij,jk", [a, c])]:
        ref = torch.einsum(eq, *[torch.tensor(o) for o in ops]).numpy()
        np.testing.assert_allclose(einsum(eq, *[mg.tensor(o) for o in ops]).numpy(), ref,
                                   rtol=1e-12)


def test_einsum_with_an_empty_operand(rng):
    a, b = np.zeros((0, 4)), rng.standard_normal((4, 2))
    assert einsum("ij,jk->ik", t(a, "cpu"), t(b, "cpu")).shape == (0, 2)
    assert gradcheck(lambda a, b: einsum("ij,jk->ik", a, b), [a, b])
    # A size-1 label broadcasts to 0 as to any size (it used to be widened to 1 instead).
    c = rng.standard_normal((1, 4))
    assert einsum("ij,ij->i", t(a, "cpu"), t(c, "cpu")).shape == (0,)
    assert gradcheck(lambda a, c: einsum("ij,ij->i", a, c), [a, c])
    assert einsum("ij,jk->", t(a, "cpu"), t(b, "cpu")).item() == 0.0


def test_einsum_of_one_bool_or_int32_operand_sums_as_sum_does():
    # NumPy's einsum sums bools with logical or (True) and keeps int32; PyTorch counts in int64
    mask = mg.tensor(np.array([[True, True], [True, False]]))
    total = einsum("ij->", mask)
    assert total.dtype == np.int64 and total.item() == 3
    rows = einsum("ij->i", mg.tensor(np.array([[1, 2], [3, 4]], np.int32)))
    assert rows.dtype == np.int64 and rows.numpy().tolist() == [3, 7]
    assert einsum("ij->ji", mask).dtype == np.bool_   # no sum: bools stay bools


def test_addr_of_bools_is_logical_as_in_pytorch():
    u, v = mg.tensor(np.array([True, False])), mg.tensor(np.array([True, True, False]))
    out = addr(mg.tensor(np.zeros((2, 3), bool)), u, v)
    assert out.dtype == np.bool_
    assert out.numpy().tolist() == [[True, True, False], [False, False, False]]


def test_zero_d_cases_pytorch_computes():
    # false alarms found by the wrong-operand sweep: PyTorch computes all three
    import minigrad.functional as F

    x = mg.tensor(np.arange(12.0).reshape(3, 4))
    assert F.index_select(x, 1, mg.tensor(np.array(2))).numpy().tolist() == [[2.0], [6.0], [10.0]]
    s = mg.tensor(5.0, requires_grad=True)
    picked = F.index_select(s, 0, mg.tensor(np.array([0])))
    picked.backward()
    assert picked.shape == () and picked.item() == 5.0 and s.grad.item() == 1.0
    assert F.squeeze(mg.tensor(5.0), 0).shape == ()
    empty = F.cross_entropy(mg.ones((0, 0)), mg.tensor(np.zeros(0, np.int64)))
    assert np.isnan(empty.item())


def _layout_of(arr, how):
    """``arr``'s values in another memory layout: C, F, a strided view or reversed rows."""
    if how == "F":
        return np.asfortranarray(arr)
    if how == "strided":
        wide = np.zeros((arr.shape[0], 2 * arr.shape[1]), arr.dtype)
        wide[:, ::2] = arr
        return wide[:, ::2]
    if how == "reversed":
        return np.ascontiguousarray(arr[::-1])[::-1]
    return arr


@settings(max_examples=60, deadline=None)
@given(m=st.sampled_from([1, 5, 7, 8, 16, 64, 65]),
       k=st.sampled_from([0, 9, 128, 129, 256, 8192, 9001]),
       n=st.sampled_from([1, 64, 65, 100, 8192, 9000]),
       a_layout=st.sampled_from(["C", "F", "strided", "reversed"]),
       b_layout=st.sampled_from(["C", "F", "strided", "reversed"]))
def test_cpu_gemm_any_layout_near_every_threshold(m, k, n, a_layout, b_layout):
    # every form, fed every memory layout, around each of its size thresholds
    assume(m * k * n <= 20_000_000)  # a product of two long sides would be slow, not new
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    a = _layout_of(rng.standard_normal((m, k)).astype(np.float32), a_layout)
    b = _layout_of(rng.standard_normal((k, n)).astype(np.float32), b_layout)
    out = cpu_gemm.matmul(a, b)
    assert out.shape == (m, n) and out.dtype == np.float32
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4,
                               atol=1e-3 * max(k, 1) ** 0.5)
