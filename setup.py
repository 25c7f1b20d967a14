"""Builds minigrad's optional C extensions; everything else is in pyproject.toml.

- ``minigrad._backend._f16c`` converts float16/bfloat16 <-> float32 with the CPU's F16C/SSE2
  instructions (lowp_cpu.py);
- ``minigrad._backend._parallel`` runs kernels over a pool of worker threads: bfloat16 matrix
  products with AVX512_BF16 (bf16_cpu_gemm.py), the convolution data gradient's col2im
  (col2im_cpu.py), and max pooling's window scan and gradient scatter (pool_cpu.py).

Both are optional: where no C compiler is found the install goes on without them and minigrad
uses its NumPy kernels, which give the same bits (the bfloat16 GEMM: float32 BLAS on converted
operands, which sums in another order and keeps subnormals).
"""

from setuptools import Extension, setup

SOURCES = {"_f16c": ["_f16c.c"],
           "_parallel": ["_parallel.c", "_bf16_gemm.c", "_col2im.c", "_pool.c"]}

setup(ext_modules=[Extension(f"minigrad._backend.{name}",
                             [f"minigrad/_backend/{source}" for source in sources],
                             depends=["minigrad/_backend/_parallel.h"], optional=True)
                   for name, sources in SOURCES.items()])
