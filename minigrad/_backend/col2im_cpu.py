"""col2im of the convolution data gradient on the CPU, in the optional C extension ``_parallel``
(``_col2im.c``, ``setup.py``).

The NumPy twin (``functional/_conv_kernels.py``, ``_BatchInner.col2im``) adds the column
gradient into a zeroed padded buffer one kernel offset at a time (a strided pass over the whole
buffer each), then crops and transposes it; LeNet-5's conv2 spends 240-410 us there per step.
The extension sums each input row's windows while they stay in cache, in the same order (the
same bits), writes the row transposed into NCHW, and splits the rows over the worker threads
that the bfloat16 GEMM uses.
``tests/test_col2im_cpu.py`` holds it to the twin.
"""

from __future__ import annotations

import numpy as np

from . import blas

__all__ = ["AVAILABLE", "col2im"]

try:
    from . import _parallel
except ImportError:  # built without a C compiler: the NumPy twin
    _parallel = None
AVAILABLE = _parallel is not None  # tests switch it off to check the twin

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def col2im(dcols, geometry):
    """The (N, C, H, W) window sums of a (C, kh, kw, OH, OW, N) float32/float64 NumPy array for
    ``geometry`` = (N, C, H, W, kh, kw, OH, OW, sh, sw, ph, pw, dh, dw), or None where the twin
    must run."""
    if not AVAILABLE or type(dcols) is not np.ndarray or dcols.dtype not in _DTYPES:
        return None
    n, c, h, w = geometry[:4]
    out = np.empty((n, c, h, w), dtype=dcols.dtype)
    # as many threads as BLAS would get for a GEMM that takes as long (an addition here costs
    # about what 16 flops of LeNet's GEMMs do: both are bound by memory)
    _parallel.col2im(np.ascontiguousarray(dcols), out, tuple(int(v) for v in geometry),
                     blas.threads_for(16 * dcols.size))
    return out
