"""Float casts: ``astype``, with vectorised kernels for the casts autocast makes.

Autocast casts every float32 weight to float16/bfloat16 each step and every such gradient back.
CuPy's ``astype`` kernel converts one element per thread with generic indexing (about 1.1 TB/s
on an H200 for float32 -> float16); for contiguous, 16-byte aligned arrays this kernel moves four
elements per thread with vector loads and stores. Conversions round to nearest even, like
``astype``, so the results are bit-identical (tested on the GPU). On the CPU, float16 <-> float32
goes to ``lowp_cpu``'s block kernels (NumPy's own float16 casts convert one element at a time;
bit-identical, tested), and so do bfloat16's (ml_dtypes' casts are vectorised but slower than
lowp_cpu's C kernels, and cost a call's overhead on small arrays). Anything else goes to ``astype``.
"""

from __future__ import annotations

import numpy as np

from . import cupy, lowp_cpu
from .dtypes import bfloat16, float16, float32, float64
from .fused import use_fused

__all__ = ["astype", "to_dtype"]

_SRC = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void minigrad_narrow_{N}(const float4* __restrict__ src,
                                               {H2}* __restrict__ dst, long long n4) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x) {
    float4 v = src[i];
    dst[2 * i] = {PACK}(v.x, v.y);
    dst[2 * i + 1] = {PACK}(v.z, v.w);
  }
}
extern "C" __global__ void minigrad_widen_{N}(const {H2}* __restrict__ src,
                                              float4* __restrict__ dst, long long n4) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x) {
    float2 a = {UNPACK}(src[2 * i]);
    float2 b = {UNPACK}(src[2 * i + 1]);
    dst[i] = make_float4(a.x, a.y, b.x, b.y);
  }
}
"""
_TYPES = {float16: ("half", "__half2", "__floats2half2_rn", "__half22float2"),
          bfloat16: ("bf16", "__nv_bfloat162", "__floats2bfloat162_rn", "__bfloat1622float2")}
_modules: dict = {}
_MIN_SIZE = 1 << 16  # below this the launch dominates either way
_MIN_NARROW64 = 1024  # below this NumPy's own float64 -> float16 cast costs no more


def _kernel(low, widen: bool):
    mod = _modules.get(low)
    if mod is None:
        name, h2, pack, unpack = _TYPES[low]
        src = (_SRC.replace("{N}", name).replace("{H2}", h2).replace("{PACK}", pack)
               .replace("{UNPACK}", unpack))
        mod = _modules[low] = cupy.RawModule(code=src)
    return mod.get_function(f"minigrad_{'widen' if widen else 'narrow'}_{_TYPES[low][0]}")


def _vectorisable(x, dtype) -> bool:
    if not use_fused(x):
        return False
    pair = (x.dtype, dtype)
    if pair not in ((float32, float16), (float32, bfloat16), (float16, float32),
                    (bfloat16, float32)):
        return False
    return (x.size >= _MIN_SIZE and x.size % 4 == 0 and x.flags.c_contiguous
            and x.data.ptr % 16 == 0)


def astype(x, dtype):
    """``x.astype(dtype)`` (a new array), vectorised on the CPU and the GPU where it applies:
    on the CPU float16/bfloat16 <-> float32 and float64 (NumPy's float16 casts convert one
    element at a time), bit for bit."""
    dtype = np.dtype(dtype)
    if type(x) is np.ndarray:
        low_in, low_out = lowp_cpu.is_low(x), dtype == float16 or dtype == bfloat16
        if dtype == float32 and low_in:
            return lowp_cpu.widen(x)
        if x.dtype == float32 and low_out:
            return lowp_cpu.narrow(x, dtype)
        if dtype == float64 and low_in:  # through float32: exact
            return lowp_cpu.widen(x).astype(float64)
        if x.dtype == float64 and dtype == float16 and x.size >= _MIN_NARROW64:
            out = lowp_cpu.narrow_float64(x)
            if out is not None:
                return out
        return x.astype(dtype)
    if not _vectorisable(x, dtype):
        return x.astype(dtype)
    n4 = x.size // 4
    widen = dtype == float32
    k = _kernel(x.dtype if widen else dtype, widen)
    with x.device:
        out = cupy.empty(x.shape, dtype)
        k((min((n4 + 255) // 256, 8192),), (256,), (x, out, np.int64(n4)))
    return out


def to_dtype(x, dtype):
    """``x`` in ``dtype``: ``x`` itself when it has it already, else :func:`astype`."""
    return x if x.dtype == dtype else astype(x, dtype)
