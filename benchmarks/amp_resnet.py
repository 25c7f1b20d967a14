"""ResNet-18 training throughput, float32 vs AMP, minigrad vs PyTorch on one GPU.

``minigrad.models.resnet18(10, small_input=True)`` on random 32x32 images, batch 256, SGD
momentum 0.9 (lr 0.1, weight decay 5e-4), cross-entropy: images per second and peak tensor memory
for float32 and for AMP (float16 autocast + GradScaler). PyTorch (when importable) runs the same
network, built in this script with torchvision's module names (torchvision is not required) and
loaded with minigrad's initial weights, on the same data.

    python benchmarks/amp_resnet.py [--batch 256] [--steps 20] [--out FILE.md]
    python benchmarks/amp_resnet.py --cpu-smoke      # tiny run on the CPU (no GPU needed)

minigrad's convolutions use cuDNN when ``nvidia-cudnn-frontend`` loads (fp16/bf16, and fp32
with TF32 as PyTorch's default), else im2col + cuBLAS; the table notes which. Timings run after
untimed warm-up steps; peak memory is measured in a separate pass after every timing.
"""

from __future__ import annotations

import gc
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from amp_mlp import (  # noqa: E402  (sibling script, not a package)
    device_name, emit, import_torch, markdown_table, mib, no_gpu_exit, scaled_update,
)

import minigrad as mg  # noqa: E402
import minigrad.functional as F  # noqa: E402
from minigrad import amp  # noqa: E402
from minigrad._backend import cudnn_conv  # noqa: E402
from minigrad.models import resnet18  # noqa: E402


def torch_resnet18(torch, num_classes):
    """ResNet-18 for 32x32 inputs with torchvision's parameter names."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                             nn.BatchNorm2d(cout))
                               if stride != 1 or cin != cout else None)

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            idn = x if self.downsample is None else self.downsample(x)
            return self.relu(out + idn)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.Identity()
            cin, layers = 64, []
            for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers.append(nn.Sequential(Block(cin, planes, stride),
                                            Block(planes, planes, 1)))
                cin = planes
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return Net()


def _minigrad_model(device):
    mg.manual_seed(0)
    return resnet18(10, small_input=True).to(device)


def minigrad_step(x, y, mixed, device):
    """One training step (a closure over a fresh, seeded model); returns the loss Tensor."""
    net = _minigrad_model(device)
    net.train()
    opt = mg.optimizer.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scaler = amp.GradScaler(enabled=mixed)

    def step():
        with amp.autocast(dtype="float16", enabled=mixed):
            loss = F.cross_entropy(net(x), y)
        scaled_update(scaler, opt, loss)
        return loss

    return step


def torch_step(torch, x_np, y_np, mixed, device):
    """The same step in PyTorch, on minigrad's initial weights."""
    net = torch_resnet18(torch, 10)
    state = {k: torch.from_numpy(np.array(v.numpy()))
             for k, v in _minigrad_model("cpu").state_dict().items()}
    net.load_state_dict(state)
    net = net.to(device).train()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    dev_type = "cpu" if device == "cpu" else "cuda"
    scaler = torch.amp.GradScaler(dev_type, enabled=mixed)
    x, y = torch.from_numpy(x_np).to(device), torch.from_numpy(y_np).to(device)

    def step():
        with torch.autocast(device_type=dev_type, dtype=torch.float16, enabled=mixed):
            loss = torch.nn.functional.cross_entropy(net(x), y)
        scaled_update(scaler, opt, loss)
        return loss

    return step


def throughput(cfg, step, sync):
    """(images/s, last loss) over ``cfg.steps`` steps after ``cfg.warmup`` untimed ones (CuPy
    compiles kernels and cuDNN builds plans on first use). No memory hook is active here."""
    for _ in range(cfg.warmup):
        step()
    gc.collect()
    sync()
    t0 = time.perf_counter()
    for _ in range(cfg.steps):
        loss = step()
    sync()
    secs = time.perf_counter() - t0
    return cfg.batch * cfg.steps / secs, float(loss.item())


def peak_bytes(step, sync, reset, peak):
    """Peak tensor bytes of two steps of a fresh model, measured in a pass of its own (minigrad's
    tracker is a Python memory hook that stays installed: all timings run before it starts)."""
    step()
    gc.collect()
    sync()
    reset()
    for _ in range(2):
        step()
    sync()
    return peak()


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--image", type=int, default=32, help="image side (32: CIFAR)")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--cpu-smoke", action="store_true",
                   help="batch 2 of 8x8 images, 1 step on the CPU: checks the script only")
    p.add_argument("--out", help="append the table to this markdown file")
    cfg = p.parse_args(argv)
    gpu = mg.cuda.is_available() and not cfg.cpu_smoke
    if not gpu and not cfg.cpu_smoke:
        return no_gpu_exit("amp_resnet.py")
    if cfg.cpu_smoke:
        cfg.batch, cfg.image, cfg.steps, cfg.warmup = 2, 8, 1, 0
    device = "cuda" if gpu else "cpu"
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((cfg.batch, 3, cfg.image, cfg.image), dtype=np.float32)
    y_np = rng.integers(0, 10, cfg.batch).astype(np.int64)
    x, y = mg.tensor(x_np, device=device), mg.tensor(y_np, device=device)
    torch = None if cfg.no_torch else import_torch(gpu)
    # (name, step factory for `mixed`, synchronize, (reset, peak) or None)
    runs = [("minigrad", lambda m: minigrad_step(x, y, m, device), mg.cuda.synchronize,
             (mg.cuda.reset_peak_memory_stats, mg.cuda.max_memory_allocated) if gpu else None)]
    if torch is not None:
        runs.append(("PyTorch", lambda m: torch_step(torch, x_np, y_np, m, device),
                     torch.cuda.synchronize if gpu else (lambda: None),
                     (torch.cuda.reset_peak_memory_stats, torch.cuda.max_memory_allocated)
                     if gpu else None))
    results, peaks = {}, {}
    # fp16 overflow on the first AMP steps is expected (GradScaler backs off); silence NumPy's
    # warnings about it on the CPU
    with np.errstate(over="ignore", invalid="ignore"):
        for name, make, sync, _ in runs:       # every timing first ...
            for mixed in (False, True):
                try:
                    results[name, mixed] = throughput(cfg, make(mixed), sync)
                except Exception as e:  # report and go on with the other rows
                    results[name, mixed] = e
        for name, make, sync, mem in runs:     # ... then the memory passes
            for mixed in (False, True):
                if mem is not None and not isinstance(results[name, mixed], Exception):
                    peaks[name, mixed] = peak_bytes(make(mixed), sync, *mem)
    rows = []
    for name, _, _, _ in runs:
        base = None
        for mixed in (False, True):
            prec, res = ("AMP fp16" if mixed else "fp32"), results[name, mixed]
            if isinstance(res, Exception):
                rows.append((name, prec, "error", "-", f"{type(res).__name__}: {res}"[:80], "-"))
                continue
            ips, loss = res
            base = ips if not mixed else base
            rows.append((name, prec, f"{ips:.1f}", mib(peaks.get((name, mixed))), f"{loss:.4f}",
                         f"{ips / base:.2f}x" if base else "-"))
    conv = (f"cuDNN frontend, {cudnn_conv._state['layout'].upper()} operands"
            if cudnn_conv.available() else
            f"im2col + GEMM ({cudnn_conv.unavailable_reason()})") if gpu else "CPU"
    notes = (f"device: {device_name(gpu)}; ResNet-18 (small_input), batch {cfg.batch}, "
             f"{cfg.image}x{cfg.image} random images, SGD momentum 0.9, {cfg.steps} timed steps "
             f"after {cfg.warmup} untimed warm-up; peak memory from a separate pass after all "
             f"timings; minigrad convolutions: {conv}"
             + (f" (fp32 TF32: {cudnn_conv.allow_tf32()})" if gpu else "")
             + ("" if torch is not None else "; PyTorch not available")
             + ("; CPU SMOKE RUN (tiny sizes, timings meaningless)" if cfg.cpu_smoke else ""))
    headers = ["framework", "precision", "images/s", "peak MiB", "last loss", "vs fp32"]
    emit("amp_resnet: ResNet-18 training throughput", notes, markdown_table(headers, rows),
         cfg.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
