"""Where one AMP training step's time goes: host (Python) vs GPU, launches, top functions.

Seed 004's MLP step (3 x Linear(4096), batch 512, SGD, MSE) as minigrad eager, minigrad as a
captured CUDA graph and PyTorch eager, each in float32 and fp16 autocast + GradScaler:

- ``host ms``: time for the step's Python to return, with the GPU kept idle-free (the launches
  are queued, not waited for); a host-bound step has ``host ms`` close to ``wall ms``;
- ``GPU ms``: CUDA events around the step, GPU time only;
- ``wall ms``: synchronised wall time per step over a loop;
- ``nodes``: kernels and copies in one step (the captured graph's node count for minigrad,
  CUDA kernels seen by ``torch.profiler`` for PyTorch).

``--profile`` adds cProfile's top functions of minigrad's eager mixed step (written to
``--profile-out``). No timing assertions anywhere: this prints a table.

    python benchmarks/step_profile.py [--batch 512] [--size 4096] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time

import numpy as np

import minigrad as mg
from minigrad import amp

sys.path.insert(0, __import__("os").path.dirname(__file__))
from amp_mlp import (_Step, device_name, emit, import_torch, make_model,  # noqa: E402
                     markdown_table, no_gpu_exit, scaled_update, torch_copy)


def _graph_nodes(step) -> str:
    """Nodes of a captured minigrad step's CUDA graph (kernels, copies, memsets)."""
    try:
        from cuda.bindings import runtime as cudart

        graph = step._graph.graph
        err, _, n = cudart.cudaGraphGetNodes(cudart.cudaGraph_t(init_value=graph), 0)
        return str(int(n)) if int(err) == 0 else f"n/a ({err})"
    except Exception as e:  # noqa: BLE001 - a diagnostic column, never fatal
        return f"n/a ({type(e).__name__})"


def _measure(step_fn, sync, events, n):
    """(host ms, GPU ms, wall ms) per step over ``n`` steps after 3 warm-up steps."""
    for _ in range(3):
        step_fn()
    sync()
    host = []
    for _ in range(n):  # host: enqueue time of one step, the GPU drained before each
        t0 = time.perf_counter()
        step_fn()
        host.append(time.perf_counter() - t0)
        sync()
    start, end = events()
    start.record()
    for _ in range(n):
        step_fn()
    end.record()
    end.synchronize()
    gpu = start_end_ms(start, end) / n
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        step_fn()
    sync()
    wall = (time.perf_counter() - t0) / n * 1e3
    return float(np.median(host) * 1e3), gpu, wall


def start_end_ms(start, end) -> float:
    if hasattr(start, "elapsed_time"):  # torch.cuda.Event
        return start.elapsed_time(end)
    return mg._backend.cupy.cuda.get_elapsed_time(start, end)


def minigrad_step(cfg, mixed, captured):
    mg.manual_seed(0)
    net = make_model(cfg.size, cfg.size, 3, "cuda")
    opt = mg.optimizer.SGD(net.parameters(), lr=0.001)
    rng = np.random.default_rng(0)
    x = mg.tensor(rng.standard_normal((cfg.batch, cfg.size), dtype=np.float32), device="cuda")
    t = mg.tensor(rng.standard_normal((cfg.batch, cfg.size), dtype=np.float32), device="cuda")
    loss_fn = mg.nn.MSELoss()
    if captured:
        g = _Step(net, loss_fn, opt, mixed, capture=True)
        return (lambda: g(x, t)), g
    scaler = amp.GradScaler(enabled=mixed)

    def step():
        with amp.autocast(dtype="float16", enabled=mixed):
            loss = loss_fn(net(x), t)
        scaled_update(scaler, opt, loss)
        return loss
    return step, None


def torch_step(torch, cfg, mixed):
    mg.manual_seed(0)
    net = torch_copy(torch, make_model(cfg.size, cfg.size, 3, "cpu"), "cuda")
    opt = torch.optim.SGD(net.parameters(), lr=0.001)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((cfg.batch, cfg.size), dtype=np.float32)).cuda()
    t = torch.from_numpy(rng.standard_normal((cfg.batch, cfg.size), dtype=np.float32)).cuda()
    loss_fn = torch.nn.MSELoss()
    scaler = torch.amp.GradScaler("cuda", enabled=mixed)

    def step():
        with torch.autocast("cuda", dtype=torch.float16, enabled=mixed):
            loss = loss_fn(net(x), t)
        scaled_update(scaler, opt, loss)
        return loss
    return step


def torch_kernels(torch, step) -> str:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    return str(sum(1 for e in prof.events() if e.device_type.name == "CUDA"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--profile", action="store_true", help="cProfile minigrad's eager AMP step")
    p.add_argument("--profile-out", default=None, help="write the cProfile listing here")
    p.add_argument("--out", help="append the table to this markdown file")
    cfg = p.parse_args(argv)
    if not mg.cuda.is_available():
        return no_gpu_exit("step_profile.py")
    cupy = mg._backend.cupy
    sync = mg.cuda.synchronize
    rows = []
    for mixed in (False, True):
        prec = "fp16 AMP" if mixed else "fp32"
        for captured in (False, True):
            step, g = minigrad_step(cfg, mixed, captured)
            h, gp, w = _measure(step, sync, lambda: (cupy.cuda.Event(), cupy.cuda.Event()),
                                cfg.steps)
            nodes = _graph_nodes(g._captured[1]) if g is not None and g._captured and \
                g._captured[1] is not None else "-"
            name = "minigrad " + ((g.path() if g is not None else "") if captured else "eager")
            rows.append((name, prec, h, gp, w, nodes))
    torch = import_torch(True)
    if torch is not None:
        for mixed in (False, True):
            step = torch_step(torch, cfg, mixed)
            ev = (lambda: (torch.cuda.Event(enable_timing=True),
                           torch.cuda.Event(enable_timing=True)))
            h, gp, w = _measure(step, torch.cuda.synchronize, ev, cfg.steps)
            rows.append(("PyTorch eager", "fp16 AMP" if mixed else "fp32", h, gp, w,
                         torch_kernels(torch, step)))
    notes = (f"device: {device_name(True)}; MLP 3 x Linear({cfg.size}), batch {cfg.batch}, SGD, "
             f"MSE; medians of {cfg.steps} steps after 3 warm-up steps")
    emit("step_profile: one seed-MLP training step", notes,
         markdown_table(["run", "precision", "host ms", "GPU ms", "wall ms", "nodes"], rows),
         cfg.out)
    if cfg.profile:
        step, _ = minigrad_step(cfg, True, False)
        for _ in range(3):
            step()
        sync()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(cfg.steps):
            step()
        sync()
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(40)
        text = buf.getvalue()
        if cfg.profile_out:
            with open(cfg.profile_out, "w", encoding="utf-8") as f:
                f.write(text)
        print("\n".join(text.splitlines()[:60]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
