"""OneFlow ``nn.Graph`` intents, re-expressed for minigrad: every ``graph.config`` option a
OneFlow user sets is accepted (acting, or a documented no-op), the graph's dynamic scale never
falls below 1, ``StaticGradScaler`` keeps it fixed, and gradient accumulation over micro-batches
gives the full batch's update."""

import numpy as np
import pytest

import minigrad as flow
import minigrad.nn as nn
from minigrad import amp
from minigrad.optimizer import SGD


def _model():
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))


class TrainGraph(nn.Graph):
    def __init__(self, model, opt, scaler=None, amp_on=False):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        if amp_on:
            self.config.enable_amp(True)
        if scaler is not None:
            self.set_grad_scaler(scaler)

    def build(self, x, t):
        loss = ((self.model(x) - t) ** 2).mean()
        loss.backward()
        return loss


def test_config_options_are_accepted():
    model = _model()
    g = TrainGraph(model, SGD(model.parameters(), lr=0.1))
    cfg = g.config
    cfg.allow_fuse_add_to_output(True)
    cfg.allow_fuse_model_update_ops(True)
    cfg.allow_fuse_cast_scale(True)
    cfg.enable_zero(True, stage=2)
    cfg.enable_cudnn_conv_heuristic_search_algo(False)
    cfg.set_gradient_accumulation_steps(1)
    assert cfg.fuse_add_to_output and cfg.fuse_model_update_ops and cfg.fuse_cast_scale
    assert cfg.zero[0] == 2 and not cfg.cudnn_conv_heuristic_search_algo
    # the no-ops change nothing: the same step as a graph without them
    ref_model = _model()
    ref = TrainGraph(ref_model, SGD(ref_model.parameters(), lr=0.1))
    x, t = flow.randn(8, 4), flow.zeros(8, 1)
    np.testing.assert_array_equal(g(x, t).numpy(), ref(x, t).numpy())
    for p, q in zip(model.parameters(), ref_model.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    with pytest.raises(ValueError, match="stage"):
        cfg.enable_zero(True, stage=4)
    with pytest.raises(ValueError, match="int >= 1"):
        cfg.set_gradient_accumulation_steps(0)


def test_graph_scaler_never_falls_below_one():
    model = _model()
    scaler = amp.GradScaler(init_scale=4.0, growth_interval=1000)
    g = TrainGraph(model, SGD(model.parameters(), lr=0.1), scaler, amp_on=True)
    # a finite loss whose float16 gradients overflow at any scale >= 1 (an inf *loss* would
    # keep the scale: that is a model problem, not a scale problem)
    bad = flow.tensor(np.full((2, 4), 3000.0, np.float32))
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(6):
            g(bad, flow.zeros(2, 1))
    assert scaler.skipped_steps == 6 and scaler.get_scale() == 1.0  # 4, 2, 1, 1, 1, 1
    assert all(h["new_scale"] >= 1.0 for h in scaler.get_history())


def test_static_grad_scaler_keeps_the_scale():
    model = _model()
    scaler = amp.StaticGradScaler(128.0)
    g = TrainGraph(model, SGD(model.parameters(), lr=0.05), scaler, amp_on=True)
    x, t = flow.randn(16, 4), flow.zeros(16, 1)
    losses = [float(g(x, t).item()) for _ in range(5)]
    assert losses[-1] < losses[0] and scaler.get_scale() == 128.0
    with np.errstate(over="ignore", invalid="ignore"):
        g(flow.tensor(np.full((2, 4), np.inf, np.float32)), flow.zeros(2, 1))
    assert scaler.get_scale() == 128.0 and scaler.skipped_steps == 1


def test_gradient_accumulation_matches_the_full_batch():
    x, t = flow.randn(8, 4), flow.randn(8, 1)
    results = []
    for steps in (1, 4):
        model = _model()
        g = TrainGraph(model, SGD(model.parameters(), lr=0.1))
        g.config.set_gradient_accumulation_steps(steps)
        loss = g(x, t)
        results.append((float(loss.item()), [p.numpy().copy() for p in model.parameters()]))
    (l1, p1), (l4, p4) = results
    assert l4 == pytest.approx(l1, rel=1e-6)           # the mean of the micro-batch losses
    for a, b in zip(p1, p4):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    model = _model()
    g = TrainGraph(model, SGD(model.parameters(), lr=0.1))
    g.config.set_gradient_accumulation_steps(3)
    with pytest.raises(ValueError, match="divisible by 3"):
        g(x, t)


def test_gradient_accumulation_concatenates_batched_outputs():
    model = _model()

    class Predict(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.config.set_gradient_accumulation_steps(2)

        def build(self, x):
            return self.model(x)

    x = flow.randn(6, 4)
    np.testing.assert_allclose(Predict()(x).numpy(), model(x).numpy(), rtol=1e-6)
