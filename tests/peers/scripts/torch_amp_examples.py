"""PyTorch's "Automatic Mixed Precision examples" page, with ``torch`` renamed ``minigrad``.

Three of the page's recipes on one small MLP and synthetic regression data (NumPy, fixed seed):
typical mixed precision training, gradient clipping after ``scaler.unscale_``, and gradient
accumulation over ``iters_to_accumulate`` batches, plus "working with multiple models, losses,
and optimizers" (one scaler for two). autocast runs on ``device_type`` ("cuda" when available,
else "cpu") in float16, as the page does. ``main()`` returns the per-step losses of each recipe.
"""

import numpy as np

import minigrad
import minigrad.nn as nn
import minigrad.optim as optim

device_type = "cuda" if minigrad.cuda.is_available() else "cpu"


class Net(nn.Module):
    def __init__(self, d_in=16, d_hidden=32, d_out=4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(nn.functional.relu(self.fc1(x)))


def make_data(n_batches=6, batch=16, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((16, 4)).astype(np.float32) / 4
    data = []
    for _ in range(n_batches):
        x = rng.standard_normal((batch, 16)).astype(np.float32)
        data.append((minigrad.tensor(x, device=device_type),
                     minigrad.tensor(np.tanh(x @ w), device=device_type)))
    return data


def typical(data, epochs=2):
    # Creates model and optimizer in default precision
    model = Net().to(device_type)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()

    # Creates a GradScaler once at the beginning of training.
    scaler = minigrad.amp.GradScaler(device_type)

    losses = []
    for epoch in range(epochs):
        for input, target in data:
            optimizer.zero_grad()

            # Runs the forward pass with autocasting.
            with minigrad.autocast(device_type=device_type, dtype=minigrad.float16):
                output = model(input)
                loss = loss_fn(output, target)

            # Scales loss.  Calls backward() on scaled loss to create scaled gradients.
            scaler.scale(loss).backward()

            # scaler.step() first unscales the gradients of the optimizer's assigned params.
            # If these gradients do not contain infs or NaNs, optimizer.step() is then called,
            # otherwise, optimizer.step() is skipped.
            scaler.step(optimizer)

            # Updates the scale for next iteration.
            scaler.update()
            losses.append(loss.item())
    return losses


def clipping(data, epochs=2, max_norm=0.5):
    model = Net().to(device_type)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    scaler = minigrad.amp.GradScaler(device_type)

    losses = []
    for epoch in range(epochs):
        for input, target in data:
            optimizer.zero_grad()
            with minigrad.autocast(device_type=device_type, dtype=minigrad.float16):
                output = model(input)
                loss = loss_fn(output, target)
            scaler.scale(loss).backward()

            # Unscales the gradients of optimizer's assigned params in-place
            scaler.unscale_(optimizer)

            # Since the gradients of optimizer's assigned params are unscaled, clips as usual:
            minigrad.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

            # optimizer's gradients are already unscaled, so scaler.step does not unscale them,
            # although it still skips optimizer.step() if the gradients contain infs or NaNs.
            scaler.step(optimizer)

            # Updates the scale for next iteration.
            scaler.update()
            losses.append(loss.item())
    return losses


def accumulation(data, epochs=2, iters_to_accumulate=2):
    model = Net().to(device_type)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    scaler = minigrad.amp.GradScaler(device_type)

    losses = []
    for epoch in range(epochs):
        for i, (input, target) in enumerate(data):
            with minigrad.autocast(device_type=device_type, dtype=minigrad.float16):
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
            losses.append(loss.item())
    return losses


def multiple(data, epochs=2):
    model0, model1 = Net().to(device_type), Net().to(device_type)
    optimizer0 = optim.SGD(model0.parameters(), lr=0.1)
    optimizer1 = optim.SGD(model1.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.MSELoss()
    scaler = minigrad.amp.GradScaler(device_type)

    losses = []
    for epoch in range(epochs):
        for input, target in data:
            optimizer0.zero_grad()
            optimizer1.zero_grad()
            with minigrad.autocast(device_type=device_type, dtype=minigrad.float16):
                output0 = model0(input)
                output1 = model1(input)
                loss0 = loss_fn(2 * output0 + 3 * output1, target)
                loss1 = loss_fn(3 * output0 - 5 * output1, target)

            # (retain_graph here is unrelated to amp, it's present because in this
            # example, both backward() calls share some sections of graph.)
            scaler.scale(loss0).backward(retain_graph=True)
            scaler.scale(loss1).backward()

            # You can choose which optimizers receive explicit unscaling, if you
            # want to inspect or modify the gradients of the params they own.
            scaler.unscale_(optimizer0)

            scaler.step(optimizer0)
            scaler.step(optimizer1)

            scaler.update()
            losses.append(loss0.item() + loss1.item())
    return losses


def main():
    minigrad.manual_seed(0)
    data = make_data()
    out = {"typical": typical(data), "clipping": clipping(data),
           "accumulation": accumulation(data), "multiple": multiple(data)}
    out["losses"] = out["typical"]
    return out


if __name__ == '__main__':
    main()
