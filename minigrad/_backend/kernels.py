"""Numerical kernels whose implementation differs between CPU and GPU.

Low-precision matmul follows Tensor Core semantics everywhere (invariant 4): float16/bfloat16
inputs, float32 accumulation, result rounded to the input dtype. NumPy's native float16 matmul
is both slow and accumulates in float16, so on the CPU we upcast, run float32 BLAS and round.
"""

from __future__ import annotations

import numpy as np

from .dtypes import float32, is_low_precision

__all__ = ["matmul", "sum_fp32", "last_matmul_path", "emulates_low_precision"]

# Which path the most recent matmul took; tests assert on it (GPU batched vs folded, CPU emulation).
last_matmul_path = {"path": None}


def emulates_low_precision(array) -> bool:
    """True where fp16/bf16 GEMMs are emulated in fp32 (the CPU): callers may upcast early."""
    return type(array) is np.ndarray


def matmul(a, b):
    """``a @ b`` with broadcast batch dims; low precision accumulates in float32."""
    if type(a) is np.ndarray:
        if is_low_precision(a.dtype) or is_low_precision(b.dtype):
            out_dtype = a.dtype if a.dtype == b.dtype else np.result_type(a.dtype, b.dtype)
            last_matmul_path["path"] = "cpu-emulated-fp32-accumulate"
            return np.matmul(a.astype(float32), b.astype(float32)).astype(out_dtype)
        last_matmul_path["path"] = "cpu"
        return np.matmul(a, b)
    from . import gpu_matmul  # CuPy only; imported lazily so CPU users never load it
    return gpu_matmul.matmul(a, b)


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
