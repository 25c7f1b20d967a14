"""Seed 002 (PyTorch "AMP examples"): every code sample with ``torch`` -> ``minigrad`` and a small
MLP. The samples use GradScaler with and without autocast; asserted: training makes the loss
fall, skipped steps change nothing, clipping sees unscaled gradients, the scaled gradient penalty
equals the unscaled one, and several losses/optimizers share one scaler with one update().
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import amp, nn
from minigrad.amp import GradScaler
from minigrad.autodiff import grad
from minigrad.optimizer import SGD
from seed_text import seed_blocks

IN, OUT = 8, 4


def _data(n_batches=4, batch=16, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((IN, OUT)).astype(np.float32)
    out = []
    for _ in range(n_batches):
        x = rng.standard_normal((batch, IN)).astype(np.float32)
        out.append((mg.tensor(x), mg.tensor(np.tanh(x @ w))))
    return out


def _model(seed=0):
    mg.manual_seed(seed)
    return nn.Sequential(nn.Linear(IN, 32), nn.ReLU(), nn.Linear(32, OUT))


def _mse(output, target):
    d = output.astype(mg.float32) - target
    return (d * d).mean()


def _epoch_loss(model, data):
    with mg.no_grad():
        return float(sum(_mse(model(x), t).item() for x, t in data))


class _SkipCheck:
    """Asserts a step the scaler skipped left every parameter unchanged."""

    def __init__(self, model):
        self.model = model
        self.before = None

    def snap(self):
        self.before = [p.numpy().copy() for p in self.model.parameters()]

    def check(self, stepped):
        same = all(np.array_equal(a, p.numpy())
                   for a, p in zip(self.before, self.model.parameters()))
        assert same == (stepped is None)


@pytest.mark.parametrize("use_autocast", [False, True])
def test_typical_use(use_autocast):
    data, model = _data(), _model()
    loss_fn = nn.MSELoss()
    optimizer = SGD(model.parameters(), lr=0.05)
    start = _epoch_loss(model, data)
    check = _SkipCheck(model)
    # Creates a GradScaler once at the beginning of training.
    scaler = GradScaler()
    for epoch in range(5):
        for input, target in data:
            optimizer.zero_grad()
            with amp.autocast(enabled=use_autocast):
                output = model(input)
                loss = loss_fn(output, target)
            assert output.dtype == (mg.float16 if use_autocast else mg.float32)
            assert loss.dtype == mg.float32
            # Scales the loss, and calls backward() on the scaled loss to create scaled gradients.
            scaler.scale(loss).backward()
            # scaler.step() first unscales the gradients of the optimizer's assigned params.
            check.snap()
            check.check(scaler.step(optimizer))
            # Updates the scale for next iteration.
            scaler.update()
    assert _epoch_loss(model, data) < 0.7 * start
    if not use_autocast:
        assert scaler.skipped_steps == 0


def test_gradient_clipping_on_unscaled_gradients():
    data, model = _data(), _model()
    loss_fn = nn.MSELoss()
    optimizer = SGD(model.parameters(), lr=0.05)
    max_norm = 0.05
    scaler = GradScaler()
    start = _epoch_loss(model, data)
    for epoch in range(5):
        for input, target in data:
            optimizer.zero_grad()
            with amp.autocast():
                output = model(input)
                loss = loss_fn(output, target)
            scaler.scale(loss).backward()
            # Unscales the gradients of optimizer's assigned params in-place
            scaler.unscale_(optimizer)
            # Since the gradients of optimizer's assigned params are unscaled, clips as usual:
            nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            norm = np.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum())
                               for p in model.parameters() if p.grad is not None))
            assert norm <= max_norm * (1 + 1e-4) or not np.isfinite(norm)
            # optimizer's gradients are already unscaled, so scaler.step does not unscale them
            scaler.step(optimizer)
            scaler.update()
    assert _epoch_loss(model, data) < start
    with pytest.raises(RuntimeError, match="update"):   # unscale_ twice between steps
        scaler.scale(loss_fn(model(data[0][0]), data[0][1])).backward()
        scaler.unscale_(optimizer)
        scaler.unscale_(optimizer)


def _penalty_run(scaled: bool):
    data, model = _data(), _model(3)
    loss_fn = nn.MSELoss()
    optimizer = SGD(model.parameters(), lr=0.05)
    scaler = GradScaler(init_scale=2.0 ** 10)
    losses = []
    for epoch in range(3):
        for input, target in data:
            optimizer.zero_grad()
            output = model(input)
            loss = loss_fn(output, target)
            params = list(model.parameters())
            if scaled:
                # Scales the loss for the out-of-place backward pass -> scaled grad_params
                scaled_grad_params = grad(scaler.scale(loss), params, create_graph=True)
                # Unscales grad_params before computing the penalty (ordinary division)
                inv_scale = 1. / scaler.get_scale()
                grad_params = [p * inv_scale for p in scaled_grad_params]
            else:
                grad_params = grad(loss, params, create_graph=True)
            # Computes the penalty term and adds it to the loss
            grad_norm = 0
            for g in grad_params:
                grad_norm += g.pow(2).sum()
            grad_norm = grad_norm.sqrt()
            loss = loss + grad_norm
            losses.append(loss.item())
            if scaled:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
    return model, losses


def test_gradient_penalty_scaled_equals_unscaled():
    m_ref, l_ref = _penalty_run(scaled=False)
    m_amp, l_amp = _penalty_run(scaled=True)
    assert l_ref[-1] < l_ref[0]
    np.testing.assert_allclose(l_amp, l_ref, rtol=1e-4)
    for a, b in zip(m_ref.parameters(), m_amp.parameters()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-6)


def test_multiple_losses_and_optimizers():
    data = _data()
    model0, model1 = _model(0), _model(1)
    loss_fn = nn.MSELoss()
    optimizer0 = SGD(model0.parameters(), lr=0.02)
    optimizer1 = SGD(model1.parameters(), lr=0.02)
    scaler = GradScaler()
    c0, c1 = _SkipCheck(model0), _SkipCheck(model1)

    def total():
        with mg.no_grad():
            return sum(loss_fn(2 * model0(x) + 3 * model1(x), t).item()
                       + loss_fn(3 * model0(x) - 5 * model1(x), t).item() for x, t in data)

    start = total()
    for epoch in range(4):
        for input, target in data:
            optimizer0.zero_grad()
            optimizer1.zero_grad()
            with amp.autocast():
                output0 = model0(input)
                output1 = model1(input)
                loss0 = loss_fn(2 * output0 + 3 * output1, target)
                loss1 = loss_fn(3 * output0 - 5 * output1, target)
            scaler.scale(loss0).backward(retain_graph=True)
            scaler.scale(loss1).backward()
            # You can choose which optimizers receive explicit unscaling
            scaler.unscale_(optimizer0)
            c0.snap()
            c1.snap()
            c0.check(scaler.step(optimizer0))
            c1.check(scaler.step(optimizer1))
            scaler.update()
    assert total() < start


# ------------------------------------------------------------------ the seed's blocks, verbatim
# Every ```python block of seed 002 as written (tabs included), run with only the framework
# name changed (``_port``). The names the samples assume (model, data, optimizer, ...) are
# provided by ``_namespace``; ``epochs`` is an iterable, as the samples loop ``for epoch in
# epochs``. ``test_blocks_match_the_seed`` checks the copies against the seed when it exists.
SEED_BLOCKS = [
    r"""# Creates a GradScaler once at the beginning of training.
# 在训练开始时实例化一个GradScaler
scaler = GradScaler()

for epoch in epochs:
    for input, target in data:
        optimizer.zero_grad()
        output = model(input)
        loss = loss_fn(output, target)

        # Scales the loss, and calls backward() on the scaled loss to create scaled gradients.
		# 缩放loss,并调用backward(),基于缩放后的loss获取缩放后梯度
        scaler.scale(loss).backward()

        # scaler.step() first unscales the gradients of the optimizer's assigned params.
		# scaler.step()首先逆缩放优化器参数组的梯度
        # If these gradients do not contain infs or NaNs, optimizer.step() is then called,
		# 如果这些梯度不包含inf或者NaN,就会正常调用optimizer.step()
        # otherwise, optimizer.step() is skipped.
		# 否则将跳过optimizer.step()
        scaler.step(optimizer)

        # Updates the scale for next iteration.
		# 更新下个迭代周期的缩放
        scaler.update()
""",
    r"""scaler = GradScaler()

for epoch in epochs:
    for input, target in data:
        optimizer.zero_grad()
        output = model(input)
        loss = loss_fn(output, target)
        scaler.scale(loss).backward()

        # Unscales the gradients of optimizer's assigned params in-place
		# 原地逆缩放优化器参数的梯度
        scaler.unscale_(optimizer)

        # Since the gradients of optimizer's assigned params are unscaled, clips as usual:
		# 由于梯度已经被逆缩放,正常截断
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

        # optimizer's gradients are already unscaled, so scaler.step does not unscale them,
		# 优化器梯度已经被逆缩放过,因此scaler.step不会再次逆缩放
        # although it still skips optimizer.step() if the gradients contain infs or NaNs.
		# 尽管如此,如果梯度包含inf或者NaN,仍旧会跳过optimizer.step()
        scaler.step(optimizer)

        # Updates the scale for next iteration.
        scaler.update()
""",
    r"""for epoch in epochs:
    for input, target in data:
        optimizer.zero_grad()
        output = model(input)
        loss = loss_fn(output, target)

        # Creates some gradients out-of-place
        grad_params = torch.autograd.grad(loss, model.parameters(), create_graph=True)

        # Computes the penalty term and adds it to the loss
        grad_norm = 0
        for grad in grad_params:
            grad_norm += grad.pow(2).sum()
        grad_norm = grad_norm.sqrt()
        loss = loss + grad_norm

        loss.backward()
        optimizer.step()
""",
    r"""
for epoch in epochs:
    for input, target in data:
        optimizer.zero_grad()
        output = model(input)
        loss = loss_fn(output, target)

        # Scales the loss for the out-of-place backward pass, resulting in scaled grad_params
        scaled_grad_params = torch.autograd.grad(scaler.scale(loss), model.parameters(), create_graph=True)

        # Unscales grad_params before computing the penalty.  grad_params are not owned
        # by any optimizer, so ordinary division is used instead of scaler.unscale_:
        inv_scale = 1./scaler.get_scale()
        grad_params = [p*inv_scale for p in scaled_grad_params]

        # Computes the penalty term and adds it to the loss
        grad_norm = 0
        for grad in grad_params:
            grad_norm += grad.pow(2).sum()
        grad_norm = grad_norm.sqrt()
        loss = loss + grad_norm

        # Applies scaling to the backward call as usual.  Accumulates leaf gradients that are correctly scaled.
        scaler.scale(loss).backward()

        # step() and update() proceed as usual.
        scaler.step(optimizer)
        scaler.update()
""",
    r"""scaler = torch.cuda.amp.GradScaler()

for epoch in epochs:
    for input, target in data:
        optimizer0.zero_grad()
        optimizer1.zero_grad()
        output0 = model0(input)
        output1 = model1(input)
        loss0 = loss_fn(2 * output0 + 3 * output1, target)
        loss1 = loss_fn(3 * output0 - 5 * output1, target)

        scaler.scale(loss0).backward(retain_graph=True)
        scaler.scale(loss1).backward()

        # You can choose which optimizers receive explicit unscaling, if you
        # want to inspect or modify the gradients of the params they own.
        scaler.unscale_(optimizer0)

        scaler.step(optimizer0)
        scaler.step(optimizer1)

        scaler.update()
""",
]

SEED_NAME = "002_73132a1b9011cdbc.txt"


def _port(code):
    """The only change: the framework's name."""
    return code.replace("import torch", "import minigrad as mg").replace("torch", "mg")


def test_blocks_match_the_seed():
    assert seed_blocks(SEED_NAME) == SEED_BLOCKS


def _class_data(n_batches=4, batch=16, classes=OUT, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((IN, classes)).astype(np.float32)
    out = []
    for _ in range(n_batches):
        x = rng.standard_normal((batch, IN)).astype(np.float32)
        out.append((mg.tensor(x), mg.tensor((x @ w).argmax(1).astype(np.int64))))
    return out


def _namespace(loss="mse"):
    data = _data() if loss == "mse" else _class_data()
    loss_fn = nn.MSELoss() if loss == "mse" else nn.CrossEntropyLoss()
    model, model0, model1 = _model(0), _model(1), _model(2)
    ns = {"mg": mg, "GradScaler": mg.cuda.amp.GradScaler, "epochs": range(4), "data": data,
          "loss_fn": loss_fn, "model": model, "optimizer": mg.optim.SGD(model.parameters(),
                                                                        lr=0.05),
          "max_norm": 1.0, "model0": model0, "model1": model1,
          "optimizer0": mg.optim.SGD(model0.parameters(), lr=0.02),
          "optimizer1": mg.optim.SGD(model1.parameters(), lr=0.02),
          "scaler": mg.cuda.amp.GradScaler()}   # the scaled penalty sample uses one it has
    return ns


def _total(ns, models=("model",)):
    with mg.no_grad():
        return sum(float(ns["loss_fn"](ns[m](x), t).item()) for m in models
                   for x, t in ns["data"])


@pytest.mark.parametrize("index", [0, 1, 2, 3], ids=["typical", "clipping", "penalty",
                                                     "scaled_penalty"])
def test_seed_block_runs_and_trains(index):
    ns = _namespace()
    start = _total(ns)
    exec(compile(_port(SEED_BLOCKS[index]), f"seed002-block{index}", "exec"), ns)
    assert _total(ns) < 0.9 * start
    assert all(np.isfinite(p.numpy()).all() for p in ns["model"].parameters())
    if "scaler" in ns:
        assert ns["scaler"].get_scale() > 0


def test_seed_block_multiple_losses_and_optimizers():
    ns = _namespace()
    before = [p.numpy().copy() for m in ("model0", "model1") for p in ns[m].parameters()]
    exec(compile(_port(SEED_BLOCKS[4]), "seed002-block4", "exec"), ns)
    after = [p.numpy() for m in ("model0", "model1") for p in ns[m].parameters()]
    assert not any(np.array_equal(a, b) for a, b in zip(before, after))
    assert len(ns["scaler"].history) == len(ns["data"]) * len(ns["epochs"])


@pytest.mark.parametrize("index", [2, 3], ids=["penalty", "scaled_penalty"])
def test_seed_gradient_penalty_with_cross_entropy(index):
    ns = _namespace("cross_entropy")
    start = _total(ns)
    exec(compile(_port(SEED_BLOCKS[index]), f"seed002-block{index}", "exec"), ns)
    assert _total(ns) < start
