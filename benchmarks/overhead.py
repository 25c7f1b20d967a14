"""Per-op Python overhead: microseconds per op on 16x16 float32 tensors.

Prints one table: a recorded forward op, and forward plus backward, for minigrad (autocast off
and on) and, when PyTorch is installed, PyTorch in the same process on the same data.

    python benchmarks/overhead.py [--ops 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import median_seconds  # noqa: E402  (sibling script, not a package)


def _chain_minigrad(x, w, n):
    y = x
    for _ in range(n):
        y = y * w + w  # two recorded ops per iteration
    return y


def bench_minigrad(n, repeats, region=contextlib.nullcontext):
    """(forward, forward+backward) us/op; ``region()`` wraps each run, backward included."""
    import minigrad as mg

    rng = np.random.default_rng(0)
    x = mg.tensor(rng.standard_normal((16, 16)).astype(np.float32))
    w = mg.tensor(rng.standard_normal((16, 16)).astype(np.float32) * 0.01, requires_grad=True)

    def fwd():
        with region():
            _chain_minigrad(x, w, n)

    def fwd_bwd():
        with region():
            y = _chain_minigrad(x, w, n)
            y.sum().backward()
        w.grad = None

    return (median_seconds(fwd, repeats, warmup=1) / (2 * n) * 1e6,
            median_seconds(fwd_bwd, repeats) / (2 * n) * 1e6)


def bench_torch(n, repeats):
    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((16, 16)).astype(np.float32))
    w = torch.tensor(rng.standard_normal((16, 16)).astype(np.float32) * 0.01, requires_grad=True)

    def fwd():
        _chain_minigrad(x, w, n)

    def fwd_bwd():
        y = _chain_minigrad(x, w, n)
        y.sum().backward()
        w.grad = None

    return (median_seconds(fwd, repeats, warmup=1) / (2 * n) * 1e6,
            median_seconds(fwd_bwd, repeats) / (2 * n) * 1e6)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=2000, help="iterations of the (mul, add) chain")
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)

    rows = [("minigrad", *bench_minigrad(args.ops, args.repeats))]
    try:
        from minigrad import amp

        rows.append(("minigrad autocast fp16",
                     *bench_minigrad(args.ops, args.repeats, amp.autocast)))
    except (ImportError, AttributeError):  # amp not built
        pass
    try:
        rows.append(("pytorch", *bench_torch(args.ops, args.repeats)))
    except ImportError:
        pass
    ref = rows[-1] if rows[-1][0] == "pytorch" else None
    print(f"{'framework':<24}{'fwd us/op':>12}{'fwd+bwd us/op':>16}{'fwd vs torch':>14}")
    for name, f, fb in rows:
        ratio = f"{f / ref[1]:.2f}x" if ref else "-"
        print(f"{name:<24}{f:>12.2f}{fb:>16.2f}{ratio:>14}")
    return rows


if __name__ == "__main__":
    main()
