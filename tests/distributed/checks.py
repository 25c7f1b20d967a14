"""Data-parallel checks, run by ``tests/test_distributed.py`` as one job:

    mpiexec -n 2 python tests/distributed/checks.py OUT_DIR [--backend mpi|nccl]

Every check runs on every rank; rank 0 prints ``PASS <name>`` after each. A failing check raises,
which aborts the whole job (``dist.init_process_group`` installs that), so the launcher sees a
nonzero exit status and the error instead of a hang.
"""

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np

import minigrad as mg
import minigrad.functional as F
from minigrad import amp, nn
from minigrad import distributed as dist
from minigrad.amp import _ranks
from minigrad.autodiff import GradManager
from minigrad.data import DistributedSampler
from minigrad.nn.parallel import DistributedDataParallel
from minigrad.optimizer import SGD, Adam
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from train_lenet import main as train_main  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--backend", default="mpi")
ARGS = parser.parse_args()
dist.init_process_group(ARGS.backend)
RANK, WORLD = dist.get_rank(), dist.get_world_size()
DEVICE = f"cuda:{dist.get_local_rank()}" if ARGS.backend == "nccl" else "cpu"
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def flat(params) -> np.ndarray:
    return np.concatenate([p.numpy().astype(np.float64).ravel() for p in params])


def same_on_all_ranks(arr: np.ndarray, what: str) -> None:
    rows = dist.all_gather(mg.tensor(np.ascontiguousarray(arr), device=DEVICE)).numpy()
    for r in range(1, WORLD):
        assert rows[r].tobytes() == rows[0].tobytes(), f"{what}: rank {r} differs from rank 0"


def net(seed):
    mg.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(DEVICE)


def batches(steps=10, size=8, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((size, 16)).astype(np.float32), rng.integers(0, 4, size))
            for _ in range(steps)]


def t(a):
    return mg.tensor(a, device=DEVICE)


@check
def collectives():
    x = t(np.array([1.0 + RANK, -RANK], np.float32))
    assert dist.all_reduce(x) is x
    n = WORLD * (WORLD + 1) / 2
    np.testing.assert_array_equal(x.numpy(), [n, -(n - WORLD)])
    for op, want in (("mean", n / WORLD), ("max", WORLD), ("min", 1)):
        y = dist.all_reduce(t(np.array([1.0 + RANK], np.float32)), op=op)
        assert y.numpy()[0] == want, (op, y.numpy())
    h = dist.all_reduce(t(np.full(3, RANK + 1, np.float16)))
    assert h.dtype == np.float16 and h.numpy().tolist() == [n] * 3
    b = dist.broadcast(t(np.full(2, RANK, np.int64)), src=WORLD - 1)
    assert b.numpy().tolist() == [WORLD - 1] * 2
    g = dist.all_gather(t(np.array([RANK, 10 * RANK], np.int32)))
    assert g.shape == (WORLD, 2) and g.numpy()[:, 1].tolist() == [10 * r for r in range(WORLD)]


def train_pair(opt_cls, style):
    """10 steps of 1-process training on the global batch vs data-parallel on shards."""
    ref = net(0)
    model = net(RANK)  # differs per rank: DDP / bcast_list_ must make it rank 0's
    make = (lambda ps: opt_cls(ps, lr=0.1, momentum=0.9)) if opt_cls is SGD else \
        (lambda ps: opt_cls(ps, lr=1e-2))
    opt_ref, opt = make(ref.parameters()), make(model.parameters())
    if style == "ddp":
        wrapped = DistributedDataParallel(model, bucket_cap_mb=0.001)  # several buckets
    else:
        dist.bcast_list_(list(model.parameters()))
        gm = GradManager().attach(model.parameters(),
                                  callbacks=[dist.make_allreduce_cb("mean", bucket_cap_mb=0.001)])
    for x, y in batches():
        F.cross_entropy(ref(t(x)), t(y)).backward()
        opt_ref.step()
        opt_ref.zero_grad()
        xs, ys = t(x[RANK::WORLD]), t(y[RANK::WORLD])
        if style == "ddp":
            F.cross_entropy(wrapped(xs), ys).backward()
        else:
            with gm:
                gm.backward(F.cross_entropy(model(xs), ys))
        opt.step()
        opt.zero_grad()
        same_on_all_ranks(flat(model.parameters()), f"{opt_cls.__name__}/{style} params")
    a, b = flat(model.parameters()), flat(ref.parameters())
    rel = np.linalg.norm(a - b) / np.linalg.norm(b)
    assert rel < 1e-5, f"{opt_cls.__name__}/{style}: rel. diff {rel:.2e} to 1-process training"


@check
def ddp_equals_one_process_sgd():
    train_pair(SGD, "ddp")


@check
def ddp_equals_one_process_adam():
    train_pair(Adam, "ddp")


@check
def allreduce_cb_equals_one_process():
    train_pair(SGD, "gm")
    train_pair(Adam, "gm")


@check
def no_sync_accumulates():
    ref, model = net(0), net(0)
    ddp = DistributedDataParallel(model)
    (x1, y1), (x2, y2) = batches(2)
    for x, y in ((x1, y1), (x2, y2)):
        F.cross_entropy(ref(t(x)), t(y)).backward()
    before = ddp.comm_stats.collectives
    with ddp.no_sync():
        F.cross_entropy(ddp(t(x1[RANK::WORLD])), t(y1[RANK::WORLD])).backward()
    assert ddp.comm_stats.collectives == before, "no_sync() communicated"
    F.cross_entropy(ddp(t(x2[RANK::WORLD])), t(y2[RANK::WORLD])).backward()
    a = flat([p.grad for p in model.parameters()])
    b = flat([p.grad for p in ref.parameters()])
    assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max(), "no_sync accumulation differs"


@check
def all_reduce_of_different_shapes_raises_everywhere():
    x = t(np.ones(3 + RANK, np.float32))
    try:
        dist.all_reduce(x)
    except ValueError as e:
        assert "differ across ranks" in str(e) and "rank 1: shape (4,)" in str(e), str(e)
    else:
        assert WORLD == 1, "all_reduce of different shapes did not raise"  # one rank: equal
    y = t(np.ones(2, np.float32))
    dist.all_reduce(y)                        # the group still works afterwards
    np.testing.assert_array_equal(y.numpy(), [WORLD, WORLD])


@check
def unused_parameters_keep_no_gradient():
    # A layer no rank uses keeps grad None (AdamW's decay must not move it); a layer only the
    # last rank uses gets that rank's gradient averaged over the ranks on every rank.
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            mg.manual_seed(0)
            self.used, self.never, self.last = nn.Linear(4, 3), nn.Linear(4, 3), nn.Linear(4, 3)

        def forward(self, x):
            y = self.used(x)
            return y + self.last(x) if RANK == WORLD - 1 else y

    model = Two().to(DEVICE)
    ddp = DistributedDataParallel(model)
    ddp(t(np.ones((2, 4), np.float32))).sum().backward()
    assert model.never.weight.grad is None and model.never.bias.grad is None
    assert model.used.weight.grad is not None
    g = model.last.bias.grad
    assert g is not None, "a parameter used on one rank must get a gradient on every rank"
    np.testing.assert_allclose(g.numpy(), np.full(3, 2.0 / WORLD), rtol=1e-6)


@check
def kept_gradients_are_never_overwritten():
    model = net(0)
    ddp = DistributedDataParallel(model)
    kept = []
    for x, y in batches(3):
        F.cross_entropy(ddp(t(x[RANK::WORLD])), t(y[RANK::WORLD])).backward()
        kept.append([(p.grad, p.grad.numpy().copy()) for p in model.parameters()])
        for p in model.parameters():
            p.grad = None
    for step in kept:  # the reducer reuses a bucket's buffer only once no gradient views it
        for g, value in step:
            np.testing.assert_array_equal(g.numpy(), value)


def opt_state(opt):
    return [np.array(v.get() if hasattr(v, "get") else v)
            for st in opt.state_dict()["state"].values() for v in st.values()
            if hasattr(v, "shape")]


@check
def inf_on_one_rank_skips_everywhere():
    # An inf loss on one rank keeps the scale everywhere (a model problem, not a scale problem);
    # an inf gradient under a finite loss halves it everywhere.
    cases = ((SGD, "torch", "loss", 2.0 ** 10), (Adam, "megengine", "loss", 2.0 ** 10),
             (SGD, "torch", "grad", 2.0 ** 9))
    for opt_cls, api, where, expected_scale in cases:
        model = net(0)
        opt = opt_cls(model.parameters(), lr=0.1) if opt_cls is Adam else \
            opt_cls(model.parameters(), lr=0.1, momentum=0.9)
        gm = GradManager().attach(model.parameters())
        scaler = amp.GradScaler(init_scale=2.0 ** 10)
        for step, (x, y) in enumerate(batches(2)):
            poison = step == 1 and RANK == WORLD - 1
            bad_loss = float("inf") if poison and where == "loss" else 1.0
            if step == 1:
                params, state = flat(model.parameters()), opt_state(opt)
            with amp.autocast(), np.errstate(invalid="ignore", over="ignore"):
                if api == "torch":
                    loss = F.cross_entropy(model(t(x)), t(y)) * bad_loss
                    scaler.scale(loss).backward()
                    if poison and where == "grad":
                        next(iter(model.parameters())).grad.data[...] = np.inf
                    scaler.step(opt)
                    scaler.update()
                else:
                    with gm:
                        loss = F.cross_entropy(model(t(x)), t(y)) * bad_loss
                        scaler.backward(gm, loss)
                    opt.step()
            opt.zero_grad()
        assert scaler.get_scale() == expected_scale, f"{api}/{where}: {scaler.get_scale()}"
        assert _ranks.overflow_ranks() == [WORLD - 1], _ranks.overflow_ranks()
        np.testing.assert_array_equal(flat(model.parameters()), params)
        for a, b in zip(opt_state(opt), state):
            np.testing.assert_array_equal(a, b)
        same_on_all_ranks(np.array([scaler.get_scale()]), "scale")


@check
def debug_overflow_names_the_rank():
    model = net(0)
    x = np.full((2, 16), 1e30 if RANK == WORLD - 1 else 1.0, np.float32)
    with amp.autocast(), warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")  # the "warn" report itself, and NumPy's overflow note
        with amp.debug_overflow("warn") as dbg:
            model(t(x))
    if RANK == WORLD - 1:
        assert dbg.report is not None and dbg.report.rank == RANK
        assert f"on rank {RANK}" in dbg.report.where()
    else:
        assert dbg.report is None


@check
def compressed_reduction_overflow_is_caught():
    model = net(0)
    ddp = DistributedDataParallel(model, grad_dtype="float16")
    opt = SGD(model.parameters(), lr=0.1)
    scaler = amp.GradScaler(init_scale=2.0 ** 16)
    x, y = batches(1)[0]
    before = flat(model.parameters())
    # scaled gradients beyond float16's 65504: fine in float32, inf in the compressed sum
    scaler.scale(ddp(t(x[RANK::WORLD])).sum() * 1e3).backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0 ** 15
    np.testing.assert_array_equal(flat(model.parameters()), before)


@check
def sampler_shards_are_disjoint():
    for n, drop_last in ((24, False), (23, False), (23, True)):
        seen = []
        for epoch in (0, 1):
            s = DistributedSampler(range(n), seed=3, drop_last=drop_last)
            s.set_epoch(epoch)
            mine = np.asarray(s.indices(), np.int64)
            rows = dist.all_gather(mg.tensor(mine)).numpy()
            allidx = rows.T.ravel()  # position p of the global order is rows[p % W][p // W]
            assert len(mine) == len(s)
            if drop_last:
                assert len(set(allidx.tolist())) == len(allidx) == n // WORLD * WORLD
            else:
                assert set(allidx.tolist()) == set(range(n))
                if n % WORLD == 0:
                    assert len(allidx) == n
            seen.append(allidx)
        assert seen[0].tolist() != seen[1].tolist(), "same order in two epochs"


@check
def shape_mismatch_raises_clearly():
    bad = nn.Linear(4, 2 if RANK == 0 else 3).to(DEVICE)
    try:
        DistributedDataParallel(bad)
    except ValueError as e:
        assert "rank 1" in str(e) and "(2, 4)" in str(e) and "(3, 4)" in str(e), str(e)
    else:
        assert WORLD == 1, "no error for different parameter shapes"


@check
def train_job_resume_is_bit_identical():
    out = ARGS.out
    common = ["--distributed", "--limit", "256", "--batch-size", "32", "--epochs", "2",
              "--lr", "0.1", "--no-progress"]
    full = train_main(common + ["--out", os.path.join(out, "full")])
    train_main(common + ["--out", os.path.join(out, "part"), "--stop-after", "1"])
    resumed = train_main(common + ["--out", os.path.join(out, "part"), "--resume"])
    a, b = flat(full["model"].parameters()), flat(resumed["model"].parameters())
    assert a.tobytes() == b.tobytes(), "resumed run differs from the uninterrupted one"
    same_on_all_ranks(a, "trained LeNet")
    # same accuracy as one process with the same global batch (float32: no fp16 rounding)
    f32 = ["--limit", "256", "--batch-size", "32", "--epochs", "2", "--lr", "0.1",
           "--no-progress", "--no-amp"]
    many = train_main(f32 + ["--distributed", "--out", os.path.join(out, "dist32")])
    if RANK == 0:  # the 1-process reference (deterministic: once is enough)
        one = train_main(f32 + ["--out", os.path.join(out, "single")])
        a, b = flat(many["model"].parameters()), flat(one["model"].parameters())
        rel = np.linalg.norm(a - b) / np.linalg.norm(b)
        assert rel < 1e-4, f"LeNet weights: rel. diff {rel:.2e} to one process"
        assert abs(many["test_accuracy"] - one["test_accuracy"]) < 0.02
        assert one["test_accuracy"] > 0.3, "the comparison needs a run that learns something"


for fn in CHECKS:
    fn()
    dist.barrier()
    if RANK == 0:
        print(f"PASS {fn.__name__}", flush=True)
dist.destroy_process_group()
