"""Numerical kernels whose implementation differs between CPU and GPU.

Low-precision matmul follows Tensor Core semantics everywhere (invariant 4): float16/bfloat16
inputs, float32 accumulation, result rounded to the input dtype. NumPy's native float16 matmul
is both slow and accumulates in float16, so on the CPU we upcast, run float32 BLAS and round.
"""

from __future__ import annotations

import contextlib
import functools
import math

import numpy as np

from . import bf16_cpu_gemm, cpu_gemm, lowp_cpu, matmul_paths
from .dtypes import bfloat16, float16, float32, is_low_precision, widest_float

__all__ = ["matmul", "matmul_accumulator", "matmul_bias", "emulated_matmul", "sum_fp32",
           "clamp", "relu_grad", "unary", "binary", "selection", "emulates_low_precision", "on_cpu",
           "im2col_keep_bytes", "ufunc_operand", "index_grid", "ufunc_rows",
           "transposed"]


def on_cpu(array) -> bool:
    """True for NumPy arrays (the CPU's kernels), False for CuPy ones."""
    return type(array) is np.ndarray


def emulates_low_precision(array) -> bool:
    """True where fp16/bf16 GEMMs of ``array``'s dtype multiply float32 copies of their operands
    (the CPU; not bfloat16 where ``bf16_cpu_gemm`` runs): callers may upcast early, once."""
    return type(array) is np.ndarray and not (array.dtype is bfloat16 and bf16_cpu_gemm.AVAILABLE)


# ------------------------------------------------------------------ elementwise entry points
# Ops compute elementwise formulas through these two: on the CPU a float16/bfloat16 operand
# sends the call to ``lowp_cpu`` (float32 compute, one rounding); anything else costs one dtype
# check. The dtypes are compared by identity (NumPy's builtin dtypes and ml_dtypes' bfloat16
# are singletons); an exotic spelling of them only misses the fast path.
_nd = np.ndarray
_PY_SCALARS = (int, float, bool)


def unary(f, x):
    """``f(x)`` for an elementwise array function ``f`` (a NumPy/CuPy ufunc or a formula of
    them) of one array; float16/bfloat16 on the CPU compute in float32 and round once."""
    if type(x) is _nd and x.itemsize == 2 and (x.dtype is float16 or x.dtype is bfloat16):
        return lowp_cpu.compute(f, x)
    return f(x)


def selection(f, x):
    """``f(x)`` for a function that only compares, takes maxima/minima of and copies elements
    of ``x`` (max pooling), returning an array of them: float16/bfloat16 on the CPU are handed
    to ``f`` as int16 keys that order like the numbers (``lowp_cpu.selection``)."""
    if type(x) is _nd and (x.dtype is float16 or x.dtype is bfloat16):
        return lowp_cpu.selection(f, x)
    return f(x)


def binary(f, a, b):
    """``f(a, b)`` for an elementwise binary ufunc or operator; either side may be a Python
    number. float16/bfloat16 on the CPU compute in float32 and round once. A Python number
    meeting a bfloat16 GPU array is typed as bfloat16 first: bfloat16 is an ml_dtypes
    extension outside NumPy's weak-scalar rule, so ``bf16 + 1.5`` would widen to float64."""
    ta, tb = type(a), type(b)
    if ta is _nd or tb is _nd:  # the CPU
        if (ta is not _nd or a.itemsize != 2) and (tb is not _nd or b.itemsize != 2):
            return f(a, b)  # no array of 16-bit items: the common case
        if lowp_cpu.is_low(a) or lowp_cpu.is_low(b):
            return lowp_cpu.compute(f, a, b)
        return f(a, b)
    if ta in _PY_SCALARS and getattr(b, "dtype", None) == bfloat16:
        a = b.dtype.type(a)
    elif tb in _PY_SCALARS and getattr(a, "dtype", None) == bfloat16:
        b = a.dtype.type(b)
    return f(a, b)


def scaled(f, a, b):
    """``f(a, b)`` for a product or a quotient (``f`` is ``operator.mul``/``truediv``), as
    :func:`binary`, except that a Python number meeting a float16/bfloat16 CPU array stays in
    float32 rather than being rounded to the array's dtype: PyTorch's opmath for ``x * k``,
    ``k * x`` and ``x / k``; ``k / x`` too (PyTorch's is ``reciprocal(x) * k``, rounded twice;
    here the quotient rounded once)."""
    if type(a) is _nd and type(b) in _PY_SCALARS_NUMBERS and lowp_cpu.is_low(a):
        return lowp_cpu.with_number(f, a, b)
    if type(b) is _nd and type(a) in _PY_SCALARS_NUMBERS and lowp_cpu.is_low(b):
        return lowp_cpu.with_number(f, b, a, number_first=True)
    return binary(f, a, b)


_PY_SCALARS_NUMBERS = (int, float)  # (a bool multiplies as NumPy does)


def im2col_keep_bytes(array) -> int:
    """The largest im2col matrix a convolution keeps from forward for its weight gradient.

    On the CPU the im2col copy is memory bound and costs about as much as the GEMM, so keeping
    it saves a third of a small conv's backward; 16 MiB per convolution covers LeNet-5 up to
    batch 128 and bounds the extra memory of deep nets. The GPU rebuilds it in microseconds and
    keeps nothing: memory is what AMP saves there.
    """
    return 16 << 20 if type(array) is np.ndarray else 0


def ufunc_operand(view):
    """``view`` as an operand of elementwise ops: a C-ordered copy on the CPU, as is on the GPU.

    NumPy's SIMD loops need unit strides: a ufunc reading a stride-2 view (a pooling window
    offset) runs 4-5x slower than on contiguous data, while a strided *copy* is fast. Copying once
    pays off as soon as the view is read twice (numpy 2.4, x86-64). CUDA kernels read strided
    views at full speed, so CuPy skips the copy.
    """
    return np.ascontiguousarray(view) if type(view) is np.ndarray else view


@contextlib.contextmanager
def ufunc_rows(run):
    """Context for NumPy ufuncs over strided views made of rows of ``run`` contiguous elements.

    NumPy's ufunc iterator moves strided operands in chunks of ``np.getbufsize()`` elements
    (8192); a chunk spanning several rows is first copied into a buffer, which makes an in-place
    add over 640-element rows 1.7x slower than over contiguous data (numpy 2.4, x86-64). With a
    buffer of one row each inner loop works on a row in place. Measured worth it for rows of
    256 to 4095 elements (shorter rows are faster buffered, longer ones are not chunked); the
    setting is context-local (NumPy >= 2.0) and restored on exit. CuPy does not read it.
    """
    if not 256 <= run < 4096:
        yield
        return
    with np.errstate():
        np.setbufsize(run // 16 * 16)  # NumPy wants a multiple of 16
        yield


def transposed(a):
    """A C-ordered copy of ``a.T`` for a 2-D array ``a``.

    NumPy copies a transpose in the destination's order, reading ``a`` down its columns; when
    ``a`` is tall and narrow (LeNet's CHWN <-> NCHW, 1600 x 64) copying blocks of 128 rows keeps
    each block's reads in L1 and is a third faster (numpy 2.4, x86-64).
    """
    if type(a) is not np.ndarray or not 16 <= a.shape[1] <= 256 or a.shape[0] < 512:
        return a.T.copy()
    out = np.empty((a.shape[1], a.shape[0]), dtype=a.dtype)
    for start in range(0, a.shape[0], 128):
        out[:, start:start + 128] = a[start:start + 128].T
    return out


_INDEX_GRID_CACHE_BYTES = 4 << 20  # larger grids are rebuilt per call rather than held


def index_grid(like, shape, steps, dtype):
    """The read-only array ``g[i0, i1, ...] = i0*steps[0] + i1*steps[1] + ...`` of ``shape``, on
    the device of ``like``: the flat offsets of a strided window grid (max-pool gradients).

    Grids up to 4 MiB are cached per geometry: building one takes a broadcast pass per axis with
    inner loops as short as the last axis, which was half the cost of LeNet's max-pool backward.
    """
    device = like.device.id if type(like) is not np.ndarray else None
    key = (device, tuple(shape), tuple(steps), np.dtype(dtype).str)
    if math.prod(shape) * np.dtype(dtype).itemsize > _INDEX_GRID_CACHE_BYTES:
        return _build_index_grid(*key)
    return _cached_index_grid(*key)


def _build_index_grid(device, shape, steps, dtype):
    if device is None:
        xp, ctx = np, contextlib.nullcontext()
    else:
        import cupy
        xp, ctx = cupy, cupy.cuda.Device(device)
    with ctx:
        grid = xp.zeros(shape, dtype=dtype)
        for axis, (size, step) in enumerate(zip(shape, steps)):
            ramp = xp.arange(size, dtype=dtype) * step
            grid += ramp.reshape((size,) + (1,) * (len(shape) - axis - 1))
    if xp is np:
        grid.flags.writeable = False
    return grid


_cached_index_grid = functools.lru_cache(maxsize=16)(_build_index_grid)


def matmul(a, b):
    """``a @ b`` with broadcast batch dims; low precision accumulates in float32."""
    if type(a) is np.ndarray:
        if is_low_precision(a.dtype) or is_low_precision(b.dtype):
            # mixed dtypes compute in the widest float, as on the GPU (float16 with bfloat16:
            # float32, where NumPy has no rule)
            return lowp_cpu.narrow(_cpu_lowp_product(a, b), widest_float((a.dtype, b.dtype)))
        matmul_paths.note("cpu")
        return cpu_gemm.matmul(a, b)
    from . import gpu_matmul  # CuPy only; imported lazily so CPU users never load it
    return gpu_matmul.matmul(a, b)


def matmul_accumulator(a, b):
    """``a @ b`` left in its float32 accumulator for CPU float16/bfloat16 operands (the caller
    adds to it and rounds once); ``matmul`` otherwise."""
    if type(a) is np.ndarray and (is_low_precision(a.dtype) or is_low_precision(b.dtype)):
        return _cpu_lowp_product(a, b)
    return matmul(a, b)


def _cpu_lowp_product(a, b):
    """The float32 product of NumPy operands of which one is float16/bfloat16: bfloat16 bits
    multiplied directly where ``bf16_cpu_gemm`` runs, else float32 copies through BLAS."""
    if bf16_cpu_gemm.takes(a, b):
        matmul_paths.note("cpu-avx512-bf16")
        return bf16_cpu_gemm.product(a, b)
    matmul_paths.note("cpu-emulated-fp32-accumulate")
    return cpu_gemm.matmul(lowp_cpu.widen(a).astype(float32, copy=False),
                           lowp_cpu.widen(b).astype(float32, copy=False))


def matmul_bias(a, b, bias):
    """``a @ b + bias`` for 2-D ``a``, ``b`` and a (n,) ``bias`` (or None) of one dtype. In
    float16/bfloat16 the bias is added to the product's float32 accumulator and the sum is
    rounded once, as PyTorch's addmm epilogue does; wider dtypes add it to the product."""
    if bias is None:
        return matmul(a, b)
    if not is_low_precision(a.dtype) or not a.dtype == b.dtype == bias.dtype:
        y = matmul(a, b)
        y += bias
        return y
    if type(a) is np.ndarray:
        y = _cpu_lowp_product(a, b)
        y += lowp_cpu.widen(bias)
        return lowp_cpu.narrow(y, a.dtype)
    from . import gpu_matmul
    return gpu_matmul.matmul_bias(a, b, bias)


def emulated_matmul(a, b, dtype, bias=None):
    """The CPU's float16/bfloat16 ``a @ b (+ bias)`` on operands its caller already converted
    to float32 (and keeps, for its backward): one float32 GEMM, the bias added to the float32
    result, rounded once to ``dtype``."""
    matmul_paths.note("cpu-emulated-fp32-accumulate")
    y = cpu_gemm.matmul(a, b)
    if bias is not None:
        y += bias
    return lowp_cpu.narrow(y, dtype)


def clamp(x, lower=None, upper=None):
    """``x`` limited to ``[lower, upper]`` (None: no bound) in x's dtype; NaN propagates, and
    ``x`` itself is kept where it equals a bound (``clamp(-0.0, 0)`` is -0.0, as PyTorch's):
    NumPy's maximum/minimum return their second operand on ties, so ``x`` goes second.

    NumPy's vectorised maximum/minimum loops do not take a scalar operand: ``maximum(x, 0)`` is
    2x slower than ``maximum(x, zeros)`` (numpy 2.4, x86-64), so on the CPU the bound is written
    into the output buffer first and the comparison runs array against array, in place (from
    about 4096 elements on; below that the extra buffer costs more than it saves).
    """
    xp = np if type(x) is np.ndarray else _xp(x)
    if xp is np and (x.dtype is float16 or x.dtype is bfloat16):
        if lower == 0 and upper is None and x.ndim:
            return lowp_cpu.relu(x)  # a selection on the bits, no conversion
        # the bounds as x's dtype rounds them, then float32's clamp, rounded once (exact)
        lower = None if lower is None else float(x.dtype.type(lower))
        upper = None if upper is None else float(x.dtype.type(upper))
        return lowp_cpu.compute(lambda v: clamp(v, lower, upper), x)
    if xp is not np or x.size < 4096:
        y = x if lower is None else xp.maximum(x.dtype.type(lower), x)
        return y if upper is None else xp.minimum(x.dtype.type(upper), y)
    y = x
    for bound, pick in ((lower, np.maximum), (upper, np.minimum)):
        if bound is not None:
            out = np.full(x.shape, bound, dtype=x.dtype)
            y = pick(out, y, out=out)
    return y


_RELU_GRAD = {}


def relu_grad(gy, y):
    """ReLU's gradient from its output, PyTorch's ``threshold_backward``: 0 where ``y <= 0``,
    else ``gy`` (a NaN activation passes its gradient; an inf gradient of a zeroed unit gives
    0, not NaN). A selection, so no float16 arithmetic on the CPU (a float16/bfloat16 ``y`` is
    compared on its bits); one kernel on the GPU."""
    if type(gy) is np.ndarray:
        if y.dtype is float16 or y.dtype is bfloat16:
            return lowp_cpu.relu_grad(gy, y)
        return lowp_cpu.keep(gy, np.logical_not(np.less_equal(y, 0)))  # NaN y passes gy
    k = _RELU_GRAD.get("k")
    if k is None:
        cupy = _xp(gy)
        k = _RELU_GRAD["k"] = cupy.ElementwiseKernel(
            "T gy, Y y", "T gx", "gx = y <= (Y)0 ? (T)0 : gy", "minigrad_relu_grad")
    return k(gy, y)


def sum_fp32(x, axis=None, keepdims=False):
    """Sum in float32 or wider (invariant 3), returned in float32/float64."""
    xp = np if type(x) is np.ndarray else _xp(x)
    if xp is np and (x.dtype is float16 or x.dtype is bfloat16):
        x = lowp_cpu.widen(x)  # NumPy's reduction would convert element by element
    acc = x.dtype if x.dtype == np.float64 else float32
    if x.dtype.kind in "biu":  # integer sums are int64 (PyTorch), also for unsigned and bool
        acc = np.int64 if x.dtype.kind in "bu" else None
    return xp.sum(x, axis=axis, dtype=acc, keepdims=keepdims)


def _xp(x):
    from . import get_array_module
    return get_array_module(x)
