"""Seed 004 (PyTorch AMP recipe): every code sample with ``torch`` -> ``minigrad``, the MLP at
width 64 and a few batches. Asserted as the recipe does: under autocast the output is float16
(linear layers) and the mse loss float32; plus the loss falls, skipped steps change nothing,
``enabled=False`` turns autocast and the scaler into pass-throughs, and gradient accumulation
keeps the scale constant inside the window.
"""

import gc
import time

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn
import minigrad.optimizer
from minigrad import amp

batch_size = 32
in_size = 64
out_size = 64
num_layers = 3
num_batches = 6
epochs = 3
device = "cuda" if mg.cuda.is_available() else "cpu"

start_time = None


def start_timer():
    global start_time
    gc.collect()
    mg.cuda.reset_peak_memory_stats()
    mg.cuda.synchronize()
    start_time = time.time()


def end_timer_and_print(local_msg):
    mg.cuda.synchronize()
    end_time = time.time()
    print("\n" + local_msg)
    print(f"Total execution time = {end_time - start_time:.3f} sec")
    print(f"Max memory used by tensors = {mg.cuda.max_memory_allocated()} bytes")


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(mg.nn.Linear(in_size, in_size))
        layers.append(mg.nn.ReLU())
    layers.append(mg.nn.Linear(in_size, out_size))
    return mg.nn.Sequential(*tuple(layers)).to(device)


@pytest.fixture(scope="module")
def setup():
    mg.manual_seed(0)
    # Creates data in default precision; the same data is used for every trial below.
    rng = np.random.default_rng(0)
    w = rng.standard_normal((in_size, out_size)).astype(np.float32) / 8
    data = [mg.tensor(rng.standard_normal((batch_size, in_size)).astype(np.float32),
                      device=device) for _ in range(num_batches)]
    targets = [mg.tensor(np.tanh(x.numpy() @ w), device=device) for x in data]
    loss_fn = mg.nn.MSELoss()
    return data, targets, loss_fn


def _total(net, data, targets, loss_fn):
    with mg.no_grad():
        return sum(loss_fn(net(x), t).item() for x, t in zip(data, targets))


def _snap(net):
    return [p.numpy().copy() for p in net.parameters()]


def test_default_precision(setup):
    data, targets, loss_fn = setup
    mg.manual_seed(1)
    net = make_model(in_size, out_size, num_layers)
    opt = mg.optimizer.SGD(net.parameters(), lr=0.2)
    start = _total(net, data, targets, loss_fn)
    start_timer()
    for epoch in range(epochs):
        for input, target in zip(data, targets):
            output = net(input)
            loss = loss_fn(output, target)
            assert output.dtype == mg.float32 and loss.dtype == mg.float32
            loss.backward()
            opt.step()
            opt.zero_grad()
    end_timer_and_print("Default precision:")
    assert _total(net, data, targets, loss_fn) < 0.99 * start


def test_adding_autocast(setup):
    data, targets, loss_fn = setup
    mg.manual_seed(1)
    net = make_model(in_size, out_size, num_layers)
    opt = mg.optimizer.SGD(net.parameters(), lr=0.2)
    start = _total(net, data, targets, loss_fn)
    for epoch in range(epochs):       # the recipe writes range(0); we run it
        for input, target in zip(data, targets):
            # Runs the forward pass under autocast.
            with amp.autocast(dtype="float16"):
                output = net(input)
                # output is float16 because linear layers autocast to float16.
                assert output.dtype is mg.float16 or output.dtype == mg.float16
                loss = loss_fn(output, target)
                # loss is float32 because mse_loss layers autocast to float32.
                assert loss.dtype == mg.float32
            # Exits autocast before backward(); backward ops run in the forward's dtypes.
            loss.backward()
            for p in net.parameters():
                assert p.grad.dtype == mg.float32
            opt.step()
            opt.zero_grad()
    assert _total(net, data, targets, loss_fn) < 0.99 * start


def test_adding_grad_scaler(setup):
    data, targets, loss_fn = setup
    mg.manual_seed(1)
    net = make_model(in_size, out_size, num_layers)
    opt = mg.optimizer.SGD(net.parameters(), lr=0.2)
    start = _total(net, data, targets, loss_fn)
    # Constructs a scaler once, at the beginning of the convergence run.
    scaler = amp.GradScaler()
    for epoch in range(epochs):
        for input, target in zip(data, targets):
            with amp.autocast(dtype="float16"):
                output = net(input)
                loss = loss_fn(output, target)
            # Scales loss. Calls backward() on scaled loss to create scaled gradients.
            scaler.scale(loss).backward()
            before = _snap(net)
            # scaler.step() first unscales; skips optimizer.step() on inf/NaN.
            stepped = scaler.step(opt)
            after = _snap(net)
            assert (stepped is None) == all(np.array_equal(a, b) for a, b in zip(before, after))
            # Updates the scale for next iteration.
            scaler.update()
            opt.zero_grad()
    assert _total(net, data, targets, loss_fn) < 0.99 * start


@pytest.mark.parametrize("use_amp", [True, False])
def test_typical_amp_training(setup, use_amp):
    data, targets, loss_fn = setup
    mg.manual_seed(1)
    net = make_model(in_size, out_size, num_layers)
    opt = mg.optimizer.SGD(net.parameters(), lr=0.2)
    scaler = amp.GradScaler(enabled=use_amp)
    start = _total(net, data, targets, loss_fn)
    start_timer()
    for epoch in range(epochs):
        for input, target in zip(data, targets):
            with amp.autocast(dtype="float16", enabled=use_amp):
                output = net(input)
                loss = loss_fn(output, target)
            assert output.dtype == (mg.float16 if use_amp else mg.float32)
            scaled = scaler.scale(loss)
            assert (scaled is loss) == (not use_amp)
            scaled.backward()
            # Optional gradient clipping (on unscaled gradients)
            scaler.unscale_(opt)
            mg.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    end_timer_and_print("Mixed precision:")
    assert _total(net, data, targets, loss_fn) < 0.99 * start
    if not use_amp:
        assert scaler.get_scale() == 1.0 and scaler.skipped_steps == 0


def test_gradient_accumulation(setup):
    data, targets, loss_fn = setup
    mg.manual_seed(1)
    model = make_model(in_size, out_size, num_layers)
    optimizer = mg.optimizer.SGD(model.parameters(), lr=0.2)
    iters_to_accumulate = 2
    scaler = amp.GradScaler(growth_interval=1)
    start = _total(model, data, targets, loss_fn)
    for epoch in range(epochs):
        for i, (input, target) in enumerate(zip(data, targets)):
            with amp.autocast(dtype="float16"):
                output = model(input)
                loss = loss_fn(output, target)
                loss = loss / iters_to_accumulate
            scale = scaler.get_scale()
            # Accumulates scaled gradients.
            scaler.scale(loss).backward()
            if (i + 1) % iters_to_accumulate == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            else:
                assert scaler.get_scale() == scale   # constant inside the window
    assert len(scaler.history) == epochs * num_batches // iters_to_accumulate
    assert _total(model, data, targets, loss_fn) < 0.99 * start
