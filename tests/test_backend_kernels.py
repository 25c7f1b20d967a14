"""CPU helpers of ``_backend.kernels`` that ops rely on for speed: they must not change values."""

import numpy as np
import pytest

from minigrad._backend import kernels


def test_ufunc_operand_is_a_contiguous_copy_on_the_cpu(rng):
    x = rng.standard_normal((4, 6, 8))
    view = x[:, ::2, 1::2]
    dense = kernels.ufunc_operand(view)
    assert dense.flags.c_contiguous and not np.shares_memory(dense, x)
    np.testing.assert_array_equal(dense, view)


@pytest.mark.parametrize("cache_limit", [1 << 22, 0])  # cached, and built every call
def test_index_grid_values_cache_and_read_only(monkeypatch, cache_limit):
    monkeypatch.setattr(kernels, "_INDEX_GRID_CACHE_BYTES", cache_limit)
    like = np.zeros(1, np.int8)
    shape, steps = (2, 3, 4, 5), (600, 200, 20, 2)
    grid = kernels.index_grid(like, shape, steps, np.int32)
    i = np.indices(shape)
    np.testing.assert_array_equal(grid, sum(a * s for a, s in zip(i, steps)))
    assert grid.dtype == np.int32 and not grid.flags.writeable
    again = kernels.index_grid(like, shape, steps, np.int32)
    assert (again is grid) == bool(cache_limit)
    assert kernels.index_grid(like, shape, steps, np.int64).dtype == np.int64


@pytest.mark.parametrize("run,bufsize", [(100, None), (640, 640), (1000, 992), (5000, None)])
def test_ufunc_rows_sets_a_row_sized_buffer_and_restores_it(run, bufsize):
    before = np.getbufsize()
    with kernels.ufunc_rows(run):
        assert np.getbufsize() == (bufsize or before)
        acc = np.zeros((7, run + 9), np.float32)
        acc[:, 3:3 + run] += np.ones((7, run), np.float32)
    assert np.getbufsize() == before
    assert acc.sum() == 7 * run


@pytest.mark.parametrize("shape", [(1600, 64), (1000, 3), (300, 64), (600, 300), (1000, 1)])
def test_transposed_copy(rng, shape):
    a = rng.standard_normal(shape).astype(np.float32)
    out = kernels.transposed(a)
    assert out.flags.c_contiguous and out.shape == shape[::-1]
    np.testing.assert_array_equal(out, a.T)


# ----------------------------------------------------------------------- BLAS threads per GEMM
def test_blas_threads_follow_product_size_and_machine_load(monkeypatch):
    from minigrad._backend import blas

    monkeypatch.setitem(blas._state, "cap", 4)
    monkeypatch.setitem(blas._state, "cores", 4)
    monkeypatch.setattr(blas, "free_cores", lambda: 4.0)      # idle
    assert [blas.threads_for(f) for f in (1e6, 3e6, 5e6, 1e9)] == [1, 2, 3, 4]
    monkeypatch.setattr(blas, "free_cores", lambda: 3.0)      # one core busy elsewhere
    assert [blas.threads_for(f) for f in (6e6, 2e7, 1e9)] == [1, 3, 3]
    monkeypatch.setattr(blas, "free_cores", lambda: 0.4)      # every core busy
    assert blas.threads_for(1e9) == 1
    monkeypatch.setitem(blas._state, "cap", 1)                 # OPENBLAS_NUM_THREADS=1
    monkeypatch.setattr(blas, "free_cores", lambda: 4.0)
    assert blas.threads_for(1e9) == 1


def test_blas_threads_are_set_on_numpys_blas_and_capped():
    from minigrad._backend import blas

    a = np.ones((64, 512), np.float32)
    kernels.matmul(a, a.T)
    if not blas._controller():
        pytest.skip("threadpoolctl does not see NumPy's BLAS here")
    assert 1 <= blas._state["now"] <= blas._state["cap"]
    assert 0.0 <= blas.free_cores() <= len(blas._cpus())
    try:
        blas.set_cap(1)
        kernels.matmul(np.ones((512, 512), np.float32), np.ones((512, 512), np.float32))
        assert blas._controller().get_num_threads() == 1
    finally:
        blas.set_cap(None)
