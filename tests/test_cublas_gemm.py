"""The capturable cuBLAS GEMM (``_backend/cublas_gemm.py``) on the CPU.

Its row-major -> column-major translation (operand order, op flags, leading dimensions, batch
strides, dtype -> cudaDataType / computeType) runs on NumPy arrays against ``FakeCublas``, a
NumPy emulation of ``cublasGemmEx`` and ``cublasGemmStridedBatchedEx`` that reads and writes
memory by address exactly as cuBLAS documents (column-major, ``ld >= max(1, rows)``, host
alpha/beta). The GPU test of the real call is in tests/test_gpu_paths.py.
"""

import ctypes
import types

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad._backend import cublas_gemm as cg

BF16 = np.dtype(ml_dtypes.bfloat16)
CODES = {cg.CUDA_R_16F: np.dtype(np.float16), cg.CUDA_R_16BF: BF16,
         cg.CUDA_R_32F: np.dtype(np.float32), cg.CUDA_R_64F: np.dtype(np.float64)}


def _matrix(ptr, dtype, rows, cols, ld):
    """The column-major (rows, cols) matrix at address ``ptr`` with leading dimension ``ld``."""
    if ld < max(1, rows):
        raise ValueError(f"CUBLAS_STATUS_INVALID_VALUE: ld {ld} < max(1, {rows})")
    n = (cols - 1) * ld + rows
    buf = (ctypes.c_byte * (n * dtype.itemsize)).from_address(ptr)
    return np.ndarray((rows, cols), dtype, buffer=buf, strides=(dtype.itemsize,
                                                                 ld * dtype.itemsize))


class FakeCublas:
    """cublasGemmEx / cublasGemmStridedBatchedEx on host memory; records every call."""

    def __init__(self):
        self.calls = []

    def gemm_ex(self, handle, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct,
                ldc, compute, algo):
        self.calls.append(("gemm_ex", dict(ta=ta, tb=tb, m=m, n=n, k=k, a=a, lda=lda, b=b,
                                            ldb=ldb, c=c, ldc=ldc, type=at, compute=compute)))
        self._run(ta, tb, m, n, k, alpha, a, at, lda, 0, b, bt, ldb, 0, beta, c, ct, ldc, 0, 1,
                  compute)

    def gemm_strided_batched_ex(self, handle, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt,
                                ldb, sb, beta, c, ct, ldc, sc, count, compute, algo):
        self.calls.append(("strided", dict(ta=ta, tb=tb, m=m, n=n, k=k, lda=lda, ldb=ldb,
                                           ldc=ldc, sa=sa, sb=sb, sc=sc, count=count)))
        self._run(ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct, ldc, sc,
                  count, compute)

    @staticmethod
    def _run(ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct, ldc, sc,
             count, compute):
        assert at == bt and compute in (cg.COMPUTE_32F, cg.COMPUTE_64F)
        assert ct == at or (ct == cg.CUDA_R_32F and at in (cg.CUDA_R_16F, cg.CUDA_R_16BF))
        dt, cdt = CODES[at], CODES[ct]
        acc = np.float64 if compute == cg.COMPUTE_64F else np.float32
        assert (at == cg.CUDA_R_64F) == (acc is np.float64)
        al = _matrix(alpha, np.dtype(acc), 1, 1, 1)[0, 0]
        be = _matrix(beta, np.dtype(acc), 1, 1, 1)[0, 0]
        size = dt.itemsize
        for i in range(count):
            A = _matrix(a + i * sa * size, dt, *((m, k) if ta == cg.OP_N else (k, m)), lda)
            B = _matrix(b + i * sb * size, dt, *((k, n) if tb == cg.OP_N else (n, k)), ldb)
            C = _matrix(c + i * sc * cdt.itemsize, cdt, m, n, ldc)
            A = A if ta == cg.OP_N else A.T
            B = B if tb == cg.OP_N else B.T
            res = al * (A.astype(acc) @ B.astype(acc))
            if be != 0:  # cuBLAS does not read C when beta == 0
                res = res + be * C.astype(acc)
            C[...] = res.astype(cdt)


def gemm(a, b):
    lib = FakeCublas()
    return cg._matmul(lib, 0, a, b, np), lib.calls


def reference(a, b):
    acc = np.float64 if a.dtype == np.float64 else np.float32
    return np.matmul(a.astype(acc), b.astype(acc)).astype(a.dtype)


# ----------------------------------------------------------------------------- layouts
def test_operand_layout():
    assert cg.operand_layout((3, 4), (4, 1)) == (cg.OP_N, 4)        # C-contiguous
    assert cg.operand_layout((3, 4), (8, 1)) == (cg.OP_N, 8)        # rows of a wider buffer
    assert cg.operand_layout((4, 3), (1, 4)) == (cg.OP_T, 4)        # a .T view: no copy
    assert cg.operand_layout((3, 4), (8, 2)) is None                # strided both ways: copy
    assert cg.operand_layout((3, 4), (2, 1)) is None                # overlapping rows: copy
    assert cg.operand_layout((1, 5), (1, 1)) == (cg.OP_N, 5)        # one row: ld is free
    assert cg.operand_layout((5, 1), (1, 1)) == (cg.OP_N, 1)        # one column
    assert cg.operand_layout((1, 5), (7, 5)) == (cg.OP_T, 5)        # one row, strided elements


def test_plan_swaps_operands_for_column_major():
    # C (m=2, n=5) = A (2, 3) @ B (3, 5), both C-contiguous: cuBLAS computes C^T = B^T A^T
    call = cg.plan_gemm((2, 3), (3, 1), (3, 5), (5, 1), np.dtype(np.float16))
    assert call == cg.GemmCall(transa=cg.OP_N, transb=cg.OP_N, m=5, n=2, k=3, lda=5, ldb=3,
                               ldc=5, stride_a=0, stride_b=0, stride_c=10, batch=1,
                               data_type=cg.CUDA_R_16F, compute_type=cg.COMPUTE_32F,
                               c_type=cg.CUDA_R_16F)
    # a transposed view of a (3, 2) array as A: op T on cuBLAS's second operand, ld 2
    call = cg.plan_gemm((2, 3), (1, 2), (3, 5), (5, 1), np.dtype(np.float32))
    assert (call.transa, call.transb, call.ldb) == (cg.OP_N, cg.OP_T, 2)


def test_dtype_mapping():
    assert cg.DTYPES[np.dtype(np.float16)][:2] == (2, 68)          # CUDA_R_16F, COMPUTE_32F
    assert cg.DTYPES[BF16][:2] == (14, 68)                          # CUDA_R_16BF, COMPUTE_32F
    assert cg.DTYPES[np.dtype(np.float32)][:2] == (0, 68)           # IEEE fp32, no TF32
    assert cg.DTYPES[np.dtype(np.float64)][:2] == (1, 70)           # CUDA_R_64F, COMPUTE_64F


# ----------------------------------------------------------------------------- end to end
CASES = [((4, 3), (3, 5), "gemm_ex"), ((3,), (3, 5), "gemm_ex"), ((4, 3), (3,), "gemm_ex"),
         ((3,), (3,), "gemm_ex"), ((2, 4, 3), (3, 5), "gemm_ex"),          # folded batch
         ((2, 4, 3), (2, 3, 5), "strided"), ((4, 3), (2, 3, 5), "strided"),
         ((2, 1, 4, 3), (3, 3, 5), "strided"), ((3,), (2, 3, 5), "strided"),
         ((1, 1), (1, 1), "gemm_ex"), ((4, 0), (0, 5), None), ((0, 3), (3, 5), None)]


@pytest.mark.parametrize("sa,sb,entry", CASES)
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64])
def test_matches_numpy(sa, sb, entry, dtype, rng):
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    got, calls = gemm(a, b)
    ref = reference(a, b)
    assert got.shape == np.matmul(a.astype(np.float32), b.astype(np.float32)).shape
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got.astype(np.float64), ref.astype(np.float64))
    assert [c[0] for c in calls] == ([entry] if entry else [])


def test_transposed_operands_are_not_copied(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)   # used as a.T: (4, 3)
    b = rng.standard_normal((5, 3)).astype(np.float32)   # used as b.T: (3, 5)
    got, calls = gemm(a.T, b.T)
    np.testing.assert_array_equal(got, reference(a.T, b.T))
    (_, args), = calls
    assert args["a"] == b.ctypes.data and args["b"] == a.ctypes.data   # the original buffers
    assert (args["ta"], args["tb"], args["lda"], args["ldb"]) == (cg.OP_T, cg.OP_T, 3, 4)


def test_shared_operand_has_batch_stride_zero(rng):
    a = rng.standard_normal((4, 3)).astype(np.float16)
    b = rng.standard_normal((6, 3, 5)).astype(np.float16)
    _, calls = gemm(a, b)
    (_, args), = calls
    assert (args["count"], args["sa"], args["sb"], args["sc"]) == (6, 15, 0, 20)


def test_bad_operands_raise(rng):
    with pytest.raises(TypeError, match=r"float16 @ float32"):
        gemm(np.ones((2, 2), np.float16), np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match="int64"):
        gemm(np.ones((2, 2), np.int64), np.ones((2, 2), np.int64))
    with pytest.raises(ValueError, match=r"inner dimensions differ.*\(2, 3\) @ b \(2, 2\)"):
        gemm(np.ones((2, 3)), np.ones((2, 2)))


@st.composite
def operands(draw):
    m, k, n = (draw(st.integers(1, 5)) for _ in range(3))
    batch_a = draw(st.sampled_from([(), (1,), (3,), (2, 3), (2, 1)]))
    batch_b = draw(st.sampled_from([(), (3,), (1, 3), (2, 3)]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))

    def make(batch, r, c, transpose, step):
        if transpose:   # stored (c, r), used through a transposed view
            x = rng.standard_normal(batch + (c, r * step))[..., ::step]
            return np.swapaxes(x, -1, -2)
        return rng.standard_normal(batch + (r, c * step))[..., ::step]

    a = make(batch_a, m, k, draw(st.booleans()), draw(st.sampled_from([1, 2])))
    b = make(batch_b, k, n, draw(st.booleans()), draw(st.sampled_from([1, 2])))
    return a, b


@settings(max_examples=60, deadline=None)
@given(operands(), st.sampled_from([np.float32, np.float64]))
def test_property_any_layout(ab, dtype):
    # Views stay views where cuBLAS can read them (astype copies, so cast first, then re-view)
    a, b = ab
    a = a.astype(dtype)
    b = b.astype(dtype)
    got, _ = gemm(a, b)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-5 if dtype == np.float32 else 1e-12)


@settings(max_examples=40, deadline=None)
@given(operands())
def test_property_views_reach_cublas_uncopied(ab):
    a, b = ab
    got, calls = gemm(a, b)   # float64 views as drawn (no astype): layouts kept
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    assert len(calls) == 1


def test_use_capturable_follows_recording():
    assert cg.use_capturable() is cg._ALWAYS
    token = cg._recording.set(True)
    try:
        assert cg.recording() and cg.use_capturable()
    finally:
        cg._recording.reset(token)
    assert not cg.recording()


def test_missing_nvmath_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cg, "_lib", [None])
    assert cg.available() is False
    with pytest.raises(RuntimeError, match=r"nvmath-python.*minigrad\[nvmath\]"):
        cg._require()


def test_prepare_sets_stream_then_workspace_before_capture(monkeypatch):
    # The handle's state is set outside the capture, stream first: cublasSetStream resets the
    # workspace to cuBLAS's lazily allocated pool, so the own workspace must come after it.
    calls = []

    class Lib:
        def create(self):
            calls.append("create")
            return 42

        def __getattr__(self, name):
            return lambda *args: calls.append((name,) + args)

    class Stream:
        def __init__(self, ptr, capturing):
            self.ptr, self.capturing = ptr, capturing

        def is_capturing(self):
            return self.capturing

    class Buffer:
        nbytes = cg.WORKSPACE_BYTES
        data = types.SimpleNamespace(ptr=0xBEEF)

    fake_cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(
        Device=lambda: types.SimpleNamespace(id=0),
        get_current_stream=lambda: Stream(7, False)),
        empty=lambda size, dtype: Buffer())
    monkeypatch.setattr(cg, "cupy", fake_cupy)
    monkeypatch.setattr(cg, "_lib", [Lib()])
    monkeypatch.setattr(cg, "_handles", {})
    assert cg.prepare(Stream(7, False)) == 42
    assert calls == ["create", ("set_stream", 42, 7),
                     ("set_workspace", 42, 0xBEEF, cg.WORKSPACE_BYTES),
                     ("set_pointer_mode", 42, cg.POINTER_MODE_HOST)]
    calls.clear()
    assert cg.prepare() == 42 and calls == []        # cached per (device, stream)
    with pytest.raises(RuntimeError, match="prepared for this stream before capture"):
        cg.prepare(Stream(8, True))                   # never configured inside a capture
    assert calls == []


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_float32_result_keeps_the_accumulator(dtype, rng):
    a = rng.standard_normal((5, 7)).astype(dtype)
    b = rng.standard_normal((7, 3)).astype(dtype).T.copy().T      # a transposed view as B
    got = cg._matmul(FakeCublas(), 0, a, b, np, np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, a.astype(np.float32) @ b.astype(np.float32))
    with pytest.raises(TypeError, match="float32 result is for float16/bfloat16"):
        cg._matmul(FakeCublas(), 0, a.astype(np.float32), b.astype(np.float32), np, np.float16)
