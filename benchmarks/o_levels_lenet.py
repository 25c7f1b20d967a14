"""LeNet-5 on the scikit-learn digits trained at each optimisation level O0..O3.

    python benchmarks/o_levels_lenet.py [--epochs 15] [--batch-size 32] [--lr 0.02] [--seed 0]

Every level starts from the same initial weights (same seed), sees the same batches in the same
order and trains the same number of epochs with ``amp.build_train_network``; the table lists the
test accuracy, the final training loss, the skipped (overflowed) steps, the final loss scale and
the wall time per level.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import minigrad as mg
import minigrad.nn as nn
from minigrad import amp
from minigrad.data.datasets import digits
from minigrad.models import lenet5
from minigrad.optimizer import SGD

LEVELS = ("O0", "O1", "O2", "O3")
# Extra rows on request (--levels ... O3+ls): O3 with dynamic loss scaling added, to separate
# "pure float16 arithmetic" from "no loss scaling" when O3 trails the other levels.
EXTRA = {"O3+ls": ("O3", amp.DynamicLossScaleManager)}


def evaluate(model, images, labels, batch_size=256) -> float:
    """Top-1 accuracy (percent), evaluated in the model's own precision setting."""
    model.eval()
    correct = 0
    with mg.no_grad():
        for i in range(0, len(labels), batch_size):
            logits = model(mg.tensor(images[i:i + batch_size]))
            pred = logits.numpy().astype(np.float32).argmax(axis=1)
            correct += int((pred == labels[i:i + batch_size]).sum())
    model.train()
    return 100.0 * correct / len(labels)


def train_level(level, data, epochs, batch_size, lr, seed):
    (xtr, ytr), (xte, yte) = data
    mg.manual_seed(seed)
    model = lenet5()
    opt = SGD(model.parameters(), lr=lr, momentum=0.9)
    base, manager = EXTRA.get(level, (level, None))
    step = amp.build_train_network(model, opt, nn.CrossEntropyLoss(), level=base,
                                   loss_scale_manager=manager() if manager else None)
    order = np.random.default_rng(seed)
    skipped = total = 0
    t0 = time.perf_counter()
    for _ in range(epochs):
        perm = order.permutation(len(ytr))
        for i in range(0, len(perm) - batch_size + 1, batch_size):
            idx = perm[i:i + batch_size]
            loss = step(mg.tensor(xtr[idx]), mg.tensor(ytr[idx]))
            if isinstance(loss, tuple):          # (loss, overflow, scale) when loss-scaled
                loss = loss[0]
            skipped += bool(step.overflow)
            total += 1
    seconds = time.perf_counter() - t0
    acc = evaluate(model, xte, yte)
    return {"level": level, "acc": acc, "loss": float(loss.item()), "skipped": skipped,
            "steps": total, "scale": step.loss_scale, "seconds": seconds,
            "weights": str(model.fc1.weight.dtype)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--levels", nargs="*", default=list(LEVELS))
    args = ap.parse_args(argv)
    data = (digits("train"), digits("test"))
    # Dynamic loss scaling starts high on purpose (MindSpore: 2**24) and backs off after float16
    # overflows; NumPy would print a RuntimeWarning for each of those expected overflows.
    with np.errstate(over="ignore", invalid="ignore"):
        rows = [train_level(lv, data, args.epochs, args.batch_size, args.lr, args.seed)
                for lv in args.levels]
    print(f"LeNet-5 on digits: {args.epochs} epochs, batch {args.batch_size}, SGD lr {args.lr} "
          f"momentum 0.9, seed {args.seed}")
    print(f"{'level':<6}{'weights':<9}{'test acc %':>11}{'last loss':>11}{'skipped':>9}"
          f"{'scale':>12}{'time s':>8}")
    for r in rows:
        print(f"{r['level']:<6}{r['weights']:<9}{r['acc']:>11.2f}{r['loss']:>11.4f}"
              f"{r['skipped']:>5}/{r['steps']:<3}{r['scale']:>12g}{r['seconds']:>8.1f}")
    return rows


if __name__ == "__main__":
    main()
