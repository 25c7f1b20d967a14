"""GPU matmul: every low-precision shape reaches cuBLAS GemmEx with float32 compute.

CuPy runs 2-D float16/bfloat16 ``matmul`` through cublasGemmEx with Tensor Cores, but upcasts
batched (ndim > 2) float16 to float32 and fails on batched bfloat16 (AMP_REFERENCE section 3).
So batched products are folded into one 2-D GEMM when ``b`` is shared across the batch, and
otherwise run as a loop-free strided-batched GEMM.
"""

from __future__ import annotations

import cupy

from .dtypes import float32, is_low_precision
from .kernels import last_matmul_path


def matmul(a, b):
    if not (is_low_precision(a.dtype) and a.dtype == b.dtype) or (a.ndim <= 2 and b.ndim <= 2):
        last_matmul_path["path"] = "cupy-2d" if a.ndim <= 2 and b.ndim <= 2 else "cupy"
        if is_low_precision(a.dtype) != is_low_precision(b.dtype):
            a, b = a.astype(float32), b.astype(float32)
        return cupy.matmul(a, b)
    if b.ndim == 2:  # (..., m, k) @ (k, n): fold the batch into the rows of one GEMM
        last_matmul_path["path"] = "cupy-folded-2d"
        lead = a.shape[:-1]
        out = cupy.matmul(cupy.ascontiguousarray(a).reshape(-1, a.shape[-1]), b)
        return out.reshape(*lead, b.shape[-1])
    last_matmul_path["path"] = "cublas-strided-batched"
    return _strided_batched(a, b)


def _strided_batched(a, b):
    from cupy.cuda import cublas, device

    batch = cupy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = cupy.ascontiguousarray(cupy.broadcast_to(a, batch + a.shape[-2:]))
    b = cupy.ascontiguousarray(cupy.broadcast_to(b, batch + b.shape[-2:]))
    m, k = a.shape[-2:]
    n = b.shape[-1]
    count = 1
    for s in batch:
        count *= s
    out = cupy.empty(batch + (m, n), dtype=a.dtype)
    if count == 0 or m == 0 or n == 0:
        return out
    dt = cupy.cuda.runtime.CUDA_R_16BF if a.dtype.name == "bfloat16" else cupy.cuda.runtime.CUDA_R_16F
    alpha = cupy.array(1.0, dtype=float32)
    beta = cupy.array(0.0, dtype=float32)
    handle = device.get_cublas_handle()
    # cuBLAS is column-major: C^T = B^T A^T, so pass b first with swapped m/n.
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_DEVICE)
    try:
        cublas.gemmStridedBatchedEx(
            handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k,
            alpha.data.ptr, b.data.ptr, dt, n, k * n, a.data.ptr, dt, k, m * k,
            beta.data.ptr, out.data.ptr, dt, n, m * n, count,
            cublas.CUBLAS_COMPUTE_32F, cublas.CUBLAS_GEMM_DEFAULT_TENSOR_OP)
    finally:
        cublas.setPointerMode(handle, mode)
    return out
