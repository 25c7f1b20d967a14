"""bfloat16 matrix products on CPUs with AVX512_BF16, in the optional C extension ``_parallel``
(``_bf16_gemm.c``, ``setup.py``).

Without it a bfloat16 product on the CPU converts both operands to float32 and runs NumPy's
float32 GEMM (``kernels.matmul``). The extension multiplies the bfloat16 bits directly with the
CPU's bfloat16 dot-product instruction (two exact products added to a float32 accumulator per
lane), on half the bytes and without the conversions: LeNet-5's products took 1.3-2.5x less time
than NumPy's float32 GEMM on operands converted beforehand, 2-3x counting the conversion
(``benchmarks/results``). The result is the float32 accumulator, which the caller rounds once,
as before.

One difference, the instruction's: subnormal inputs and results count as zero (bfloat16 has
float32's exponent range, so this is below 1.2e-38). PyTorch's bfloat16 convolutions and linear
layers on such a CPU (oneDNN) flush them the same way; it is a row of the deviations table in
``docs/migrating.md``. Products are summed in another order than NumPy's GEMM (float32
accumulation either way).
"""

from __future__ import annotations

import numpy as np

from . import blas
from .dtypes import bfloat16

__all__ = ["AVAILABLE", "takes", "product"]

try:
    from . import _parallel
except ImportError:  # built without a C compiler
    _parallel = None
AVAILABLE = bool(_parallel is not None and _parallel.bf16_available())  # tests switch it off

_u16 = np.uint16


def takes(a, b) -> bool:
    """Whether ``product`` multiplies ``a`` and ``b``: 2-D bfloat16 NumPy arrays, extension built
    and CPU able."""
    return (AVAILABLE and type(a) is np.ndarray and type(b) is np.ndarray
            and a.dtype is bfloat16 and b.dtype is bfloat16 and a.ndim == 2 and b.ndim == 2)


def product(a, b, form: int = 0):
    """``a @ b`` of 2-D bfloat16 arrays (any strides) as a C-ordered float32 array; ``form``
    1 or 2 forces the packed or the in-place (dot product) kernel, for tests."""
    m, k = a.shape
    n = b.shape[1]
    out = np.empty((m, n), dtype=np.float32)
    # As many threads as BLAS would get for the product (blas.py: by its size and the
    # machine's load); the extension's workers split the columns of out.
    _parallel.bf16_gemm(a.view(_u16), b.view(_u16), out, blas.threads_for(2 * m * k * n), form)
    return out
