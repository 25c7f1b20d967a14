"""Peak GEMM throughput: one 8192^3 float16 matmul through minigrad vs CuPy directly.

TFLOP/s = 2 n^3 / time, median of ``--repeats`` timings (CUDA events) after a warm-up. The
minigrad row goes through ``F.matmul`` (op dispatch + ``_backend.kernels.matmul``), the CuPy row
calls ``cupy.matmul``; both end in cublasGemmEx with float32 compute, so the gap is minigrad's
overhead. Extra rows: bfloat16, float32 (TF32 only when ``CUPY_TF32=1``) and a batched float16
product, which minigrad runs as one cublasGemmStridedBatchedEx (``last path`` column) where CuPy's
own batched matmul upcasts to float32. The last column times ``_backend/cublas_gemm`` (cuBLAS
through nvmath-python, the CUDA-graph capturable path) on the same operands, when installed.

    python benchmarks/matmul_peak.py [--n 8192] [--repeats 10] [--out FILE.md]
    python benchmarks/matmul_peak.py --cpu-smoke      # n=128 on the CPU (no GPU needed)
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import median_seconds  # noqa: E402
from amp_mlp import device_name, emit, markdown_table, no_gpu_exit  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.functional as F  # noqa: E402
from minigrad._backend import cublas_gemm, matmul_paths  # noqa: E402


def _time_gpu(fn, repeats):
    import cupy

    fn()  # warm-up: cuBLAS heuristics, kernel loading
    times = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def cases(n, batch):
    """(label, dtype, a shape, b shape) rows of the table."""
    return [("fp16 2-D", "float16", (n, n), (n, n)),
            ("bf16 2-D", "bfloat16", (n, n), (n, n)),
            ("fp32 2-D", "float32", (n, n), (n, n)),
            (f"fp16 batched {batch}x", "float16", (batch, n // 2, n // 2),
             (batch, n // 2, n // 2))]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--batch", type=int, default=8, help="batch of the batched row")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--cpu-smoke", action="store_true", help="n=128 on the CPU")
    p.add_argument("--out", help="append the table to this markdown file")
    cfg = p.parse_args(argv)
    gpu = mg.cuda.is_available() and not cfg.cpu_smoke
    if not gpu and not cfg.cpu_smoke:
        return no_gpu_exit("matmul_peak.py")
    if cfg.cpu_smoke:
        cfg.n, cfg.batch, cfg.repeats = 128, 2, 2
    if gpu:
        import cupy as xp
        timer = _time_gpu
    else:
        xp, timer = np, lambda fn, repeats: median_seconds(fn, repeats, warmup=1)
    device = "cuda" if gpu else "cpu"
    rows = []
    for label, dtype, sa, sb in cases(cfg.n, cfg.batch):
        dt = mg._backend.normalize_dtype(dtype)
        rng = np.random.default_rng(0)
        a_np = rng.standard_normal(sa, dtype=np.float32).astype(dt)
        b_np = rng.standard_normal(sb, dtype=np.float32).astype(dt)
        a, b = mg.tensor(a_np, device=device), mg.tensor(b_np, device=device)
        flops = 2.0 * np.prod(sa) * sb[-1]
        t_mg = timer(lambda: F.matmul(a, b), cfg.repeats)
        with matmul_paths.record() as paths:
            F.matmul(a, b)
        path = paths[-1]
        # the direct backend call on the same arrays (NumPy on the CPU: native low precision)
        t_raw = timer(lambda: xp.matmul(a._data, b._data), cfg.repeats)
        # agreement with a float32 product of the same (rounded) inputs
        # (on the device: an 8192^3 float32 product on the host would take a minute)
        ref = xp.matmul(xp.asarray(a_np.astype(np.float32)), xp.asarray(b_np.astype(np.float32)))
        got = F.matmul(a, b)._data.astype(np.float32)
        rel = float(xp.abs(got - ref).max() / (xp.abs(ref).max() + 1e-30))
        # the capturable cuBLAS path (nvmath-python): if it is as fast as cupy.matmul, it can
        # become the default (MINIGRAD_CUBLAS=nvmath) instead of only the capture path
        t_nv = (timer(lambda: cublas_gemm.matmul(a._data, b._data), cfg.repeats)
                if gpu and cublas_gemm.available() else None)
        rows.append((label, f"{sa}x{sb[-1]}", f"{flops / t_mg / 1e12:.2f}",
                     f"{flops / t_raw / 1e12:.2f}", f"{t_raw / t_mg:.2f}", path, f"{rel:.1e}",
                     "n/a" if t_nv is None else f"{flops / t_nv / 1e12:.2f}"))
    notes = (f"device: {device_name(gpu)}; median of {cfg.repeats} after a warm-up; TFLOP/s = "
             "2*m*n*k/time; 'raw' is " + ("cupy.matmul" if gpu else "numpy.matmul")
             + ("; CPU SMOKE RUN (tiny sizes)" if cfg.cpu_smoke else ""))
    headers = ["case", "shape", "minigrad TFLOP/s", "raw TFLOP/s", "minigrad/raw",
               "last path", "max rel err vs fp32", "nvmath cuBLAS TFLOP/s"]
    emit("matmul_peak: GEMM throughput", notes, markdown_table(headers, rows), cfg.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
