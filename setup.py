"""Builds minigrad's one optional C extension; everything else is in pyproject.toml.

``minigrad._backend._f16c`` converts float16 <-> float32 with the CPU's F16C instructions
(lowp_cpu.py). It is optional: where no C compiler is found the install goes on without it and
minigrad uses its NumPy kernels, which give the same bits.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("minigrad._backend._f16c", ["minigrad/_backend/_f16c.c"],
                             optional=True)])
