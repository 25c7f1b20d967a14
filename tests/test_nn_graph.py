"""OneFlow-style ``nn.Graph``: build under autocast, scaled ``loss.backward()``, step, skip."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
from minigrad import amp
from minigrad.optimizer import SGD, lr_scheduler


def _model(seed=0):
    mg.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    return (mg.tensor(rng.standard_normal((10, 6)).astype(np.float32)),
            mg.tensor(rng.integers(0, 3, 10)))


class TrainGraph(nn.Graph):
    def __init__(self, model, opt, amp_on=True, scaler=None, dtype=mg.float16, sched=None):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(opt, lr_sch=sched)
        self.config.enable_amp(amp_on, dtype=dtype)
        if scaler is not None:
            self.set_grad_scaler(scaler)

    def build(self, x, y):
        out = self.model(x)
        loss = self.loss_fn(out, y)
        loss.backward()
        return out, loss


def test_graph_step_equals_manual_scaled_step():
    x, y = _batch()
    model = _model()
    g = TrainGraph(model, SGD(model.parameters(), lr=0.1, momentum=0.9),
                   scaler=amp.GradScaler(init_scale=2 ** 12, growth_factor=2.0,
                                         backoff_factor=0.5, growth_interval=1000))
    ref = _model()
    opt = SGD(ref.parameters(), lr=0.1, momentum=0.9)
    scaler = amp.GradScaler(init_scale=2 ** 12, growth_interval=1000)
    for _ in range(3):
        out, loss = g(x, y)
        with amp.autocast():
            ref_loss = nn.CrossEntropyLoss()(ref(x), y)
        scaler.scale(ref_loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        assert out.dtype == mg.float16 and loss.dtype == mg.float32
        assert float(loss.item()) == float(ref_loss.item())
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
        assert p.grad is None                       # zeroed after the step
    # the returned tensors are ordinary Tensors again
    assert type(out) is mg.Tensor and type(loss) is mg.Tensor


def test_graph_backward_is_scaled():
    """Inside build, after loss.backward(), the gradients are the scaled ones (unscaling
    happens after build); the parameters then get the unscaled update."""
    x, y = _batch()
    model = _model()
    captured = []

    class G(TrainGraph):
        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            captured.append([p.grad.numpy().copy() for p in self.model.parameters()])
            return loss

    scaler = amp.GradScaler(init_scale=1024.0)
    g = G(model, SGD(model.parameters(), lr=0.0), scaler=scaler)
    g(x, y)
    ref = _model()
    with amp.autocast():
        loss = nn.CrossEntropyLoss()(ref(x), y)
    loss.backward()
    for gr, p in zip(captured[0], ref.parameters()):
        np.testing.assert_allclose(gr, 1024.0 * p.grad.numpy(), rtol=2e-2, atol=2.0)
    assert scaler.history[-1]["found_inf"] is False


def test_graph_overflow_skips_and_backs_off():
    x, y = _batch()
    model = _model()
    before = [p.numpy().copy() for p in model.parameters()]
    opt = SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = TrainGraph(model, opt, scaler=amp.GradScaler(init_scale=2.0 ** 40))
    with np.errstate(over="ignore", invalid="ignore"):
        g(x, y)
    assert g.grad_scaler.get_scale() == 2.0 ** 39 and g.grad_scaler.last_step_skipped
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)
    assert opt.state == {}


def test_static_scaler_and_plain_graph_match_numpy():
    # one SGD step on a linear model with MSE: w -= lr * 2/n * x^T (x w - t)
    rng = np.random.default_rng(3)
    xa = rng.standard_normal((5, 3)).astype(np.float32)
    ta = rng.standard_normal((5, 1)).astype(np.float32)
    lin = nn.Linear(3, 1, bias=False)
    w0 = lin.weight.numpy().copy()

    class G(nn.Graph):
        def __init__(self, scaler):
            super().__init__()
            self.lin = lin
            self.add_optimizer(SGD(lin.parameters(), lr=0.1))
            if scaler is not None:
                self.set_grad_scaler(scaler)

        def build(self, x, t):
            loss = ((self.lin(x) - t) ** 2).mean()
            loss.backward()
            return loss

    for scaler in (None, amp.StaticGradScaler(64.0)):
        lin.load_state_dict({"weight": w0})
        G(scaler)(mg.tensor(xa), mg.tensor(ta))
        grad = 2.0 / 5 * ((xa @ w0.T - ta).T @ xa)
        np.testing.assert_allclose(lin.weight.numpy(), w0 - 0.1 * grad, rtol=1e-5, atol=1e-6)


def test_eval_graph_bf16_attributes_and_repr():
    model = _model()

    class Eval(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.config.enable_amp(True, dtype="bfloat16")

        def build(self, x):
            return self.model(x)

    g = Eval()
    out = g(_batch()[0])
    assert out.dtype == mg.bfloat16 and not g.training and g.model is model
    r = repr(g)
    assert "Eval(" in r and "(model): Sequential" in r and "bfloat16" in r
    assert list(g.modules())[0] is model
    with pytest.raises(TypeError, match="optimizer"):
        g.add_optimizer(object())
    with pytest.raises(TypeError, match="GradScaler"):
        g.set_grad_scaler(object())


def test_lr_scheduler_state_dict_and_errors():
    x, y = _batch()
    model = _model()
    opt = SGD(model.parameters(), lr=0.1)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    g = TrainGraph(model, opt, scaler=amp.GradScaler(init_scale=8.0), sched=sched)
    g(x, y)
    g(x, y)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025)
    sd = g.state_dict()
    assert sd["grad_scaler"]["scale"] == 8.0 and "0.weight" in sd["modules"]["model"]
    g.load_state_dict(sd)
    assert g._signatures == {(((10, 6), "float32", "cpu"), ((10,), "int64", "cpu")): 2}

    class NoInit(nn.Graph):
        def __init__(self):
            self.model = model

    with pytest.raises(AttributeError, match="super"):
        NoInit()

    class NoBuild(nn.Graph):
        pass

    with pytest.raises(NotImplementedError, match="build"):
        NoBuild()(x)
    # a tensor made inside build and kept: its backward outside a graph call is the normal one
    kept = []

    class Keep(nn.Graph):
        def build(self, x):
            out = (model(x) ** 2).sum()
            kept.append(out)
            return out

    Keep()(x)
    kept[0].backward()
    assert model[0].weight.grad is not None
