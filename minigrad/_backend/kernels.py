"""Numerical kernels whose implementation differs between CPU and GPU.

Low-precision matmul follows Tensor Core semantics everywhere (invariant 4): float16/bfloat16
inputs, float32 accumulation, result rounded to the input dtype. NumPy's native float16 matmul
is both slow and accumulates in float16, so on the CPU we upcast, run float32 BLAS and round.
"""

from __future__ import annotations

import numpy as np

from .dtypes import float32, is_low_precision

__all__ = ["matmul", "sum_fp32", "last_matmul_path", "emulates_low_precision",
           "im2col_keep_bytes"]

# Which path the most recent matmul took; tests assert on it (GPU batched vs folded, CPU emulation).
last_matmul_path = {"path": None}


def emulates_low_precision(array) -> bool:
    """True where fp16/bf16 GEMMs are emulated in fp32 (the CPU): callers may upcast early."""
    return type(array) is np.ndarray


def im2col_keep_bytes(array) -> int:
    """The largest im2col matrix a convolution keeps from forward for its weight gradient.

    On the CPU the im2col copy is memory bound and costs about as much as the GEMM, so keeping
    it (up to 32 MiB per convolution) saves a third of a small conv's backward. The GPU rebuilds
    it in microseconds and keeps nothing: memory is what AMP saves there.
    """
    return 32 << 20 if type(array) is np.ndarray else 0


def matmul(a, b):
    """``a @ b`` with broadcast batch dims; low precision accumulates in float32."""
    if type(a) is np.ndarray:
        if is_low_precision(a.dtype) or is_low_precision(b.dtype):
            out_dtype = a.dtype if a.dtype == b.dtype else np.result_type(a.dtype, b.dtype)
            last_matmul_path["path"] = "cpu-emulated-fp32-accumulate"
            return np.matmul(a.astype(float32), b.astype(float32)).astype(out_dtype)
        last_matmul_path["path"] = "cpu"
        return _cpu_matmul(a, b)
    from . import gpu_matmul  # CuPy only; imported lazily so CPU users never load it
    return gpu_matmul.matmul(a, b)


# OpenBLAS runs a GEMM with a few rows and a long reduction (a conv's weight gradient, e.g. LeNet's
# 6 x 57344 x 25) 2-3x slower than one GEMV per row. Below these bounds the GEMM is faster.
_GEMV_MAX_ROWS, _GEMV_MIN_REDUCTION = 8, 8192


def _cpu_matmul(a, b):
    if (a.ndim == 2 and b.ndim == 2 and a.shape[0] <= _GEMV_MAX_ROWS
            and a.shape[1] >= _GEMV_MIN_REDUCTION and b.T.flags.c_contiguous):
        out = np.empty((a.shape[0], b.shape[1]), dtype=np.result_type(a.dtype, b.dtype))
        for i in range(a.shape[0]):
            np.matmul(b.T, a[i], out=out[i])  # b.T is C-ordered: a contiguous GEMV
        return out
    return np.matmul(a, b)


def sum_fp32(x, axis=None, keepdims=False):
    """Sum in float32 or wider (invariant 3), returned in float32/float64."""
    xp = np if type(x) is np.ndarray else _xp(x)
    acc = x.dtype if x.dtype == np.float64 else float32
    if x.dtype.kind in "biu":
        acc = None
    return xp.sum(x, axis=axis, dtype=acc, keepdims=keepdims)


def _xp(x):
    from . import get_array_module
    return get_array_module(x)
