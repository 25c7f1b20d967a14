"""NumPy's float32 GEMM, steered around the shapes its OpenBLAS runs slowly.

A convolution's im2col GEMMs are skinny: LeNet-5's are 6 x 25 x 57344 (conv1's forward),
6 x 57344 x 25 (its weight gradient) and 16 x 6400 x 150 (conv2's). OpenBLAS 0.3.31 (numpy 2.4,
SkylakeX kernels, measured on the 2-core AMD EPYC development machine at one and two threads,
``benchmarks/cpu_training.py``) runs these 1.3-4.5x slower than the same products written
differently, and the rewrites below are exact rearrangements of the same sums:

- fewer than 8 rows (OpenBLAS's edge path) against a short reduction and many columns: column
  blocks whose slice of ``b`` (about 400 KB) stays in L2 (6 x 25 x 57344: 690 -> 350 us at one
  thread, 430 -> 410 at two; 4 x 100 x 20000: 746 -> 215);
- fewer than 8 rows against a long reduction and few columns: the reduction in blocks of 4096,
  their products summed (6 x 57344 x 25: 1180 -> 265 us at one thread, 1090 -> 250 at two; a
  GEMV per row, the rule before, took 510-800);
- 8-64 rows against a reduction of 256 or more and at least 100 columns, with ``b`` the
  transpose of a C-ordered array (``x @ w.T``, ``gy @ cols.T``): the transposed product
  ``(b.T @ a.T).T``, copied back to C order (16 x 6400 x 150: 906 -> 500 us; 64 x 512 x 512:
  495 -> 370; 8 x 8192 x 512: 3440 -> 2120). Other shapes lose with it (2048 x 256 x 64: 1.9x
  slower), so it is kept to these;
- 5-7 rows otherwise: padded to 8 rows (1.3-2x faster than the edge path).

Blocked products sum in another order than one BLAS call, as BLAS's own blocking does; the
results agree to float32 rounding (``tests/test_ops_linalg.py``).
"""

from __future__ import annotations

import numpy as np

from . import blas

__all__ = ["form", "matmul"]

_f32 = np.float32
_FEW_ROWS = 8               # below this OpenBLAS's row-edge kernel is the slow one
_L2_FLOATS = 100_000        # elements of b per column block (400 KB, inside L2)
_SHORT_REDUCTION, _MANY_COLUMNS = 128, 8192
_LONG_REDUCTION, _FEW_COLUMNS, _REDUCTION_BLOCK = 8192, 64, 4096
_SLOW_ROWS, _PADDED_ROWS = range(5, 8), 8


def matmul(a, b):
    """``a @ b`` of NumPy arrays; 2-D float32 products take the fastest of the forms above."""
    if a.ndim != 2 or b.ndim != 2 or a.dtype != _f32 or b.dtype != _f32:
        if a.ndim and b.ndim:  # (batched) products: operations of the larger batch
            n = b.shape[-1] if b.ndim > 1 else 1
            blas.for_flops(2 * max(a.size * n, b.size * (a.shape[-2] if a.ndim > 1 else 1)))
        return np.matmul(a, b)
    blas.for_flops(2 * a.size * b.shape[1])
    how = form(a, b)
    if how == "plain":
        return np.matmul(a, b)
    if how == "transposed":
        return np.ascontiguousarray(np.matmul(b.T, a.T).T)
    if how == "column blocks":
        return _column_blocks(a, b, max(256, _L2_FLOATS // max(a.shape[1], 1) // 256 * 256))
    if how == "reduction blocks":
        return _reduction_blocks(a, b)
    padded = np.zeros((_PADDED_ROWS, a.shape[1]), dtype=_f32)
    padded[:a.shape[0]] = a
    return np.matmul(padded, b)[:a.shape[0]]  # the first m rows of a C-ordered array


def form(a, b) -> str:
    """Which form ``matmul`` gives the 2-D float32 product ``a @ b``: "plain", "transposed",
    "column blocks", "reduction blocks" or "padded"."""
    m, k = a.shape
    n = b.shape[1]
    if m < _FEW_ROWS:
        if k <= _SHORT_REDUCTION and n >= _MANY_COLUMNS:
            return "column blocks"
        if k >= _LONG_REDUCTION and n <= _FEW_COLUMNS:
            return "reduction blocks"
        return "padded" if m in _SLOW_ROWS else "plain"
    if (m <= 64 and k >= 256 and n >= 100 and b.flags.f_contiguous and not b.flags.c_contiguous
            and a.flags.c_contiguous):
        return "transposed"
    return "plain"


def _column_blocks(a, b, width):
    out = np.empty((a.shape[0], b.shape[1]), dtype=_f32)
    for j in range(0, b.shape[1], width):
        np.matmul(a, b[:, j:j + width], out=out[:, j:j + width])
    return out


def _reduction_blocks(a, b):
    step = _REDUCTION_BLOCK
    out = np.matmul(a[:, :step], b[:step])
    part = np.empty_like(out)
    for i in range(step, a.shape[1], step):
        out += np.matmul(a[:, i:i + step], b[i:i + step], out=part)
    return out
