"""cuBLAS GEMMs that a CUDA graph can record: cuBLAS called through ``nvmath-python``.

CuPy 14.2's cuBLAS wrappers (``gemmEx``, ``gemmStridedBatchedEx``, hence ``cupy.matmul``) call
``cublasSetStream`` on every call and refuse to do so while the stream captures
(``NotImplementedError: calling cuBLAS API during stream capture is currently unsupported``). This
module calls ``cublasGemmEx`` / ``cublasGemmStridedBatchedEx`` through ``nvmath.bindings.cublas``
on handles of its own, one per (device, stream), whose state is set once, *before* capture:

- the stream (``cublasSetStream``), then a workspace of our own (``cublasSetWorkspace``):
  setting the stream resets the workspace to cuBLAS's default pool, which cuBLAS may allocate
  lazily, and allocating is not allowed while capturing;
- ``CUBLAS_POINTER_MODE_HOST``: alpha/beta are host scalars read at enqueue time, so the graph
  records their values and no device scalar is allocated per call.

``gpu_matmul`` sends products here while :mod:`cuda_graph` warms up and records a step
(``recording()``), and
for every product when ``MINIGRAD_CUBLAS=nvmath`` (to be made the default if the GPU benchmarks
show it as fast as ``cupy.matmul``). Without ``nvmath-python`` the eager path stays on CuPy and a
capture fails with an error saying what to install.

The translation from row-major arrays to cuBLAS's column-major arguments is pure Python and
works on NumPy arrays too (``_matmul(lib, handle, a, b, xp)``): the tests run it against a NumPy
emulation of the two cuBLAS entry points. A row-major (r, c) matrix with row stride ``ld`` is,
read column-major, its transpose with leading dimension ``ld``; so ``C = A @ B`` is issued as
``C^T = B^T @ A^T``: ``b`` is cuBLAS's first operand, m and n swap, ``ldc = n``. An operand stored
transposed (a ``.T`` view) is passed as is with ``CUBLAS_OP_T`` instead of being copied.
"""

from __future__ import annotations

import contextvars
import os
from typing import NamedTuple

import numpy as np

from . import cupy
from .dtypes import bfloat16, float16, float32, float64

__all__ = ["available", "recording", "use_capturable", "prepare", "matmul", "GemmCall",
           "operand_layout", "plan_gemm", "DTYPES"]

# Values from the CUDA headers (library_types.h, cublas_api.h).
OP_N, OP_T = 0, 1
CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF = 0, 1, 2, 14
COMPUTE_32F, COMPUTE_64F = 68, 70
GEMM_DEFAULT = -1
POINTER_MODE_HOST = 0
WORKSPACE_BYTES = 32 << 20  # cuBLAS's own default on Hopper

# dtype -> (cudaDataType of A/B/C, cublasComputeType_t, dtype of the alpha/beta scalars).
# fp16/bf16 accumulate in fp32 (invariant 4); fp32 stays IEEE fp32 (no TF32: PyTorch's default).
DTYPES = {float16: (CUDA_R_16F, COMPUTE_32F, np.float32),
          bfloat16: (CUDA_R_16BF, COMPUTE_32F, np.float32),
          float32: (CUDA_R_32F, COMPUTE_32F, np.float32),
          float64: (CUDA_R_64F, COMPUTE_64F, np.float64)}
# Host alpha = 1, beta = 0 per scale dtype; module-level so their addresses outlive every call.
_SCALARS = {np.float32: (np.ones((), np.float32), np.zeros((), np.float32)),
            np.float64: (np.ones((), np.float64), np.zeros((), np.float64))}

_ALWAYS = os.environ.get("MINIGRAD_CUBLAS", "") == "nvmath"
# Set by cuda_graph.capture while it warms up and records (a contextvar: per thread).
_recording = contextvars.ContextVar("minigrad_cuda_graph_recording", default=False)
_lib = []          # [nvmath.bindings.cublas] once imported, [None] when it is not installed
_handles: dict = {}  # (device id, stream pointer) -> (handle, workspace array)


def recording() -> bool:
    """True while ``cuda_graph.capture`` warms up or records a step on this thread."""
    return _recording.get()


def use_capturable() -> bool:
    """Whether ``gpu_matmul`` should route products here (capturing, or MINIGRAD_CUBLAS=nvmath)."""
    return _recording.get() or (_ALWAYS and available())


def _bindings():
    if not _lib:
        try:
            from nvmath.bindings import cublas
        except Exception:  # noqa: BLE001 - not installed, its CUDA libraries do not load, or a
            cublas = None  # dependency of another version fails at import: no capturable GEMM
        _lib.append(cublas)
    return _lib[0]


def available() -> bool:
    """True when ``nvmath.bindings.cublas`` imports."""
    return _bindings() is not None


def _require():
    lib = _bindings()
    if lib is None:
        raise RuntimeError(
            "matmul inside a CUDA graph capture needs nvmath-python (pip install "
            "'minigrad[nvmath]'): CuPy 14's cuBLAS wrappers cannot be called during stream "
            "capture; without it, run the step eagerly")
    return lib


def prepare(stream=None):
    """Create the cuBLAS handle for ``stream`` (default: the current one) with its stream,
    workspace and pointer mode set. Must run before ``stream.begin_capture()``;
    ``cuda_graph.capture`` calls it. Returns the handle."""
    stream = stream if stream is not None else cupy.cuda.get_current_stream()
    key = (cupy.cuda.Device().id, stream.ptr)
    entry = _handles.get(key)
    if entry is None:
        if stream.is_capturing():
            raise RuntimeError("cublas_gemm: no cuBLAS handle was prepared for this stream before "
                               "capture began; call cublas_gemm.prepare(stream) first "
                               "(cuda_graph.capture does)")
        lib = _require()
        handle = lib.create()
        lib.set_stream(handle, stream.ptr)
        workspace = cupy.empty(WORKSPACE_BYTES, np.uint8)  # lives as long as the handle
        lib.set_workspace(handle, workspace.data.ptr, workspace.nbytes)
        lib.set_pointer_mode(handle, POINTER_MODE_HOST)
        entry = _handles[key] = (handle, workspace)
    return entry[0]


def matmul(a, b, out_dtype=None):
    """``a @ b`` of two CuPy arrays of one float dtype, by capturable cuBLAS calls
    (``out_dtype=float32`` returns an fp16/bf16 product's fp32 accumulator unrounded)."""
    lib = _require()
    with a.device:  # the handle of a's device and that device's current stream
        return _matmul(lib, prepare(), a, b, cupy, out_dtype)


# ----------------------------------------------------------------------------- translation
class GemmCall(NamedTuple):
    """cuBLAS arguments in cuBLAS's own (column-major) terms: ``A`` is minigrad's ``b``."""

    transa: int
    transb: int
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    stride_a: int   # batch strides in elements; 0 for an operand shared by the batch
    stride_b: int
    stride_c: int
    batch: int      # 1: one cublasGemmEx, else one cublasGemmStridedBatchedEx
    data_type: int
    compute_type: int
    c_type: int     # C's cudaDataType: data_type, or CUDA_R_32F for float32 results of fp16/bf16


def operand_layout(shape, strides):
    """``(op, ld)`` that make cuBLAS read the row-major (r, c) operand with element
    ``strides`` as its transpose, or None when it needs a copy first.

    Rows of unit-stride elements are a column-major (c, r) matrix with ``ld`` = the row stride:
    ``CUBLAS_OP_N``. Unit-stride columns (a transposed view) are a column-major (r, c) matrix:
    ``CUBLAS_OP_T``. cuBLAS wants ``ld >= max(1, rows)``; a stride never stepped (one row or one
    column) may be anything, so it is replaced by the smallest legal value.
    """
    (r, c), (sr, sc) = shape, strides
    if c <= 1 or sc == 1:
        ld = sr if r > 1 else max(1, c)
        if ld >= max(1, c):
            return OP_N, ld
    if r <= 1 or sr == 1:
        ld = sc if c > 1 else max(1, r)
        if ld >= max(1, r):
            return OP_T, ld
    return None


def plan_gemm(a_shape, a_strides, b_shape, b_strides, dtype, batch=1, stride_a=0, stride_b=0,
              out_dtype=None):
    """The :class:`GemmCall` for row-major ``(m, k) @ (k, n)`` operands with valid layouts
    (``operand_layout`` not None); strides in elements. The result is C-contiguous (m, n), of
    ``out_dtype`` (default ``dtype``; float32 keeps an fp16/bf16 product's fp32 accumulator)."""
    (m, k), n = a_shape, b_shape[1]
    op_a, ld_a = operand_layout(a_shape, a_strides)
    op_b, ld_b = operand_layout(b_shape, b_strides)
    data_type, compute, _ = DTYPES[dtype]
    c_type = data_type if out_dtype is None or out_dtype == dtype else DTYPES[out_dtype][0]
    return GemmCall(transa=op_b, transb=op_a, m=n, n=m, k=k, lda=ld_b, ldb=ld_a, ldc=max(1, n),
                    stride_a=stride_b, stride_b=stride_a, stride_c=m * n, batch=batch,
                    data_type=data_type, compute_type=compute, c_type=c_type)


def launch(lib, handle, call: GemmCall, a_ptr, b_ptr, c_ptr):
    """Issue ``call`` (from :func:`plan_gemm`) for minigrad's ``a``, ``b`` and output ``c``."""
    one, zero = _SCALARS[np.float64 if call.compute_type == COMPUTE_64F else np.float32]
    alpha, beta, dt, ct = one.ctypes.data, zero.ctypes.data, call.data_type, call.c_type
    if call.batch == 1:
        lib.gemm_ex(handle, call.transa, call.transb, call.m, call.n, call.k, alpha,
                    b_ptr, dt, call.lda, a_ptr, dt, call.ldb, beta, c_ptr, ct, call.ldc,
                    call.compute_type, GEMM_DEFAULT)
    else:
        lib.gemm_strided_batched_ex(
            handle, call.transa, call.transb, call.m, call.n, call.k, alpha,
            b_ptr, dt, call.lda, call.stride_a, a_ptr, dt, call.ldb, call.stride_b,
            beta, c_ptr, ct, call.ldc, call.stride_c, call.batch, call.compute_type, GEMM_DEFAULT)


def _elem_strides(x):
    return tuple(s // x.itemsize for s in x.strides)


def _ptr(x, xp):
    return x.ctypes.data if xp is np else x.data.ptr


def _usable_2d(x):
    """``x`` (2-D), copied to C order when cuBLAS cannot read its layout."""
    if operand_layout(x.shape, _elem_strides(x)) is None:
        return x.copy()  # C order (NumPy and CuPy)
    return x


def _batched(x, batch, count, xp):
    """A 2-D (shared, batch stride 0) or 3-D (count, r, c) operand and its batch stride."""
    if x.ndim == 2:
        return _usable_2d(x), 0
    x = xp.broadcast_to(x, batch + x.shape[-2:])
    if x.ndim != 3:
        x = xp.ascontiguousarray(x).reshape((count,) + x.shape[-2:])
    strides = _elem_strides(x)
    if strides[0] < 0 or operand_layout(x.shape[1:], strides[1:]) is None:
        x = xp.ascontiguousarray(x)
        strides = _elem_strides(x)
    return x, strides[0]


def _matmul(lib, handle, a, b, xp, out_dtype=None):
    """``a @ b`` (NumPy's shape rules) through ``lib``'s cuBLAS entry points; ``xp`` is the
    array module of ``a`` and ``b`` (NumPy only in tests, with an emulated ``lib``). The result
    has ``out_dtype``: ``a.dtype`` (default) or, for fp16/bf16 operands, float32."""
    if a.dtype != b.dtype or a.dtype not in DTYPES:
        raise TypeError(f"matmul (capturable cuBLAS): operands must share one of float16, "
                        f"bfloat16, float32, float64; got {a.dtype} @ {b.dtype}")
    out_dtype = a.dtype if out_dtype is None else np.dtype(out_dtype)
    if out_dtype != a.dtype and (out_dtype != float32 or a.dtype not in (float16, bfloat16)):
        raise TypeError(f"matmul (cuBLAS): a float32 result is for float16/bfloat16 operands; "
                        f"got {a.dtype} operands and out_dtype {out_dtype}")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must be at least 1-D, got shapes {a.shape} @ {b.shape}")
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    a = a[None, :] if squeeze_a else a
    b = b[:, None] if squeeze_b else b
    (m, k), n = a.shape[-2:], b.shape[-1]
    if b.shape[-2] != k:
        raise ValueError(f"matmul: inner dimensions differ: a {a.shape} @ b {b.shape}; "
                         "a.shape[-1] must equal b.shape[-2]")
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    # NumPy's result shape: the batch, then m unless a was 1-D, then n unless b was 1-D
    result = batch + ((m,) if not squeeze_a else ()) + ((n,) if not squeeze_b else ())
    if b.ndim == 2 and a.ndim > 2:
        # (..., m, k) @ (k, n): the batch folded into the rows of one GEMM
        a, batch = a.reshape(-1, k), ()
    count = int(np.prod(batch)) if batch else 1
    out = xp.empty((count,) + (a.shape[-2], n) if batch else (a.shape[0], n), dtype=out_dtype)
    if out.size and k == 0:
        out.fill(0)
    elif out.size:
        if batch:
            a, sa = _batched(a, batch, count, xp)
            b, sb = _batched(b, batch, count, xp)
        else:
            a, b, sa, sb = _usable_2d(a), _usable_2d(b), 0, 0
        call = plan_gemm(a.shape[-2:], _elem_strides(a)[-2:], b.shape[-2:],
                         _elem_strides(b)[-2:], a.dtype, count if batch else 1, sa, sb,
                         out_dtype)
        launch(lib, handle, call, _ptr(a, xp), _ptr(b, xp), _ptr(out, xp))
    return out.reshape(result)
