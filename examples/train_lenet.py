"""The main training job: LeNet-5 on the scikit-learn digits with AMP, checkpoints and resume.

    python examples/train_lenet.py                 # AMP float16, cuda if available
    python examples/train_lenet.py --no-amp --epochs 3
    python examples/train_lenet.py --resume        # continue from runs/lenet/checkpoint.safetensors
    mpiexec -n 2 python examples/train_lenet.py --distributed   # data-parallel, 2 ranks

``--help`` lists the flags. The training step is MegEngine style::

    gm = GradManager().attach(model.parameters())
    with amp.autocast(dtype=...):
        with gm:
            loss = F.cross_entropy(model(x), y)
            scaler.backward(gm, loss)          # scale, backward, unscale, update the scale
    opt.step().clear_grad()                    # an overflowed step has no grads: no change

After every epoch a checkpoint (model, optimizer, GradScaler, epoch, RNG and loader state,
history) is written atomically to ``<out>/checkpoint.safetensors``; ``--resume`` continues from
it and reaches bit-for-bit the weights of an uninterrupted run: the shuffle order depends only on
(seed, epoch) and everything else that evolves is in the checkpoint.

``mpiexec -n N python examples/train_lenet.py --distributed`` trains data-parallel: each rank
reads its ``DistributedSampler`` shard with ``--batch-size / N`` images per step (the global
batch stays ``--batch-size``), gradients are averaged by ``dist.make_allreduce_cb``, and rank 0
alone shows progress, writes the checkpoint and the plots; every rank resumes from it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

# Under mpiexec several ranks share this machine's cores: give each rank its share of BLAS
# threads before NumPy starts its pool, or the ranks' spinning BLAS threads fight for the cores
# (on 2 cores, 2 ranks with 2 threads each train ~10x slower than with 1).
_local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
if _local > 1:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(max(1, (os.cpu_count() or 1) // _local)))

import numpy as np  # noqa: E402  (after the BLAS thread settings above)

import minigrad as mg  # noqa: E402
import minigrad.functional as F  # noqa: E402
from minigrad import amp  # noqa: E402
from minigrad.autodiff import GradManager, no_grad  # noqa: E402
from minigrad.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402
from minigrad.data.datasets import digits  # noqa: E402
from minigrad.models import lenet5  # noqa: E402
from minigrad.optimizer import SGD  # noqa: E402
from minigrad.optimizer.lr_scheduler import CosineAnnealingLR  # noqa: E402
from minigrad.serialization import load, save  # noqa: E402

__all__ = ["main", "build_parser", "CHECKPOINT"]

CHECKPOINT = "checkpoint.safetensors"
DEFAULT_EPOCHS = 10


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface of the job."""
    p = argparse.ArgumentParser(
        prog="train_lenet.py",
        description="Train LeNet-5 on the scikit-learn digits (32x32) with minigrad.")
    p.add_argument("--device", default=None,
                   help="cpu, cuda or cuda:N (default: cuda when a GPU is available, else cpu)")
    p.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS,
                   help=f"total number of epochs (default {DEFAULT_EPOCHS})")
    p.add_argument("--batch-size", type=int, default=32, help="batch size (default 32)")
    p.add_argument("--lr", type=float, default=0.02, help="SGD learning rate (default 0.02)")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    p.add_argument("--seed", type=int, default=0, help="seed of init and shuffling (default 0)")
    p.add_argument("--no-amp", action="store_true", help="train in float32, no autocast")
    p.add_argument("--bf16", action="store_true",
                   help="autocast to bfloat16 instead of float16 (no loss scaling needed)")
    p.add_argument("--out", default=os.path.join("runs", "lenet"),
                   help="directory for the checkpoint and curves.png (default runs/lenet)")
    p.add_argument("--resume", action="store_true",
                   help="continue from <out>/checkpoint.safetensors")
    p.add_argument("--limit", type=int, default=None,
                   help="use only the first N training and test images (quick runs, tests)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--stop-after", type=int, default=None, metavar="N",
                   help="stop after epoch N as if interrupted (resume later with --resume)")
    p.add_argument("--distributed", action="store_true",
                   help="data-parallel over the ranks of `mpiexec -n N` (needs the "
                        "'distributed' extra); --batch-size is the global batch")
    return p


def _progress(iterable, enabled: bool, **kw):
    if enabled:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            print('train_lenet.py: tqdm is not installed (pip install "minigrad[examples]"); '
                  "showing no progress bar", file=sys.stderr)
        else:
            return tqdm(iterable, **kw)
    return None


def _plot(history: dict, path: str) -> str | None:
    try:
        from matplotlib.figure import Figure  # no pyplot: leaves the global backend alone
    except ImportError:
        print('train_lenet.py: matplotlib is not installed (pip install "minigrad[examples]"); '
              "skipping curves.png", file=sys.stderr)
        return None
    epochs = np.arange(1, len(history["loss"]) + 1)
    fig = Figure(figsize=(9, 3.5))
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(epochs, history["loss"], marker="o")
    ax1.set(title="training loss", xlabel="epoch", ylabel="cross entropy")
    ax2.plot(epochs, history["train_acc"], marker="o", label="train")
    ax2.plot(epochs, history["test_acc"], marker="o", label="test")
    ax2.set(title="accuracy", xlabel="epoch", ylabel="accuracy", ylim=(0, 1))
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)  # Figure.savefig uses the Agg canvas for PNG
    return path


def _evaluate(model, loader, autocast_ctx) -> float:
    correct = 0
    total = 0
    model.eval()
    with no_grad(), autocast_ctx():
        for x, y in loader:
            correct += int((F.argmax(model(x), axis=1) == y).sum().item())
            total += y.shape[0]
    model.train()
    return correct / max(total, 1)


def main(argv=None) -> dict:
    """Run the job; ``argv`` defaults to ``sys.argv[1:]``.

    Returns:
        A dict with ``test_accuracy`` (last epoch), ``train_loss``, ``wall_time`` (seconds spent
        training in this call), ``skipped_steps``, ``epochs``, ``history``, ``checkpoint``,
        ``curves``, ``device`` and the trained ``model``.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.batch_size < 1 or (args.limit is not None and args.limit < 1) or args.epochs < 0:
        parser.error("--batch-size and --limit must be >= 1 and --epochs >= 0")
    dist = None
    rank, world, own_group = 0, 1, False
    if args.distributed:
        from minigrad import distributed as dist  # needs mpi4py: only when asked for

        own_group = not dist.is_initialized()
        if own_group:
            dist.init_process_group()
        rank, world = dist.get_rank(), dist.get_world_size()
        if args.batch_size % world:
            parser.error(f"--batch-size {args.batch_size} is the global batch: it must be a "
                         f"multiple of the {world} ranks")
    try:
        return _run(args, dist, rank, world)
    finally:
        if own_group:
            dist.destroy_process_group()


def _device(device, dist) -> str:
    """The run's device: ``--device``, else a rank's own GPU with NCCL (MPI reduces host
    buffers, so its ranks train on the CPU), else the GPU when CuPy sees one."""
    if device is None and dist is not None:
        device = f"cuda:{dist.get_local_rank()}" if dist.get_backend() == "nccl" else "cpu"
    device = device or ("cuda" if mg.cuda.is_available() else "cpu")
    return "cuda:0" if device == "cuda" else device


def _digits(limit):
    """The digits splits, standardised with the training set's statistics (LeNet's default
    init trains far more reliably on zero-mean, unit-variance inputs than on raw pixels)."""
    x_train, y_train = digits("train")
    x_test, y_test = digits("test")
    mean, std = float(x_train.mean()), float(x_train.std())
    x_train = (x_train - mean) / std
    x_test = (x_test - mean) / std
    if limit is not None:
        x_train, y_train = x_train[:limit], y_train[:limit]
        x_test, y_test = x_test[:limit], y_test[:limit]
    return x_train, y_train, x_test, y_test


def _resume(ckpt_path, device, config, lead, model, opt, sched, scaler, loader):
    """Load the checkpoint into the run's objects: ``(history, epoch)``, or None without one."""
    if not os.path.exists(ckpt_path):
        if lead:
            print(f"train_lenet.py: no checkpoint at {ckpt_path}; starting from scratch",
                  file=sys.stderr)
        return None
    state = load(ckpt_path, device=device)
    changed = {k: (state["config"].get(k), v) for k, v in config.items()
               if state["config"].get(k) != v}
    if changed and lead:
        print(f"train_lenet.py: warning: resuming with changed settings {changed} "
              "(the run will not match an uninterrupted one)", file=sys.stderr)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    if scaler is not None and state["scaler"]:
        scaler.load_state_dict(state["scaler"])
    mg.set_rng_state(state["rng"])
    loader.load_state_dict(state["loader"])
    return state["history"], int(state["epoch"])


@contextlib.contextmanager
def _step_context(fp16: bool, autocast_ctx):
    # float16 overflow is expected under loss scaling (the scaler detects it and skips the
    # step), so NumPy's overflow warnings would only be noise; float32 runs keep them.
    with np.errstate(over="ignore", invalid="ignore") if fp16 else contextlib.nullcontext():
        with autocast_ctx():
            yield


def _train_epoch(loader, bar, model, gm, opt, scaler, step_ctx, t0):
    """One pass over ``loader``: ``(loss sum, correct, seen)`` over this rank's shard."""
    fp16 = scaler is not None and scaler.is_enabled()
    loss_sum = 0.0
    correct = seen = 0
    for step, (x, y) in enumerate(bar if bar is not None else loader):
        with step_ctx():
            with gm:
                logits = model(x)
                loss = F.cross_entropy(logits, y)
                if scaler is not None:
                    scaler.backward(gm, loss)
                else:
                    gm.backward(loss)
        opt.step().clear_grad()
        n = y.shape[0]
        loss_sum += float(loss.item()) * n
        correct += int((F.argmax(logits.detach(), axis=1) == y).sum().item())
        seen += n
        if bar is not None and (step % 5 == 0 or step == len(loader) - 1):
            bar.set_postfix({  # a dict keeps this order (keywords would be sorted)
                "loss": f"{loss_sum / seen:.4f}", "acc": f"{correct / seen:.3f}",
                "img/s": f"{seen / (time.perf_counter() - t0):.0f}",
                "scale": f"{scaler.scale_factor:g}" if fp16 else "off"})
    if bar is not None:
        bar.close()
    return loss_sum, correct, seen


def _run(args, dist, rank: int, world: int) -> dict:
    lead = rank == 0  # the rank that prints, plots and writes checkpoints
    log = print if lead else (lambda *a, **k: None)
    device = _device(args.device, dist)
    use_amp = not args.no_amp
    amp_dtype = "bfloat16" if args.bf16 else "float16"
    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, CHECKPOINT)

    mg.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = _digits(args.limit)
    model = lenet5().to(device)
    opt = SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    # Annealing to zero makes the final accuracy a property of the run, not of its last batches.
    sched = CosineAnnealingLR(opt, T_max=args.epochs)
    callbacks = None
    if dist is not None:
        dist.bcast_list_(list(model.parameters()))  # the same start on every rank
        callbacks = [dist.make_allreduce_cb("mean")]
    gm = GradManager().attach(model.parameters(), callbacks=callbacks)
    # bfloat16 has float32's exponent range: gradients do not underflow, so no loss scaling.
    scaler = amp.GradScaler(enabled=amp_dtype == "float16") if use_amp else None
    train_set = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(train_set, seed=args.seed) if dist is not None else None
    loader = DataLoader(train_set, batch_size=args.batch_size // world, shuffle=True,
                        seed=args.seed, device=device, sampler=sampler)
    test_loader = DataLoader(TensorDataset(x_test, y_test), batch_size=512, device=device)
    history = {"loss": [], "train_acc": [], "test_acc": []}
    config = {"batch_size": args.batch_size, "seed": args.seed, "limit": args.limit,
              "amp": use_amp, "dtype": amp_dtype if use_amp else "float32"}
    if world > 1:
        config["world_size"] = world

    start_epoch = 0
    if args.resume:
        resumed = _resume(ckpt_path, device, config, lead, model, opt, sched, scaler, loader)
        if resumed is not None:
            history, start_epoch = resumed
            log(f"resumed from {ckpt_path} after epoch {start_epoch}")

    autocast_ctx = (lambda: amp.autocast(dtype=amp_dtype)) if use_amp else contextlib.nullcontext
    show = not args.no_progress and lead
    fp16 = scaler is not None and scaler.is_enabled()
    wall = 0.0
    for epoch in range(start_epoch, args.epochs):
        loader.set_epoch(epoch)
        bar = _progress(loader, show, desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch",
                        leave=False)
        t0 = time.perf_counter()
        loss_sum, correct, seen = _train_epoch(loader, bar, model, gm, opt, scaler,
                                               lambda: _step_context(fp16, autocast_ctx), t0)
        if dist is not None:  # epoch statistics over all ranks' shards
            totals = mg.tensor(np.array([loss_sum, correct, seen], np.float64))
            loss_sum, correct, seen = dist.all_reduce(totals).numpy().tolist()
        sched.step()
        elapsed = time.perf_counter() - t0
        wall += elapsed
        test_acc = _evaluate(model, test_loader, autocast_ctx)
        history["loss"].append(loss_sum / max(seen, 1))
        history["train_acc"].append(correct / max(seen, 1))
        history["test_acc"].append(test_acc)
        stop = args.stop_after is not None and epoch + 1 >= args.stop_after
        log(f"epoch {epoch + 1}/{args.epochs}: loss {history['loss'][-1]:.4f}, train acc "
              f"{history['train_acc'][-1]:.2%}, test acc {test_acc:.2%} "
              f"({seen / elapsed:.0f} images/s"
              + (f", loss scale {scaler.scale_factor:g})" if fp16 else ")"))
        if lead:
            save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                  "scheduler": sched.state_dict(), "scaler": scaler.state_dict() if scaler
                  is not None else {}, "epoch": epoch + 1, "rng": mg.get_rng_state(),
                  "loader": loader.state_dict(), "history": history, "config": config}, ckpt_path)
        if dist is not None:
            dist.barrier()  # nobody resumes from a checkpoint still being written
        if stop:
            break

    return _summary(args, history, scaler, wall, device, ckpt_path, model, lead, log)


def _summary(args, history, scaler, wall, device, ckpt_path, model, lead, log) -> dict:
    """Plot the curves (the lead rank), print the last line and return the run's results."""
    fp16 = scaler is not None and scaler.is_enabled()
    curves = (_plot(history, os.path.join(args.out, "curves.png"))
              if history["loss"] and lead else None)
    if fp16 and scaler.history and curves is not None:  # the loss scale over steps, skips marked
        amp.plot_scaler(scaler, os.path.join(args.out, "scale.png"))
    skipped = scaler.skipped_steps if scaler is not None else 0
    final_acc = history["test_acc"][-1] if history["test_acc"] else float("nan")
    log(f"done: test accuracy {final_acc:.2%} after {len(history['test_acc'])} epochs "
          f"({wall:.1f} s of training in this run on {device}); skipped steps: {skipped}")
    return {"test_accuracy": final_acc,
            "train_loss": history["loss"][-1] if history["loss"] else float("nan"),
            "wall_time": wall, "skipped_steps": skipped, "epochs": len(history["loss"]),
            "history": history, "checkpoint": ckpt_path, "curves": curves, "device": device,
            "model": model}



if __name__ == "__main__":  # pragma: no cover
    main()
