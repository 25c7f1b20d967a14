"""CPU training benchmark: minigrad vs PyTorch on the same data from the same initial weights.

(a) LeNet-5 on the scikit-learn digits (1437 images, 32x32), batch 64, SGD momentum 0.9, float32:
    seconds per epoch (the epoch includes batching: minigrad's DataLoader, and the same
    permutation sliced out of the same arrays for PyTorch).
(b) the MLP of the AMP seed scaled to a CPU (batch 64, width 512, 3 layers, MSE loss, plain SGD
    lr 0.001): milliseconds per training step.

Each measurement is preceded by a warm-up and repeated, minigrad and PyTorch taking turns (so a
machine whose speed drifts slows both alike); the median is reported. PyTorch gets as
many threads as NumPy's BLAS uses, and its weights are copied from minigrad's model, so both
frameworks compute the same thing (the table's last column is the first-step loss difference).

    python benchmarks/cpu_training.py [--repeats 5] [--json results.json]
"""

from __future__ import annotations

import argparse
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
def bench_lenet(torch, warmup: int, repeats: int) -> dict:
    x, y = digits("train")
    mg.manual_seed(0)
    model = lenet5()
    tmodel = _torch_copy(torch, _torch_lenet(torch), model) if torch else None
    opt = SGD(model.parameters(), lr=LENET_LR, momentum=0.9)
    gm = GradManager().attach(model.parameters())
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, seed=0)
    first = {}

    def mg_epoch():
        for xb, yb in loader:
            with gm:
                loss = F.cross_entropy(model(xb), yb)
                gm.backward(loss)
            opt.step().clear_grad()
            first.setdefault("mg", float(loss.item()))

    fns = {"minigrad": mg_epoch}
    if torch:
        topt = torch.optim.SGD(tmodel.parameters(), lr=LENET_LR, momentum=0.9)
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        epoch = [0]

        def torch_epoch():
            order = torch.from_numpy(loader.order(epoch[0]))  # the same shuffles as minigrad's
            epoch[0] += 1
            for s in range(0, len(order), BATCH):
                idx = order[s:s + BATCH]
                loss = torch.nn.functional.cross_entropy(tmodel(tx[idx]), ty[idx])
                loss.backward()
                topt.step()
                topt.zero_grad()
                first.setdefault("torch", float(loss.detach()))

        fns["pytorch"] = torch_epoch
    res = {"name": "LeNet-5 digits, s/epoch", **interleaved_medians(fns, repeats, warmup)}
    if torch:
        res["check"] = abs(first["mg"] - first["torch"])
    res["unit"] = "s"
    return res


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
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed warm-up runs")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch reference")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = p.parse_args(argv)

    threads = numpy_threads()
    torch = None
    if not args.no_torch:
        try:
            import torch
            torch.set_num_threads(threads)
        except ImportError:
            print("PyTorch is not installed: reporting minigrad only")
    rows = [bench_lenet(torch, args.warmup, args.repeats),
            bench_mlp(torch, args.warmup, args.repeats)]

    print(f"\nCPU training benchmark ({platform.processor() or platform.machine()}, "
          f"{threads} BLAS threads, numpy {np.__version__}"
          + (f", torch {torch.__version__})" if torch else ")"))
    print(f"{'benchmark':<28}{'minigrad':>12}{'pytorch':>12}{'ratio':>9}{'|dloss|':>11}")
    for r in rows:
        if "pytorch" in r:
            print(f"{r['name']:<28}{r['minigrad']:>12.3f}{r['pytorch']:>12.3f}"
                  f"{r['minigrad'] / r['pytorch']:>8.2f}x{r['check']:>11.1e}")
        else:
            print(f"{r['name']:<28}{r['minigrad']:>12.3f}{'-':>12}{'-':>9}{'-':>11}")
    print("ratio = minigrad time / PyTorch time (lower is better for minigrad); |dloss| = "
          "first-step loss difference (same weights, same data)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": threads, "rows": rows}, f, indent=2)
    return rows


if __name__ == "__main__":
    main()
