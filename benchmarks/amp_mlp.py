"""Seed 004's AMP benchmark (PyTorch AMP recipe), minigrad vs PyTorch on one GPU.

The recipe exactly: an MLP of 3 Linear layers (4096 -> 4096, ReLU between), batch 512, 50
batches of random data, 3 epochs, SGD lr 0.001, MSE loss; default precision (float32) and mixed
precision (float16 autocast + GradScaler). For each it reports the total time and the peak memory
held by tensors (``mg.cuda.max_memory_allocated`` / ``torch.cuda.max_memory_allocated``) for
minigrad eager, minigrad ``nn.Graph`` and PyTorch eager (when importable), all from the same data
and the same initial weights. ``--batch-sizes 128,256,512,513`` runs the recipe's other sizes.
Each timed run starts after an untimed warm-up (``--warmup`` batches on a throwaway model: CuPy
compiles kernels on first use); peak memory comes from a separate short pass after all timings,
because minigrad's peak tracker is a Python memory hook that would slow the timed loops.

    python benchmarks/amp_mlp.py [--batch-sizes 512] [--out benchmarks/results/DATE-DEVICE.md]
    python benchmarks/amp_mlp.py --cpu-smoke      # tiny sizes on the CPU (no GPU needed)

Without a GPU (and without ``--cpu-smoke``) it prints why and exits with status 0.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import platform
import sys
import time

import numpy as np

import minigrad as mg
from minigrad import amp

# ----------------------------------------------------------------------------- shared helpers
# (amp_resnet.py and matmul_peak.py import these: benchmarks/ is a folder of scripts)


def device_name(gpu: bool) -> str:
    """The GPU's name (CUDA device 0), or the CPU's."""
    if gpu:
        props = mg._backend.cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    return platform.processor() or platform.machine() or "cpu"


def import_torch(gpu: bool):
    """``torch`` when importable (and CUDA-enabled when ``gpu``), else None."""
    try:
        import torch
    except ImportError:
        return None
    if gpu and not torch.cuda.is_available():
        return None
    return torch


def markdown_table(headers, rows) -> str:
    """A GitHub-markdown table; floats printed with 3 decimals."""
    def fmt(v):
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def emit(title: str, notes: str, table: str, out: str | None) -> None:
    """Print the table; with ``out``, append it (titled, dated) to that markdown file."""
    print(f"\n{title}\n{notes}\n\n{table}")
    if out:
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        with open(out, "a", encoding="utf-8") as f:
            f.write(f"\n## {title} ({stamp})\n\n{notes}\n\n{table}\n")


def no_gpu_exit(script: str) -> int:
    print(f"{script}: no GPU (CuPy is missing or sees no device), so there is nothing to "
          "benchmark here. Run it on a machine with an NVIDIA GPU and cupy-cuda12x/13x, or pass "
          "--cpu-smoke for a tiny CPU run that only checks the script works.")
    return 0


def scaled_update(scaler, opt, loss) -> None:
    """The AMP recipe's update, the same spelling in minigrad and PyTorch: scaled backward,
    a step skipped on inf/NaN, the scale update, zeroed gradients."""
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()


def mib(nbytes) -> str:
    return "n/a" if nbytes is None else f"{nbytes / 2 ** 20:.0f}"


# ----------------------------------------------------------------------------- the recipe
def make_model(in_size, out_size, num_layers, device):
    layers = []
    for _ in range(num_layers - 1):
        layers += [mg.nn.Linear(in_size, in_size), mg.nn.ReLU()]
    layers.append(mg.nn.Linear(in_size, out_size))
    return mg.nn.Sequential(*layers).to(device)


def torch_copy(torch, net, device):
    """The same MLP in PyTorch with minigrad's initial weights."""
    layers = []
    for m in net:
        if isinstance(m, mg.nn.Linear):
            t = torch.nn.Linear(m.weight.shape[1], m.weight.shape[0])
            with torch.no_grad():
                t.weight.copy_(torch.from_numpy(m.weight.numpy()))
                t.bias.copy_(torch.from_numpy(m.bias.numpy()))
            layers.append(t)
        else:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).to(device)


class _Step(mg.nn.Graph):
    """One training step as an ``nn.Graph`` (OneFlow style); ``capture`` runs it as a CUDA graph
    (which needs the sync-free scaler: the host-path one reads its flag every step)."""

    def __init__(self, net, loss_fn, opt, mixed, capture=False):
        super().__init__()
        self.net, self.loss_fn = net, loss_fn
        self.add_optimizer(opt)
        self.config.enable_cuda_graph(capture)
        if mixed:
            self.config.enable_amp(True)
            self.set_grad_scaler(amp.GradScaler(sync_free=capture))

    def build(self, x, t):
        loss = self.loss_fn(self.net(x), t)
        loss.backward()
        return loss

    def path(self) -> str:
        """How the last calls ran: ``graph replay`` (with the replay count) or ``eager``."""
        step = self._captured[1] if self._captured is not None else None
        if step is None:
            return "eager"
        return f"{type(step).__name__} ({step.replays} replays)"


def minigrad_trainer(cfg, data, targets, mixed, graph, device, paths=None):
    """``train(batches, epochs) -> final loss`` on a fresh, seeded minigrad model; ``graph`` is
    None (eager), ``"eager"`` (an nn.Graph) or ``"captured"`` (an nn.Graph as a CUDA graph).
    The path the step took is appended to ``paths``."""
    mg.manual_seed(0)
    net = make_model(cfg.in_size, cfg.out_size, cfg.layers, device)
    opt = mg.optimizer.SGD(net.parameters(), lr=0.001)
    loss_fn = mg.nn.MSELoss()
    scaler = amp.GradScaler(enabled=mixed)
    step = _Step(net, loss_fn, opt, mixed, graph == "captured") if graph else None

    def train(batches, epochs):
        loss = None
        for _ in range(epochs):
            for x, t in zip(data[:batches], targets[:batches]):
                if step is not None:
                    loss = step(x, t)
                    continue
                with amp.autocast(dtype="float16", enabled=mixed):
                    loss = loss_fn(net(x), t)
                scaled_update(scaler, opt, loss)
        if paths is not None:
            paths.append(step.path() if step is not None else "eager")
        return float(loss.item())

    return train


def torch_trainer(torch, cfg, data, targets, mixed, device):
    """``train(batches, epochs) -> final loss`` on PyTorch's copy of the seeded model."""
    mg.manual_seed(0)
    net = torch_copy(torch, make_model(cfg.in_size, cfg.out_size, cfg.layers, "cpu"), device)
    opt = torch.optim.SGD(net.parameters(), lr=0.001)
    loss_fn = torch.nn.MSELoss()
    dev_type = "cuda" if device != "cpu" else "cpu"
    scaler = torch.amp.GradScaler(dev_type, enabled=mixed)
    xs = [torch.from_numpy(a).to(device) for a in data]
    ts = [torch.from_numpy(a).to(device) for a in targets]

    def train(batches, epochs):
        loss = None
        for _ in range(epochs):
            for x, t in zip(xs[:batches], ts[:batches]):
                with torch.autocast(device_type=dev_type, dtype=torch.float16, enabled=mixed):
                    loss = loss_fn(net(x), t)
                scaled_update(scaler, opt, loss)
        return float(loss.item())

    return train


def timed_run(make, sync, cfg):
    """(seconds, final loss) of the whole recipe on a fresh model, after an untimed warm-up.

    The warm-up trains a throwaway model of the same shapes for ``cfg.warmup`` batches: CuPy
    compiles each kernel on its first call (seconds of NVRTC), cuBLAS/cuDNN pick algorithms, so
    without it the first configuration would pay all of that inside its timed region. No memory
    hook is installed here (see ``peak_run``)."""
    if cfg.warmup:
        make()(cfg.warmup, 1)
    train = make()
    gc.collect()
    sync()
    t0 = time.perf_counter()
    loss = train(cfg.num_batches, cfg.epochs)
    sync()
    return time.perf_counter() - t0, loss


def peak_run(make, sync, reset, peak, cfg):
    """Peak tensor bytes over a few steps of a fresh model, in a pass of its own: minigrad's
    peak tracker is a Python CuPy memory hook (two Python calls per allocation) that stays
    installed once started, so every timing runs before the first memory pass."""
    train = make()
    gc.collect()
    sync()
    reset()
    train(min(cfg.num_batches, 3), 1)
    sync()
    return peak()


def bench(cfg, batch, device, torch):
    """Rows (framework, precision, batch, seconds, peak MiB, final loss) for one batch size."""
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((batch, cfg.in_size), dtype=np.float32)
            for _ in range(cfg.num_batches)]
    targets = [rng.standard_normal((batch, cfg.out_size), dtype=np.float32)
               for _ in range(cfg.num_batches)]
    mg_data = [mg.tensor(a, device=device) for a in data]
    mg_targets = [mg.tensor(a, device=device) for a in targets]
    gpu = device != "cpu"
    mg_mem = (mg.cuda.reset_peak_memory_stats, mg.cuda.max_memory_allocated) if gpu else None
    # (name, trainer factory for `mixed`, synchronize, (reset, peak) or None)
    paths: dict = {}
    runs = [("minigrad eager", lambda m: (lambda: minigrad_trainer(
        cfg, mg_data, mg_targets, m, None, device)), mg.cuda.synchronize, mg_mem)]
    for kind in ("eager", "captured") if gpu else ("eager",):
        name = f"minigrad nn.Graph {kind}"
        runs.append((name, lambda m, kind=kind, name=name: (lambda: minigrad_trainer(
            cfg, mg_data, mg_targets, m, kind, device, paths.setdefault((name, m), []))),
            mg.cuda.synchronize, mg_mem))
    if torch is not None:
        runs.append(("PyTorch eager", lambda m: (lambda: torch_trainer(
            torch, cfg, data, targets, m, device)),
            torch.cuda.synchronize if gpu else (lambda: None),
            (torch.cuda.reset_peak_memory_stats, torch.cuda.max_memory_allocated) if gpu
            else None))
    results = {}
    for name, factory, sync, _ in runs:       # every timing first ...
        for mixed in (False, True):
            try:
                results[name, mixed] = timed_run(factory(mixed), sync, cfg)
            except Exception as e:  # one failing configuration must not hide the others
                results[name, mixed] = e
    peaks = {}
    for name, factory, sync, mem in runs:     # ... then the memory passes
        for mixed in (False, True):
            if mem is not None and not isinstance(results[name, mixed], Exception):
                peaks[name, mixed] = peak_run(factory(mixed), sync, *mem, cfg)
    rows = []
    for name, _, _, _ in runs:
        base = None
        for mixed in (False, True):
            prec, res = ("mixed" if mixed else "default"), results[name, mixed]
            if isinstance(res, Exception):
                rows.append((name, prec, batch, "error", "-", f"{type(res).__name__}: {res}"[:80],
                             "-", "-"))
                continue
            secs, loss = res
            base = secs if not mixed else base
            speed = f"{base / secs:.2f}x" if mixed and base else "1.00x"
            ran = paths.get((name, mixed))
            rows.append((name, prec, batch, secs, mib(peaks.get((name, mixed))), f"{loss:.4f}",
                         speed, ran[1] if ran and len(ran) > 1 else "eager"))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-sizes", default="512",
                   help="comma-separated batch sizes (the recipe suggests 128,256,513)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--num-batches", type=int, default=50)
    p.add_argument("--size", type=int, default=4096, help="in_size = out_size")
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--warmup", type=int, default=3,
                   help="untimed warm-up batches on a throwaway model before each timing")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch rows")
    p.add_argument("--cpu-smoke", action="store_true",
                   help="tiny sizes on the CPU: checks the script, measures nothing useful")
    p.add_argument("--out", help="append the table to this markdown file")
    cfg = p.parse_args(argv)
    gpu = mg.cuda.is_available() and not cfg.cpu_smoke
    if not gpu and not cfg.cpu_smoke:
        return no_gpu_exit("amp_mlp.py")
    if cfg.cpu_smoke:
        cfg.batch_sizes, cfg.epochs, cfg.num_batches, cfg.size, cfg.warmup = "8", 1, 2, 32, 1
    cfg.in_size = cfg.out_size = cfg.size
    device = "cuda" if gpu else "cpu"
    torch = None if cfg.no_torch else import_torch(gpu)
    rows = []
    for b in (int(s) for s in cfg.batch_sizes.split(",")):
        rows += bench(cfg, b, device, torch)
    headers = ["framework", "precision", "batch", "total s", "peak MiB", "final loss",
               "mixed speed-up", "path (timed run)"]
    notes = (f"device: {device_name(gpu)}; MLP {cfg.layers} x Linear({cfg.size}), "
             f"{cfg.num_batches} batches x {cfg.epochs} epochs, SGD lr 0.001, MSE; mixed = "
             f"float16 autocast + GradScaler; {cfg.warmup} untimed warm-up batches per row; "
             "peak memory from a separate pass after all timings"
             + ("" if torch is not None else "; PyTorch not available")
             + ("; CPU SMOKE RUN (tiny sizes, timings meaningless)" if cfg.cpu_smoke else ""))
    emit("amp_mlp: seed 004 AMP recipe", notes, markdown_table(headers, rows), cfg.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
