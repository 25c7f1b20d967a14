"""Casts per training step of the main job (LeNet-5, batch 32) on the CPU, per precision.

Counts, over ``--steps`` steps after three warm-up steps (cProfile, so the times it prints are
inflated by the profiler and only the counts matter):

- ``astype``: calls of NumPy's ``ndarray.astype`` (every dtype conversion NumPy makes itself;
  float16 ones convert element by element);
- ``block casts``: float16 <-> float32 conversions made by ``_backend/lowp_cpu.py``'s NumPy
  block kernels (absent before that module existed);
- ``C casts``: conversions made by the optional C extension ``_backend/_f16c`` (where built);
- ``ops``: ``Function.apply`` calls (recorded and unrecorded ops, casts included).

Then the speed of each cast kernel on a million random elements, ns per element (median of
``--repeats``): the C extension, the NumPy block kernel and NumPy's/ml_dtypes' ``astype``.

The counts use only the public API, so the same script counts an older checkout's casts:
``git worktree add /tmp/old <commit> && PYTHONPATH=/tmp/old python benchmarks/amp_cpu_casts.py``.

    python benchmarks/amp_cpu_casts.py [--steps 30] [--repeats 20]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import pathlib
import pstats
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import median_seconds  # noqa: E402  (sibling script, not a package)

import minigrad as mg  # noqa: E402
import minigrad.functional as F
from minigrad import amp
from minigrad.autodiff import GradManager
from minigrad.data import DataLoader, TensorDataset
from minigrad.data.datasets import digits
from minigrad.models import lenet5
from minigrad.optimizer import SGD

try:  # the cast kernels are internals: an older checkout may lack them
    from minigrad._backend import lowp_cpu
except ImportError:
    lowp_cpu = None


def _step_fn(low):
    x, y = digits("train")
    x = (x - x.mean()) / x.std()
    mg.manual_seed(0)
    model = lenet5()
    opt = SGD(model.parameters(), lr=0.02, momentum=0.9)
    gm = GradManager().attach(model.parameters())
    scaler = amp.GradScaler() if low == "float16" else None
    region = (lambda: amp.autocast(dtype=low)) if low else contextlib.nullcontext
    batches = list(DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, seed=0))

    def step(i):
        xb, yb = batches[i % len(batches)]
        with np.errstate(over="ignore", invalid="ignore"), region(), gm:
            loss = F.cross_entropy(model(xb), yb)
            if scaler is not None:
                scaler.backward(gm, loss)
            else:
                gm.backward(loss)
        opt.step().clear_grad()
    return step


def count(low, steps: int) -> dict:
    """Calls per step of ``astype``, of the block casts and of ``Function.apply``."""
    step = _step_fn(low)
    for i in range(3):
        step(i)
    prof = cProfile.Profile()
    prof.enable()
    for i in range(steps):
        step(3 + i)
    prof.disable()
    out = {"astype": 0, "block casts": 0, "C casts": 0, "ops": 0}
    for (path, _, name), (_, ncalls, *_rest) in pstats.Stats(prof).stats.items():
        if name == "<method 'astype' of 'numpy.ndarray' objects>":
            out["astype"] += ncalls
        elif path.endswith("lowp_cpu.py") and name in ("_widen_f16", "_narrow_f16"):
            out["block casts"] += ncalls
        elif path.endswith("lowp_cpu.py") and name == "_native_cast":
            out["C casts"] += ncalls
        elif path.endswith("function.py") and name == "apply":
            out["ops"] += ncalls
    return {k: v / steps for k, v in out.items()}


def cast_speeds(repeats: int) -> dict:
    """ns per element of each cast kernel on 2**20 random elements (None: not available)."""
    if lowp_cpu is None:
        return {}
    x = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    h, bf = x.astype(np.float16), x.astype(mg.bfloat16)
    c = getattr(lowp_cpu, "_native_cast", None) if getattr(lowp_cpu, "F16C", False) else None
    kernels = {
        "float32 -> float16": (c and (lambda: c(x, np.float16)), lambda: lowp_cpu._narrow_f16(x),
                               lambda: x.astype(np.float16)),
        "float16 -> float32": (c and (lambda: c(h, np.float32)), lambda: lowp_cpu._widen_f16(h),
                               lambda: h.astype(np.float32)),
        "float32 -> bfloat16": (c and (lambda: c(x, bf.dtype)), None, lambda: x.astype(bf.dtype)),
        "bfloat16 -> float32": (c and (lambda: c(bf, np.float32)), None,
                                lambda: bf.astype(np.float32)),
    }

    def ns(fn):
        return None if fn is None else median_seconds(fn, repeats, warmup=1) / x.size * 1e9
    return {name: [ns(f) for f in fns] for name, fns in kernels.items()}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args(argv)
    rows = {label: count(low, args.steps) for label, low in
            (("float32", None), ("fp16 AMP + GradScaler", "float16"), ("bf16 AMP", "bfloat16"))}
    print(f"{'per step (LeNet-5, batch 32)':<30}{'astype':>10}{'block casts':>13}{'C casts':>9}"
          f"{'ops':>8}")
    for label, r in rows.items():
        print(f"{label:<30}{r['astype']:>10.1f}{r['block casts']:>13.1f}{r['C casts']:>9.1f}"
              f"{r['ops']:>8.1f}")
    speeds = cast_speeds(args.repeats)
    if speeds:
        print(f"\n{'ns per element (2**20)':<30}{'C (_f16c)':>10}{'NumPy blocks':>13}"
              f"{'astype':>9}")
        for name, times in speeds.items():
            cells = "".join(f"{'-' if t is None else f'{t:.2f}':>{w}}"
                            for t, w in zip(times, (10, 13, 9)))
            print(f"{name:<30}{cells}")
    return {"counts": rows, "ns_per_element": speeds}


if __name__ == "__main__":
    main()
