"""GPU matmul: every low-precision shape reaches cuBLAS GemmEx with float32 compute.

CuPy runs 2-D float16/bfloat16 ``matmul`` through cublasGemmEx with Tensor Cores, but upcasts
batched (ndim > 2) float16 to float32 and fails on batched bfloat16 (AMP_REFERENCE section 3).
So batched products are folded into one 2-D GEMM when ``b`` is shared across the batch, and
otherwise run as one loop-free ``cublasGemmStridedBatchedEx``.

While ``cuda_graph`` records a step, every float product goes to ``cublas_gemm`` instead (path
``"cublas-capturable"``): CuPy's cuBLAS wrappers cannot be called during stream capture.

Only imported when an operand is a CuPy array (``kernels.matmul`` imports it lazily).
"""

from __future__ import annotations

import cupy
import numpy as np

from . import cublas_gemm, matmul_paths
from .dtypes import bfloat16, float16, float32, is_low_precision, widest_float
from .matmul_paths import is_single_element_product

__all__ = ["matmul", "matmul_bias"]

# cudaDataType / cublasComputeType_t values from the CUDA headers, shared with cublas_gemm
# (``cupy.cuda.runtime`` exports the same CUDA_R_16F/CUDA_R_16BF; one table serves both modules).
_CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99
_CUDA_TYPE = {float16: cublas_gemm.CUDA_R_16F, bfloat16: cublas_gemm.CUDA_R_16BF}

# alpha/beta live on the host: with CUBLAS_POINTER_MODE_HOST cuBLAS reads them at enqueue time,
# so no device allocation or copy per call (and the call is CUDA-graph capturable).
_ONE = np.ones((), np.float32)
_ZERO = np.zeros((), np.float32)


def matmul(a, b):
    """``a @ b`` for CuPy arrays; fp16/bf16 accumulate in fp32 on Tensor Cores."""
    if a.dtype != b.dtype and (is_low_precision(a.dtype) or is_low_precision(b.dtype)):
        # Mixed precision (fp16 @ fp32, fp16 @ bf16, bf16 @ fp64): compute in the widest
        # floating type, which is float32 for fp16 with bf16 (neither holds the other).
        wide = widest_float((a.dtype, b.dtype)) or float32
        a, b = a.astype(wide), b.astype(wide)
    if cublas_gemm.use_capturable() and a.dtype == b.dtype and a.dtype in cublas_gemm.DTYPES:
        # CuPy's cuBLAS wrappers cannot run inside a CUDA graph capture (issue 1)
        matmul_paths.note("cublas-capturable")
        return cublas_gemm.matmul(a, b)
    if not is_low_precision(a.dtype):
        matmul_paths.note("cupy-2d" if a.ndim <= 2 and b.ndim <= 2 else "cupy")
        return cupy.matmul(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return _low_2d(a, b)
    if b.ndim <= 2:  # (..., m, k) @ (k, n) or (k,): fold the batch into the rows of one GEMM
        lead = a.shape[:-1]
        b2 = b[:, None] if b.ndim == 1 else b
        out = _low_2d(cupy.ascontiguousarray(a).reshape(-1, a.shape[-1]), b2, "cupy-folded-2d")
        return out.reshape(lead) if b.ndim == 1 else out.reshape(*lead, b.shape[-1])
    matmul_paths.note("cublas-strided-batched")
    if a.ndim == 1:  # (k,) @ (..., k, n): a row vector, squeezed afterwards (NumPy rule)
        return _strided_batched(a[None, :], b)[..., 0, :]
    return _strided_batched(a, b)


class _CupyCublas:
    """CuPy's cuBLAS wrappers under the nvmath names ``cublas_gemm`` calls (they set the
    current stream themselves, so they are for eager products only)."""

    @staticmethod
    def gemm_ex(*args):
        from cupy.cuda import cublas
        cublas.gemmEx(*args)

    @staticmethod
    def gemm_strided_batched_ex(*args):
        from cupy.cuda import cublas
        cublas.gemmStridedBatchedEx(*args)


_ADD_BIAS = cupy.ElementwiseKernel("float32 acc, T bias", "T y", "y = (T)(acc + (float)bias)",
                                   "minigrad_add_bias_round")


def matmul_bias(a, b, bias):
    """``a @ b + bias`` for 2-D float16/bfloat16 operands and a (n,) bias of their dtype: the
    product's float32 accumulator plus the bias, rounded once (PyTorch's addmm epilogue),
    instead of a rounded product plus the bias rounded again."""
    if cublas_gemm.use_capturable():
        matmul_paths.note("cublas-capturable-f32")
        acc = cublas_gemm.matmul(a, b, float32)
    else:
        from cupy.cuda import cublas, device

        matmul_paths.note("cublas-gemmex-f32")
        with a.device:
            handle = device.get_cublas_handle()
            mode = cublas.getPointerMode(handle)
            cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
            try:
                acc = cublas_gemm._matmul(_CupyCublas, handle, a, b, cupy, float32)
            finally:
                cublas.setPointerMode(handle, mode)
    return _ADD_BIAS(acc, bias)


def _low_2d(a, b, path="cupy-2d"):
    """fp16/bf16 product of at most 2-D operands: cuBLAS GemmEx (fp32 compute), except a
    single inner product, which CuPy would reduce in the output dtype: upcast, multiply in
    float32, round once (invariant 4)."""
    if is_single_element_product(a.shape, b.shape):
        matmul_paths.note("cupy-dot-fp32")
        return cupy.matmul(a.astype(float32), b.astype(float32)).astype(a.dtype)
    matmul_paths.note(path)
    return cupy.matmul(a, b)


def _strided_batched(a, b):
    """Batched GEMM (``a.ndim >= 2``, ``b.ndim >= 3``) in one cublasGemmStridedBatchedEx."""
    from cupy.cuda import cublas, device

    m, k = a.shape[-2:]
    if b.shape[-2] != k:
        raise ValueError(f"matmul: inner dimensions differ: a {a.shape} @ b {b.shape}; "
                         "a.shape[-1] must equal b.shape[-2]")
    n = b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])  # shapes only: host math
    count = 1
    for s in batch:
        count *= s
    out = cupy.empty(batch + (m, n), dtype=a.dtype)
    if count == 0 or m == 0 or n == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    # A 2-D operand is shared by every batch entry: stride 0, no broadcast copy.
    a, stride_a = _batched_operand(a, batch, m * k)
    b, stride_b = _batched_operand(b, batch, k * n)
    dt = _CUDA_TYPE[a.dtype]
    with a.device:
        handle = device.get_cublas_handle()
        mode = cublas.getPointerMode(handle)
        cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
        try:
            # cuBLAS is column-major. A row-major (r, c) matrix is its column-major transpose,
            # so C = A @ B is computed as C^T = B^T @ A^T: b goes first, m and n swap, and each
            # leading dimension is the row length of the row-major matrix (n for b and C, k for a).
            cublas.gemmStridedBatchedEx(
                handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k,
                _ONE.ctypes.data, b.data.ptr, dt, n, stride_b,
                a.data.ptr, dt, k, stride_a,
                _ZERO.ctypes.data, out.data.ptr, dt, n, m * n,
                count, cublas_gemm.COMPUTE_32F, _CUBLAS_GEMM_DEFAULT_TENSOR_OP)
        finally:
            cublas.setPointerMode(handle, mode)
    return out


def _batched_operand(x, batch, mat_size):
    """A C-contiguous operand for the strided-batched GEMM and its batch stride (elements)."""
    if x.ndim == 2:
        return cupy.ascontiguousarray(x), 0
    x = cupy.ascontiguousarray(cupy.broadcast_to(x, batch + x.shape[-2:]))
    return x, mat_size
