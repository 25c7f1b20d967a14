"""Seed 003 (OneFlow AMP guide): every code sample with only ``oneflow`` -> ``minigrad``
(``flow.optim.SGD``, ``flow.amp.GradScaler``, ``flow.nn.Graph`` as written).

The guide's labels are ``flow.ones(128, 1, dtype=flow.int64)`` for ``(128, 10)`` logits: integer
``(N, 1)`` targets are read as ``(N,)`` class indices, as OneFlow does (a float ``(N, 1)`` target
stays a shape error, asserted below). The guide runs 100 iterations; the tests run 20-30 and check
that the loss falls and that the gradient scaler's settings are the ones the guide passes (the
graph gives the scaler OneFlow's floor of 1).
"""

import pytest

import minigrad as flow
import minigrad.amp  # noqa: F401 - makes flow.amp available
import minigrad.nn as nn


def _setup():
    DEVICE = "cuda" if flow.cuda.is_available() else "cpu"
    print("Using {} device".format(DEVICE))

    model = nn.Sequential(
        nn.Linear(256, 128),
        nn.ReLU(),
        nn.Linear(128, 10)
    )
    model = model.to(DEVICE)
    model.train()

    loss_fn = nn.CrossEntropyLoss().to(DEVICE)
    optimizer = flow.optim.SGD(model.parameters(), lr=1e-3)
    return DEVICE, model, loss_fn, optimizer


def test_enable_amp_and_grad_scaler():
    flow.manual_seed(0)
    DEVICE, model, loss_fn, optimizer = _setup()
    losses = []

    class CustomGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.loss_fn = loss_fn
            self.add_optimizer(optimizer)
            self.config.enable_amp(True)    # 开启 AMP 模式

            grad_scaler = flow.amp.GradScaler(
                init_scale=2**12,
                growth_factor=2.0,
                backoff_factor=0.5,
                growth_interval=1000,
            )
            self.set_grad_scaler(grad_scaler)

        def build(self, x, y):
            y_pred = self.model(x)
            loss = self.loss_fn(y_pred, y)
            loss.backward()
            losses.append(float(loss.item()))
            return y_pred

    graph_model = CustomGraph()

    w0 = model[0].weight.numpy().copy()
    for _ in range(30):
        x = flow.randn(128, 256).to(DEVICE)
        y = flow.ones(128, 1, dtype=flow.int64).to(DEVICE)

        y_pred = graph_model(x, y)

    assert y_pred.dtype == flow.float16 and y_pred.shape == (128, 10)
    assert model[0].weight.dtype == flow.float32 and (model[0].weight.numpy() != w0).any()
    assert losses[-1] < losses[0] - 0.2
    scaler = graph_model.grad_scaler
    assert scaler.get_scale() == 2 ** 12 and scaler.get_growth_interval() == 1000
    assert scaler.skipped_steps == 0


def test_guide_label_shape_means_class_indices():
    device, model, loss_fn, _ = _setup()
    x = flow.randn(128, 256, device=device)
    logits = model(x)
    same = loss_fn(logits, flow.ones(128, 1, dtype=flow.int64, device=device)).item()
    assert same == loss_fn(logits, flow.ones(128, dtype=flow.int64, device=device)).item()
    with pytest.raises(Exception, match="target"):  # floats would be probabilities: no guess
        loss_fn(logits, flow.ones(128, 1, device=device))


def test_enable_amp_without_scaler():
    flow.manual_seed(0)
    DEVICE, model, loss_fn, optimizer = _setup()

    class CustomGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.loss_fn = loss_fn
            self.add_optimizer(optimizer)
            self.config.enable_amp(True)    # 开启 AMP 模式

        def build(self, x, y):
            y_pred = self.model(x)
            loss = self.loss_fn(y_pred, y)
            loss.backward()
            return y_pred

    graph_model = CustomGraph()
    x0 = flow.randn(128, 256).to(DEVICE)
    y0 = flow.ones(128, dtype=flow.int64).to(DEVICE)
    before = float(loss_fn(model(x0), y0).item())
    for _ in range(20):
        x = flow.randn(128, 256).to(DEVICE)
        y = flow.ones(128, dtype=flow.int64).to(DEVICE)

        graph_model(x, y)
    assert graph_model(x, y).dtype == flow.float16
    assert float(loss_fn(model(x0), y0).item()) < before - 0.1
