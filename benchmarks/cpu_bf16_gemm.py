"""bfloat16 matrix products on the CPU: minigrad's AVX512_BF16 kernel against the float32 GEMM
it replaces and against PyTorch's bfloat16 matmul, on LeNet-5's products (batch 64).

For each product, microseconds per call (median of interleaved blocks):

- ``f32 BLAS``: ``cpu_gemm.matmul`` on float32 copies made beforehand (what conv did when it
  converted before im2col), with the BLAS threads ``blas.py`` gives the product;
- ``+ convert``: the same with both conversions (``kernels.matmul`` without the kernel);
- ``bf16 1t`` / ``bf16 2t``: ``bf16_cpu_gemm.product`` with one and two worker threads;
- ``torch``: ``torch.matmul`` of the bfloat16 tensors (one thread, then two).

``max |diff|`` compares the kernel's bfloat16-rounded result with PyTorch's (in bfloat16 ulps).

    python benchmarks/cpu_bf16_gemm.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import interleaved_medians  # noqa: E402  (sibling script, not a package)

from minigrad._backend import _parallel, bf16_cpu_gemm, cpu_gemm, lowp_cpu  # noqa: E402
from minigrad._backend.dtypes import bfloat16  # noqa: E402

# (m, k, n, b transposed, where)
SHAPES = [(6, 25, 57344, False, "conv1 forward"), (6, 57344, 25, True, "conv1 weight grad"),
          (16, 150, 6400, False, "conv2 forward"), (16, 6400, 150, True, "conv2 weight grad"),
          (150, 16, 6400, False, "conv2 data grad"), (64, 400, 120, True, "fc1 forward")]


def _kernel(a, b, threads):
    out = np.empty((a.shape[0], b.shape[1]), np.float32)
    _parallel.bf16_gemm(a.view(np.uint16), b.view(np.uint16), out, threads, 0)
    return out


def bench(torch, repeats):
    rng = np.random.default_rng(0)
    rows = []
    for m, k, n, transposed, where in SHAPES:
        a = rng.standard_normal((m, k)).astype(bfloat16)
        b = (np.ascontiguousarray(rng.standard_normal((n, k)).astype(bfloat16)).T if transposed
             else rng.standard_normal((k, n)).astype(bfloat16))
        a32, b32 = lowp_cpu.widen(a), lowp_cpu.widen(b)
        fns = {"f32 BLAS": lambda: cpu_gemm.matmul(a32, b32),
               "+ convert": lambda: cpu_gemm.matmul(lowp_cpu.widen(a), lowp_cpu.widen(b)),
               "bf16 1t": lambda: _kernel(a, b, 1), "bf16 2t": lambda: _kernel(a, b, 2)}
        if torch is not None:
            ta, tb = (torch.from_numpy(lowp_cpu.widen(v)).bfloat16() for v in (a, b))
            fns["torch 1t"] = lambda: (torch.set_num_threads(1), torch.matmul(ta, tb))
            fns["torch 2t"] = lambda: (torch.set_num_threads(2), torch.matmul(ta, tb))
        times = interleaved_medians(fns, repeats, warmup=2)
        row = {"shape": f"{m}x{k}x{n}" + (" (b = x.T)" if transposed else ""), "where": where,
               **{name: t * 1e6 for name, t in times.items()}}
        if torch is not None:
            mine = lowp_cpu.narrow(_kernel(a, b, 1), bfloat16).view(np.int16).astype(np.int32)
            theirs = torch.matmul(ta, tb).view(torch.int16).numpy().astype(np.int32)
            row["max |diff|"] = int(np.abs(mine - theirs).max())
        rows.append(row)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=30)
    args = p.parse_args(argv)
    if not bf16_cpu_gemm.AVAILABLE:
        print("the _parallel extension is not built, or this CPU has no AVX512_BF16: nothing to "
              "time (bfloat16 products convert to float32 here)")
        return []
    try:
        import torch
    except ImportError:
        torch = None
    rows = bench(torch, args.repeats)
    cols = [c for c in rows[0] if c not in ("shape", "where")]
    print("\nbfloat16 GEMMs, us per call" + ("" if torch else " (PyTorch not installed)"))
    print(f"{'product':<24}{'where':<19}" + "".join(f"{c:>11}" for c in cols))
    for r in rows:
        print(f"{r['shape']:<24}{r['where']:<19}"
              + "".join(f"{r[c]:>11.0f}" if isinstance(r[c], float) else f"{r[c]:>11}"
                        for c in cols))
    return rows


if __name__ == "__main__":
    main()
