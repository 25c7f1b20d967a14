"""Data-parallel scaling on the CPU: images/s for 1 and 2 ranks, and the share of step time
spent in communication, with bucketing + overlap (the default) and without (one blocking
all-reduce per parameter at the end of backward).

    python benchmarks/ddp_scaling.py [--steps 30] [--ranks 1 2] [--repeats 3]

The driver starts ``mpiexec -n N`` workers (this same script with ``--worker``) and prints one
table. Each rank trains with a fixed per-rank batch (weak scaling: 2 ranks process twice the
images per step), float32, SGD momentum, ``DistributedDataParallel``; every rank has one BLAS
thread so N ranks use N cores. "comm" is the time spent launching and waiting for collectives
(``ddp.comm_stats``), as a share of the step time measured on rank 0. Each configuration is
launched ``--repeats`` times and the fastest launch is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = {"lenet": 64, "mlp3x512": 64}  # model -> per-rank batch
MODES = {"25 MB buckets, overlapped": dict(bucket_cap_mb=25, overlap=True),
         "1 MB buckets, overlapped": dict(bucket_cap_mb=1, overlap=True),
         "per parameter, blocking": dict(bucket_cap_mb=0, overlap=False)}


def worker(model_name: str, mode: str, steps: int) -> None:
    import numpy as np

    import minigrad as mg
    import minigrad.functional as F
    from minigrad import distributed as dist
    from minigrad.models import lenet5, mlp
    from minigrad.nn.parallel import DistributedDataParallel
    from minigrad.optimizer import SGD

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    mg.manual_seed(0)
    batch = MODELS[model_name]
    rng = np.random.default_rng(rank)
    if model_name == "lenet":
        model = lenet5()
        x = mg.tensor(rng.standard_normal((batch, 1, 32, 32)).astype(np.float32))
        y = mg.tensor(rng.integers(0, 10, batch))
        loss_fn = F.cross_entropy
    else:
        model = mlp(512, 512, 3)
        x = mg.tensor(rng.standard_normal((batch, 512)).astype(np.float32))
        y = mg.tensor(rng.standard_normal((batch, 512)).astype(np.float32))
        loss_fn = F.mse_loss
    ddp = DistributedDataParallel(model, **MODES[mode])
    opt = SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def step():
        loss_fn(ddp(x), y).backward()
        opt.step()
        opt.zero_grad()

    for _ in range(5):  # warm-up: allocator, BLAS, MPI connections
        step()
    dist.barrier()
    ddp.comm_stats.reset()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    elapsed = time.perf_counter() - t0
    if rank == 0:
        print("RESULT " + json.dumps({
            "images_per_s": world * batch * steps / elapsed,
            "step_ms": 1e3 * elapsed / steps,
            "comm_share": ddp.comm_stats.comm_seconds / elapsed,
            "collectives_per_step": ddp.comm_stats.collectives / steps}), flush=True)
    dist.destroy_process_group()


def launch(n: int, model: str, mode: str, steps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
    cmd = [str(mpiexec) if mpiexec.exists() else "mpiexec", "-n", str(n), "--oversubscribe",
           sys.executable, __file__, "--worker", model, mode, "--steps", str(steps)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=3,
                   help="launches per configuration; the fastest is kept (shared machines)")
    p.add_argument("--worker", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(*args.worker, args.steps)
        return
    rows = []
    for model in MODELS:
        base = None
        for mode in MODES:
            for n in args.ranks:
                r = max((launch(n, model, mode, args.steps) for _ in range(args.repeats)),
                        key=lambda res: res["images_per_s"])
                if n == 1 and mode == next(iter(MODES)):
                    base = r["images_per_s"]
                rows.append((model, mode, n, r, r["images_per_s"] / base if base else None))
    print(f"| model (batch {MODELS['lenet']}/rank) | reduction | ranks | images/s | vs 1 rank "
          "| step ms | comm share | collectives/step |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for model, mode, n, r, speedup in rows:
        print(f"| {model} | {mode} | {n} | {r['images_per_s']:.0f} | "
              f"{speedup:.2f}x | {r['step_ms']:.1f} | {r['comm_share']:.1%} | "
              f"{r['collectives_per_step']:.0f} |")


if __name__ == "__main__":
    main()
