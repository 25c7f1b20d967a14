"""Multi-tensor GPU kernels: one launch walks many tensors through a table of their addresses.

A step over N parameters would otherwise launch N small kernels, each paying CuPy's host cost
(tens of microseconds) for microseconds of GPU work. The table holds, for each of the N tensors,
one address per operand (operand-major: all first operands, then all second ones, ...), then the
running element counts ``ends``; thread ``i`` finds its tensor by binary search over ``ends``
and handles one element (a grid-stride loop covers them all).

- ``unscale(arrays, inv, found)``: ``a *= inv`` in place, ``found = 1`` on any inf/NaN result;
- ``sgd(params, grads, bufs, ...)``: the SGD-with-momentum update of every parameter.

Each is bit-identical to its per-tensor kernel in :mod:`fused` (same expressions, same order).
:func:`table` is pure NumPy, so the CPU tests check the indexing.
"""

from __future__ import annotations

import numpy as np

from . import cuda_graph, cupy
from .dtypes import float64

__all__ = ["table", "device_table", "unscale", "sgd"]

_CTYPES = {"float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float",
           "float64": "double"}
_HEAD = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// The index of the tensor holding element i, and i's offset in it.
__device__ __forceinline__ int tensor_of(const long long* ends, int n, long long i,
                                         long long* j) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = (lo + hi) >> 1;
    if (ends[mid] > i) hi = mid; else lo = mid + 1;
  }
  *j = i - (lo ? ends[lo - 1] : 0);
  return lo;
}
#define FOR_EACH_ELEMENT(total) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (total); \
       i += (long long)gridDim.x * blockDim.x)
"""
_UNSCALE = _HEAD + r"""
extern "C" __global__ void minigrad_unscale_mt(const long long* table, int n, long long total,
                                               const {C}* inv_p, int* found) {
  const long long* ends = table + n;
  const {C} inv = inv_p[0];
  FOR_EACH_ELEMENT(total) {
    long long j;
    int t = tensor_of(ends, n, i, &j);
    {T}* p = reinterpret_cast<{T}*>(table[t]);
    {C} v = static_cast<{C}>(p[j]) * inv;
    {T} u = static_cast<{T}>(v);
    p[j] = u;
    if (!isfinite(static_cast<{C}>(u))) found[0] = 1;
  }
}
"""
# The per-tensor SGD kernel's arithmetic (fused._SGD_OP, after the first step).
_SGD = _HEAD + r"""
extern "C" __global__ void minigrad_sgd_mt(const long long* table, int n, long long total,
                                           {C} lr, {C} mom, {C} damp, {C} wd, int nesterov,
                                           const int* found) {
  if (found[0] != 0) return;
  const long long* ends = table + 3 * n;
  FOR_EACH_ELEMENT(total) {
    long long j;
    int t = tensor_of(ends, n, i, &j);
    {P}* p = reinterpret_cast<{P}*>(table[t]);
    const {G}* g = reinterpret_cast<const {G}*>(table[n + t]);
    {B}* buf = reinterpret_cast<{B}*>(table[2 * n + t]);
    {C} w = static_cast<{C}>(p[j]);
    {C} d = static_cast<{C}>(g[j]);
    if (wd != 0) d += wd * w;
    if (mom != 0) {
      {C} b = mom * static_cast<{C}>(buf[j]) + damp * d;
      buf[j] = static_cast<{B}>(b);
      d = nesterov ? d + mom * b : b;
    }
    p[j] = static_cast<{P}>(w - lr * d);
  }
}
"""
_kernels: dict = {}


def _kernel(src, name, **types):
    key = (name,) + tuple(sorted(types.items()))
    k = _kernels.get(key)
    if k is None:
        for slot, dtype in types.items():
            src = src.replace("{" + slot + "}", _CTYPES[np.dtype(dtype).name])
        k = _kernels[key] = cupy.RawKernel(src, name)
    return k


def _ptr(a) -> int:
    return a.ctypes.data if type(a) is np.ndarray else a.data.ptr


def table(*operands) -> np.ndarray:
    """The int64 table for lists of arrays of equal sizes (one list per operand): every
    operand's addresses, operand after operand, then the running element counts."""
    first = operands[0]
    ptrs = [_ptr(a) for arrays in operands for a in arrays]
    return np.array(ptrs + list(np.cumsum([a.size for a in first])), np.int64)


def device_table(host):
    """``host`` on the device. During a CUDA graph capture the copy is recorded from pinned
    memory kept alive with the graph (its copy node re-reads it at every replay; CuPy's own
    ``set`` refuses to copy while capturing); eagerly a plain copy."""
    stream = cupy.cuda.get_current_stream()
    if not stream.is_capturing():
        return cupy.asarray(host)
    pinned = cupy.cuda.alloc_pinned_memory(host.nbytes)
    np.frombuffer(pinned, np.int64, host.size)[:] = host
    dev = cupy.empty(host.size, np.int64)
    cupy.cuda.runtime.memcpyAsync(dev.data.ptr, pinned.ptr, host.nbytes,
                                  cupy.cuda.runtime.memcpyHostToDevice, stream.ptr)
    cuda_graph.keep_alive(pinned, dev)
    return dev


def _launch(kernel, host, n, *args):
    total = int(host[-1])
    blocks = min((total + 255) // 256, 4096)
    kernel((blocks,), (256,), (device_table(host), np.int32(n), np.int64(total)) + args)


def unscale(arrays, inv, found) -> None:
    """``a *= inv`` for CuPy arrays of one dtype (C-contiguous, non-empty), in place; sets the
    int32 ``found`` to 1 on any inf/NaN result (it is never cleared here). ``inv`` is a
    1-element device array of the compute type (float64 for float64 arrays, else float32)."""
    dtype = arrays[0].dtype
    c = np.float64 if dtype == float64 else np.float32
    k = _kernel(_UNSCALE, "minigrad_unscale_mt", T=dtype, C=c)
    _launch(k, table(arrays), len(arrays), inv, found)


def sgd(params, grads, bufs, lr, momentum, dampening, weight_decay, nesterov, found) -> None:
    """One SGD step (after the first: ``bufs`` exist when ``momentum != 0``) on CuPy arrays of
    one dtype triple, C-contiguous, same sizes pairwise; nothing changes while ``found != 0``."""
    p, g = params[0].dtype, grads[0].dtype
    c = np.dtype(np.float64 if p == float64 else np.float32)
    b = bufs[0].dtype if momentum != 0 else c
    k = _kernel(_SGD, "minigrad_sgd_mt", P=p, G=g, B=b, C=c)
    ops = (params, grads, bufs if momentum != 0 else params)  # no buffer: any valid address
    _launch(k, table(*ops), len(params), c.type(lr), c.type(momentum), c.type(1.0 - dampening),
            c.type(weight_decay), np.int32(bool(nesterov)), found)
