"""Builds minigrad's optional C extensions; everything else is in pyproject.toml.

- ``minigrad._backend._f16c`` converts float16/bfloat16 <-> float32 with the CPU's F16C/SSE2
  instructions (lowp_cpu.py);
- ``minigrad._backend._pool`` runs max pooling's window scan and gradient scatter (pool_cpu.py);
- ``minigrad._backend._bf16_gemm`` multiplies bfloat16 matrices with AVX512_BF16 (bf16_cpu_gemm.py).

All are optional: where no C compiler is found the install goes on without them and minigrad
uses its NumPy kernels, which give the same bits.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension(f"minigrad._backend.{name}", [f"minigrad/_backend/{name}.c"],
                             optional=True) for name in ("_f16c", "_pool", "_bf16_gemm")])
