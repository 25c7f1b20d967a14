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
from seed_text import seed_blocks

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


# ------------------------------------------------------------------ the seed's blocks, verbatim
# Every ```python block of seed 004 as written (tabs included), run in order in one namespace
# with only the framework name changed, plus two documented CPU substitutions (``_port``):
# ``.cuda()`` is dropped when CuPy sees no GPU, and the sizes (512 x 4096 x 4096, 50 batches)
# shrink to the CPU test budget. The gradient-accumulation sample runs in its own namespace
# with the names it assumes. ``test_blocks_match_the_seed`` checks the copies against the seed.
SEED_BLOCKS = [
    r"""import torch, time, gc

# Timing utilities
start_time = None

'''
While measuring time, CPU will send tasks to GPU, immediately reports time whereas those tasks on GPU may not yet have been picked up / completed. To avoid this, use torch.cuda.synchronised() and then measure time
'''
def start_timer():
    global start_time
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_max_memory_allocated()
    torch.cuda.synchronize()
    start_time = time.time()

def end_timer_and_print(local_msg):
    torch.cuda.synchronize()
    end_time = time.time()
    print("\n" + local_msg)
    print("Total execution time = {:.3f} sec".format(end_time - start_time))
    print("Max memory used by tensors = {} bytes".format(torch.cuda.max_memory_allocated()))
""",
    r"""def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers)).cuda()

batch_size = 512 # Try, for example, 128, 256, 513.
in_size = 4096
out_size = 4096
num_layers = 3
num_batches = 50
epochs = 3

device = 'cuda' if torch.cuda.is_available() else 'cpu'
torch.set_default_device(device)

# Creates data in default precision.
# The same data is used for both default and mixed precision trials below.
# Don't need to manually change inputs' ``dtype`` when enabling mixed precision.
data = [torch.randn(batch_size, in_size) for _ in range(num_batches)]
targets = [torch.randn(batch_size, out_size) for _ in range(num_batches)]

loss_fn = torch.nn.MSELoss().cuda()
""",
    r"""net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net.parameters(), lr=0.001)

start_timer()
for epoch in range(epochs):
    for input, target in zip(data, targets):
        output = net(input)
        loss = loss_fn(output, target)
        loss.backward()
        opt.step()
        opt.zero_grad() # set_to_none=True here can modestly improve performance
end_timer_and_print("Default precision:")
""",
    r"""for epoch in range(0):
    for input, target in zip(data, targets):
        # Runs the forward pass under ``autocast``.
        with torch.autocast(device_type=device, dtype=torch.float16):
            output = net(input)
            # output is float16 because linear layers ``autocast`` to float16.
            assert output.dtype is torch.float16

            loss = loss_fn(output, target)
            # loss is float32 because ``mse_loss`` layers ``autocast`` to float32.
            assert loss.dtype is torch.float32

        # Exits ``autocast`` before backward().
        # Backward passes under ``autocast`` are not recommended.
        # Backward ops run in the same ``dtype`` ``autocast`` chose for corresponding forward ops.
        loss.backward()
        opt.step()
        opt.zero_grad() # set_to_none=True here can modestly improve performance
""",
    r"""# Constructs a ``scaler`` once, at the beginning of the convergence run, using default arguments.
# The same ``GradScaler`` instance should be used for the entire convergence run.
# If you perform multiple convergence runs in the same script, each run should use
# a dedicated fresh ``GradScaler`` instance. ``GradScaler`` instances are lightweight.
scaler = torch.cuda.amp.GradScaler()

for epoch in range(0):
    for input, target in zip(data, targets):
        with torch.autocast(device_type=device, dtype=torch.float16):
            output = net(input)
            loss = loss_fn(output, target)

        # Scales loss. Calls ``backward()`` on scaled loss to create scaled gradients.
        scaler.scale(loss).backward()

        # ``scaler.step()`` first unscales the gradients of the optimizer's assigned parameters.
        # If these gradients do not contain ``inf``s or ``NaN``s, optimizer.step() is then called,
        # otherwise, optimizer.step() is skipped.
        scaler.step(opt)

        # Updates the scale for next iteration.
        scaler.update()

        opt.zero_grad() # set_to_none=True here can modestly improve performance
""",
    r"""use_amp = True

net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net.parameters(), lr=0.001)
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)

start_timer()
for epoch in range(epochs):
    for input, target in zip(data, targets):
        with torch.autocast(device_type=device, dtype=torch.float16, enabled=use_amp):
            output = net(input)
            loss = loss_fn(output, target)
        scaler.scale(loss).backward()

        ''' Optional Gradient clipping (on unscaled gradients)
        # Unscales the gradients of optimizer's assigned parameters in-place
        scaler.unscale_(opt)

        # Since the gradients of optimizer's assigned parameters are now unscaled, clips as usual.
        # You may use the same value for max_norm here as you would without gradient scaling.
        torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=0.1)
		'''

        scaler.step(opt)
        scaler.update()
        opt.zero_grad() # set_to_none=True here can modestly improve performance
end_timer_and_print("Mixed precision:")
""",
    r"""scaler = GradScaler()

for epoch in epochs:
    for i, (input, target) in enumerate(data):
        with autocast(device_type='cuda', dtype=torch.float16):
            output = model(input)
            loss = loss_fn(output, target)
            loss = loss / iters_to_accumulate

        # Accumulates scaled gradients.
        scaler.scale(loss).backward()

        if (i + 1) % iters_to_accumulate == 0:
            # may unscale_ here if desired (e.g., to allow clipping unscaled gradients)

            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""",
]

SEED_NAME = "004_2e83c992e08e13a2.txt"
_CPU_SIZES = {"batch_size = 512": "batch_size = 32", "in_size = 4096": "in_size = 64",
              "out_size = 4096": "out_size = 64", "num_batches = 50": "num_batches = 6"}


def _port(code):
    code = code.replace("import torch", "import minigrad as mg").replace("torch", "mg")
    if not mg.cuda.is_available():      # CUDA-only call, skipped on the CPU
        code = code.replace(".cuda()", "")
    for big, small in _CPU_SIZES.items():   # the recipe's sizes saturate a GPU, not a test CPU
        code = code.replace(big, small)
    return code


def _exec(index, ns):
    exec(compile(_port(SEED_BLOCKS[index]), f"seed004-block{index}", "exec"), ns)


def test_blocks_match_the_seed():
    assert seed_blocks(SEED_NAME) == SEED_BLOCKS


def _loss_of(ns, net):
    with mg.no_grad():
        return sum(float(ns["loss_fn"](net(x), t).item()) for x, t in zip(ns["data"],
                                                                          ns["targets"]))


def test_seed_blocks_run_in_order(capsys):
    ns = {"__name__": "seed004"}
    try:
        _exec(0, ns)
        _exec(1, ns)
        assert ns["device"] == ("cuda" if mg.cuda.is_available() else "cpu")
        assert ns["data"][0].shape == (32, 64) and len(ns["targets"]) == 6
        mg.manual_seed(0)
        untrained = ns["make_model"](64, 64, 3)
        mg.manual_seed(0)
        _exec(2, ns)                                     # default precision
        assert ns["output"].dtype == mg.float32
        assert _loss_of(ns, ns["net"]) < _loss_of(ns, untrained)
        _exec(3, ns)                                     # range(0): defines, runs nothing
        _exec(4, ns)
        assert ns["scaler"].get_scale() == 2.0 ** 16     # a fresh scaler, never stepped
        mg.manual_seed(0)
        _exec(5, ns)                                     # typical AMP training
        assert ns["output"].dtype == mg.float16 and ns["loss"].dtype == mg.float32
        assert np.isfinite(ns["scaler"].get_scale())
        assert _loss_of(ns, ns["net"]) < _loss_of(ns, untrained)
    finally:
        mg.set_default_device("cpu")
    out = capsys.readouterr().out
    assert "Default precision:" in out and "Mixed precision:" in out


def test_seed_gradient_accumulation_block():
    mg.manual_seed(0)
    model = make_model(in_size, out_size, num_layers)
    rng = np.random.default_rng(0)
    data = [(mg.tensor(rng.standard_normal((8, in_size)).astype(np.float32), device=device),
             mg.tensor(rng.standard_normal((8, out_size)).astype(np.float32), device=device))
            for _ in range(4)]
    ns = {"mg": mg, "GradScaler": mg.amp.GradScaler, "autocast": mg.autocast,
          "epochs": range(2), "data": data, "model": model, "iters_to_accumulate": 2,
          "optimizer": mg.optim.SGD(model.parameters(), lr=0.05), "loss_fn": mg.nn.MSELoss()}
    before = [p.numpy().copy() for p in model.parameters()]
    _exec(6, ns)
    assert ns["output"].dtype == mg.float16
    assert len(ns["scaler"].history) == 4            # one update per effective batch
    assert not any(np.array_equal(a, p.numpy()) for a, p in zip(before, model.parameters()))
