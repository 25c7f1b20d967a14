"""CPU training benchmark: minigrad vs PyTorch on the same data from the same initial weights.

(a) LeNet-5 on the scikit-learn digits (1437 images, 32x32), batch 64, SGD momentum 0.9:
    seconds per epoch (the epoch includes batching: minigrad's DataLoader, and the same
    permutation sliced out of the same arrays for PyTorch), in float32 and with mixed precision
    on the CPU: float16 autocast with loss scaling (``amp.autocast()`` + ``amp.GradScaler``,
    PyTorch's ``torch.autocast("cpu", dtype=torch.float16)`` + ``torch.amp.GradScaler("cpu")``)
    and bfloat16 autocast (no scaling). The six runs take turns in one process.
(b) the MLP of the AMP seed scaled to a CPU (batch 64, width 512, 3 layers, MSE loss, plain SGD
    lr 0.001): milliseconds per training step, float32.

Each measurement is preceded by a warm-up and repeated, the runs taking turns (so a machine whose
speed drifts slows all alike); the median is reported. PyTorch gets as many threads as NumPy's
BLAS has (minigrad gives each GEMM up to that many, ``_backend/blas.py``), and its weights are
copied from minigrad's model, so both frameworks compute the same thing (the ``|dloss|`` column
is the first-step loss difference; ``vs fp32`` is a run's time over its framework's float32
time).

``--batch 1`` times the fixed cost of a step (s/epoch / 1437 is the time per step).

    python benchmarks/cpu_training.py [--repeats 5] [--batch 64] [--json results.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import platform
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import interleaved_medians  # noqa: E402  (sibling script, not a package)

import minigrad as mg
import minigrad.functional as F
from minigrad import amp
from minigrad.autodiff import GradManager
from minigrad.data import DataLoader, TensorDataset
from minigrad.data.datasets import digits
from minigrad.models import lenet5, mlp
from minigrad.optimizer import SGD

BATCH = 64
LENET_LR = 0.05
MLP_WIDTH, MLP_LAYERS, MLP_LR, MLP_BATCHES = 512, 3, 1e-3, 50


def numpy_threads() -> int:
    """Threads NumPy's BLAS uses (threadpoolctl when installed, else the env or core count)."""
    try:
        from threadpoolctl import threadpool_info

        blas = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
        if blas:
            return int(blas[0])
    except ImportError:
        pass
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return os.cpu_count() or 1


def _torch_copy(torch, module, mg_model):
    """Load minigrad's weights into a PyTorch module with the same parameter names."""
    sd = {k: torch.from_numpy(np.array(v.numpy(), copy=True)) for k, v in
          mg_model.state_dict().items()}
    module.load_state_dict(sd)
    return module


def _torch_lenet(torch):
    nn = torch.nn

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
            self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84,
                                                                                             10)

        def forward(self, x):
            f = torch.nn.functional
            x = f.max_pool2d(f.relu(self.conv1(x)), 2)
            x = f.max_pool2d(f.relu(self.conv2(x)), 2).flatten(1)
            return self.fc3(f.relu(self.fc2(f.relu(self.fc1(x)))))

    return LeNet5()


def _torch_mlp(torch):
    layers = []
    for _ in range(MLP_LAYERS - 1):
        layers += [torch.nn.Linear(MLP_WIDTH, MLP_WIDTH), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(MLP_WIDTH, MLP_WIDTH))
    return torch.nn.Sequential(*layers)


# ------------------------------------------------------------------------------------ LeNet
LENET_PRECISIONS = {"float32": None, "fp16 AMP": "float16", "bf16 AMP": "bfloat16"}


def _mg_lenet_epoch(x, y, low, first):
    """One minigrad epoch function in float32 or under ``autocast(dtype=low)`` (float16 with a
    GradScaler, MegEngine's spelling, as the main job trains), with its own model and loader."""
    mg.manual_seed(0)
    model = lenet5()
    opt = SGD(model.parameters(), lr=LENET_LR, momentum=0.9)
    gm = GradManager().attach(model.parameters())
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, seed=0)
    scaler = amp.GradScaler() if low == "float16" else None
    region = (lambda: amp.autocast(dtype=low)) if low else contextlib.nullcontext

    def epoch():
        with np.errstate(over="ignore", invalid="ignore"):  # the scaler handles fp16 overflow
            for xb, yb in loader:
                with region(), gm:
                    loss = F.cross_entropy(model(xb), yb)
                    if scaler is not None:
                        scaler.backward(gm, loss)
                    else:
                        gm.backward(loss)
                opt.step().clear_grad()
                first.setdefault(("mg", low), float(loss.item()))
    return epoch, model, loader


def _torch_lenet_epoch(torch, model, loader, x, y, low, first):
    """The same epoch in PyTorch (CPU autocast, ``torch.amp.GradScaler("cpu")`` for float16),
    from minigrad's initial weights and over the same shuffles."""
    tmodel = _torch_copy(torch, _torch_lenet(torch), model)
    topt = torch.optim.SGD(tmodel.parameters(), lr=LENET_LR, momentum=0.9)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    dtype = getattr(torch, low) if low else None
    scaler = torch.amp.GradScaler("cpu") if low == "float16" else None
    count = [0]

    def epoch():
        order = torch.from_numpy(loader.order(count[0]))
        count[0] += 1
        for s in range(0, len(order), BATCH):
            idx = order[s:s + BATCH]
            with torch.autocast("cpu", dtype=dtype, enabled=low is not None):
                loss = torch.nn.functional.cross_entropy(tmodel(tx[idx]), ty[idx])
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(topt)
                scaler.update()
            else:
                loss.backward()
                topt.step()
            topt.zero_grad()
            first.setdefault(("torch", low), float(loss.detach()))
    return epoch


def bench_lenet(torch, warmup: int, repeats: int) -> list:
    """One row per precision; the runs of every row take turns in one timing loop."""
    x, y = digits("train")
    first, fns = {}, {}
    for label, low in LENET_PRECISIONS.items():
        epoch, model, loader = _mg_lenet_epoch(x, y, low, first)
        fns[("minigrad", label)] = epoch
        if torch:
            fns[("pytorch", label)] = _torch_lenet_epoch(torch, model, loader, x, y, low, first)
    times = interleaved_medians(fns, repeats, warmup)
    rows = []
    for label, low in LENET_PRECISIONS.items():
        name = f"LeNet-5 {label}, s/epoch" + (f" (batch {BATCH})" if BATCH != 64 else "")
        res = {"name": name, "minigrad": times[("minigrad", label)],
               "unit": "s", "vs_fp32": {"minigrad": times[("minigrad", label)]
                                        / times[("minigrad", "float32")]}}
        if torch:
            res["pytorch"] = times[("pytorch", label)]
            res["vs_fp32"]["pytorch"] = res["pytorch"] / times[("pytorch", "float32")]
            res["check"] = abs(first[("mg", low)] - first[("torch", low)])
        rows.append(res)
    return rows


# ------------------------------------------------------------------------------------ MLP
def bench_mlp(torch, warmup: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((BATCH, MLP_WIDTH), dtype=np.float32) for _ in range(MLP_BATCHES)]
    targets = [rng.standard_normal((BATCH, MLP_WIDTH), dtype=np.float32)
               for _ in range(MLP_BATCHES)]
    mg.manual_seed(0)
    model = mlp(MLP_WIDTH, MLP_WIDTH, MLP_LAYERS)
    tmodel = _torch_copy(torch, _torch_mlp(torch), model) if torch else None
    opt = SGD(model.parameters(), lr=MLP_LR)
    gm = GradManager().attach(model.parameters())
    xs, ts = [mg.tensor(d) for d in data], [mg.tensor(t) for t in targets]
    first = {}

    def mg_pass():
        for xb, tb in zip(xs, ts):
            with gm:
                loss = F.mse_loss(model(xb), tb)
                gm.backward(loss)
            opt.step().clear_grad()
            first.setdefault("mg", float(loss.item()))

    fns = {"minigrad": mg_pass}
    if torch:
        topt = torch.optim.SGD(tmodel.parameters(), lr=MLP_LR)
        txs, tts = [torch.from_numpy(d) for d in data], [torch.from_numpy(t) for t in targets]

        def torch_pass():
            for xb, tb in zip(txs, tts):
                loss = torch.nn.functional.mse_loss(tmodel(xb), tb)
                loss.backward()
                topt.step()
                topt.zero_grad()
                first.setdefault("torch", float(loss.detach()))

        fns["pytorch"] = torch_pass
    res = {"name": f"MLP {MLP_LAYERS}x{MLP_WIDTH} MSE, ms/step",
           **{k: v / MLP_BATCHES * 1e3 for k, v in interleaved_medians(fns, repeats,
                                                                        warmup).items()}}
    if torch:
        res["check"] = abs(first["mg"] - first["torch"])
    res["unit"] = "ms"
    return res


def main(argv=None) -> list:
    global BATCH
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed warm-up runs")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch reference")
    p.add_argument("--batch", type=int, default=BATCH, help="images (MLP rows) per step")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = p.parse_args(argv)
    BATCH = args.batch

    threads = numpy_threads()
    torch = None
    if not args.no_torch:
        try:
            import torch
            torch.set_num_threads(threads)
        except ImportError:
            print("PyTorch is not installed: reporting minigrad only")
    rows = bench_lenet(torch, args.warmup, args.repeats) + [
        bench_mlp(torch, args.warmup, args.repeats)]

    print(f"\nCPU training benchmark ({platform.processor() or platform.machine()}, "
          f"{threads} BLAS threads, numpy {np.__version__}"
          + (f", torch {torch.__version__})" if torch else ")"))
    w = max(31, *(len(r["name"]) + 1 for r in rows))
    print(f"{'benchmark':<{w}}{'minigrad':>10}{'pytorch':>10}{'ratio':>8}{'|dloss|':>10}"
          f"{'mg vs fp32':>12}{'pt vs fp32':>12}")
    for r in rows:
        vs = r.get("vs_fp32", {})
        vs_mg = f"{vs['minigrad']:.2f}x" if "minigrad" in vs else "-"
        vs_pt = f"{vs['pytorch']:.2f}x" if "pytorch" in vs else "-"
        if "pytorch" in r:
            print(f"{r['name']:<{w}}{r['minigrad']:>10.3f}{r['pytorch']:>10.3f}"
                  f"{r['minigrad'] / r['pytorch']:>7.2f}x{r['check']:>10.1e}{vs_mg:>12}"
                  f"{vs_pt:>12}")
        else:
            print(f"{r['name']:<{w}}{r['minigrad']:>10.3f}{'-':>10}{'-':>8}{'-':>10}{vs_mg:>12}"
                  f"{'-':>12}")
    print("ratio = minigrad time / PyTorch time (lower is better for minigrad); |dloss| = "
          "first-step loss difference (same weights, same data); vs fp32 = the run's time over "
          "the same framework's float32 time")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": threads, "rows": rows}, f, indent=2)
    return rows


if __name__ == "__main__":
    main()
