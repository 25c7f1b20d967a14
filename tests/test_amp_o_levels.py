"""O-levels (``amp.build_train_network``), loss-scale managers, training cells, master weights."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
from minigrad import amp
from minigrad.optimizer import SGD, Adam

F16, F32 = mg.float16, mg.float32


def _net():
    mg.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))


def _data(n=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = (x[:, :3].argmax(1)).astype(np.int64)
    return mg.tensor(x), mg.tensor(y)


def _capture(net):
    acts = {}
    net[0].register_forward_hook(lambda m, a, o: acts.__setitem__("linear", str(o.dtype)))
    net[1].register_forward_hook(lambda m, a, o: acts.__setitem__("bn", str(o.dtype)))
    return acts


@pytest.mark.parametrize("level, linear_w, bn_w, act", [
    ("O0", F32, F32, "float32"),
    ("O1", F32, F32, "float16"),
    ("O2", F16, F32, "float16"),
    ("O3", F16, F16, "float16"),
])
def test_level_dtypes_and_training(level, linear_w, bn_w, act):
    net = _net()
    acts = _capture(net)
    opt = SGD(net.parameters(), lr=0.1, momentum=0.9)
    # a small initial scale so the first O1/O2 steps do not overflow (tested separately)
    mgr = amp.DynamicLossScaleManager(init_loss_scale=128) if level in ("O1", "O2") else None
    step = amp.build_train_network(net, opt, nn.CrossEntropyLoss(), level=level,
                                   loss_scale_manager=mgr)
    x, y = _data()
    # MindSpore: with loss scaling the cell returns (loss, overflow, scale), else the loss
    scaled = mgr is not None
    assert isinstance(step, nn.TrainOneStepWithLossScaleCell) and \
        isinstance(step, nn.TrainOneStepCell) != scaled
    outs = [step(x, y) for _ in range(8)]
    losses = [float((o[0] if scaled else o).item()) for o in outs]
    if scaled:
        assert str(outs[-1][1].dtype) == "bool" and not outs[-1][1].item()
        assert outs[-1][2].dtype == F32 and outs[-1][2].item() == step.loss_scale
    assert step.level == level
    assert net[0].weight.dtype == net[3].weight.dtype == linear_w
    assert net[1].weight.dtype == net[1].running_mean.dtype == bn_w
    assert acts == {"linear": act, "bn": act}
    assert not step.overflow and losses[-1] < 0.7 * losses[0]
    # optimizer state (momentum) is float32 at every level, on fp32 masters at O2/O3
    state = [st["momentum_buffer"] for st in step.optimizer.state.values()]
    assert len(state) == 6 and all(b.dtype == np.float32 for b in state)
    if linear_w == F16:
        masters = step.optimizer.master_params()
        assert all(m.dtype == F32 for m in masters)
        # the model holds exactly the rounded masters
        np.testing.assert_array_equal(net[0].weight.numpy(),
                                      masters[0].numpy().astype(np.float16))


def test_o2_first_step_overflows_and_is_skipped():
    net = _net()
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()
              if "num_batches" not in k}
    opt = SGD(net.parameters(), lr=0.1, momentum=0.9)
    step = amp.build_train_network(net, opt, nn.CrossEntropyLoss(), level="O2")
    assert step.loss_scale == 2.0 ** 24
    x, y = _data()
    with np.errstate(over="ignore", invalid="ignore"):
        step(x, y)        # 2**24 times the loss gradient is inf in float16
    assert step.overflow and step.loss_scale == 2.0 ** 23
    assert step.optimizer.state == {}
    for k, v in net.state_dict().items():
        if k in before and "running" not in k:
            np.testing.assert_array_equal(v.numpy().astype(np.float32),
                                          before[k].astype(np.float16).astype(np.float32))
    # masters keep the exact fp32 start values, not the fp16-rounded ones
    np.testing.assert_array_equal(step.optimizer.master_params()[0].numpy(),
                                  before["0.weight"])


def _forced_overflow_run(level, mgr):
    net = _net()
    opt = SGD(net.parameters(), lr=0.1, momentum=0.9)
    step = amp.build_train_network(net, opt, nn.CrossEntropyLoss(), level=level,
                                   loss_scale_manager=mgr)
    x, y = _data()
    step(x, y)
    w = net[0].weight.numpy().copy()
    state = {id(k): v["momentum_buffer"].copy() for k, v in step.optimizer.state.items()}
    bad = x.numpy().copy()
    bad[0, 0] = np.inf
    with np.errstate(over="ignore", invalid="ignore"):
        out = step(mg.tensor(bad), y)
    assert bool(out[1].item()) and out[2].item() == step.loss_scale
    return step, w, state, net


@pytest.mark.parametrize("level, mgr", [
    ("O2", amp.DynamicLossScaleManager(init_loss_scale=64)),
    ("O0", amp.FixedLossScaleManager(128.0, drop_overflow_update=True)),
])
def test_forced_overflow_skips_update(level, mgr):
    step, w, state, net = _forced_overflow_run(level, mgr)
    assert step.overflow
    np.testing.assert_array_equal(net[0].weight.numpy(), w)
    for k, v in step.optimizer.state.items():
        np.testing.assert_array_equal(v["momentum_buffer"], state[id(k)])
    expected = 64.0 if level == "O2" else 128.0   # the loss itself is inf: the scale is kept
    assert step.loss_scale == expected


@pytest.mark.parametrize("level, mgr", [
    ("O3", None), ("O0", amp.FixedLossScaleManager(128.0, drop_overflow_update=False))])
def test_no_drop_refuses_to_write_nonfinite_weights(level, mgr):
    # MindSpore applies an overflowed update when nothing drops it (TrainOneStepCell at O0/O3,
    # FixedLossScaleManager(drop_overflow_update=False)); minigrad raises, params unchanged
    net = _net()
    opt = SGD(net.parameters(), lr=0.1, momentum=0.9)
    step = amp.build_train_network(net, opt, nn.CrossEntropyLoss(), level=level,
                                   loss_scale_manager=mgr)
    assert isinstance(step, nn.TrainOneStepCell)
    x, y = _data()
    loss = step(x, y)
    assert loss.shape == () and not step.overflow
    w = net[0].weight.numpy().copy()
    bad = x.numpy().copy()
    bad[0, 0] = np.inf
    with np.errstate(over="ignore", invalid="ignore"), \
            pytest.raises(FloatingPointError, match="drop_overflow_update=True"):
        step(mg.tensor(bad), y)
    assert step.overflow
    np.testing.assert_array_equal(net[0].weight.numpy(), w)
    assert float(step(x, y).item()) < float(loss.item())   # training goes on afterwards


def test_dynamic_manager_rule():
    mgr = amp.DynamicLossScaleManager(init_loss_scale=4, scale_factor=2, scale_window=3)
    seen = []
    for overflow in [True, True, True, False, False, False, False, False, False, True]:
        mgr.update_loss_scale(overflow)
        seen.append(mgr.get_loss_scale())
    # max(scale / 2, 1) on overflow; * 2 after 3 clean steps in a row
    assert seen == [2, 1, 1, 1, 1, 2, 2, 2, 4, 2]
    assert mgr.get_drop_overflow_update()
    fixed = amp.FixedLossScaleManager(loss_scale=128.0, drop_overflow_update=False)
    fixed.update_loss_scale(True)
    assert fixed.get_loss_scale() == 128.0 and not fixed.get_drop_overflow_update()
    with pytest.raises(ValueError):
        amp.DynamicLossScaleManager(scale_factor=1)


def test_per_call_scaling_sens_and_withlosscell():
    net = _net()
    opt = SGD(net.parameters(), lr=0.1)
    cell = nn.WithLossCell(net, nn.CrossEntropyLoss())
    step = amp.build_train_network(cell, opt, level="O2")
    x, y = _data()
    # the per-call sens 1.0 is this step's scale: no overflow although the manager is at 2**24
    loss, overflow, scale = step(x, y, mg.tensor([1.0]))
    assert not step.overflow and step.loss_scale == 2.0 ** 24 and scale.item() == 1.0
    assert loss.dtype == F32 and cell.compute_dtype == F32 and net.compute_dtype == F16
    assert step.loss_scale_manager.scaler.state_dict()["_growth_tracker"] == 1


def test_train_one_step_cell_static_sense_and_fp16_model():
    net = nn.Linear(3, 1)
    net.half()
    opt = SGD(net.parameters(), lr=0.1)
    cell = nn.TrainOneStepWithLossScaleCell(
        nn.WithLossCell(net, lambda out, t: ((out.astype(F32) - t) ** 2).mean()), opt,
        scale_sense=mg.tensor([256.0]))
    assert isinstance(cell.optimizer, amp.master_weights.__globals__["MasterWeightOptimizer"])
    assert cell.loss_scale == 256.0
    x, t = mg.ones(4, 3), mg.zeros(4, 1)
    losses = [float(cell(x, t)[0].item()) for _ in range(5)]
    assert losses[-1] < losses[0] and not cell.overflow
    assert "FixedLossScaleManager" in repr(cell)


def test_network_returning_loss_and_levels():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 1)

        def forward(self, x, t):
            return ((self.fc(x) - t) ** 2).mean()

    m = Model()
    step = amp.build_train_network(m, SGD(m.parameters(), lr=0.1), level="auto")
    assert step.level == "O1"                      # auto on the CPU
    with pytest.raises(TypeError, match="must return the loss"):
        amp.build_train_network(nn.Linear(2, 1), SGD(m.parameters(), lr=0.1))(mg.ones(3, 2))
    with pytest.raises(ValueError, match="level must be"):
        amp.build_train_network(m, SGD(m.parameters(), lr=0.1), level="O4")


# ------------------------------------------------------------------------- master weights
def test_master_weights_keep_small_updates():
    p_plain = mg.Parameter(np.ones(4, np.float16))
    p_master = mg.Parameter(np.ones(4, np.float16))
    plain = SGD([p_plain], lr=1e-4)
    master = amp.master_weights(SGD([p_master], lr=1e-4))
    for _ in range(10):
        for p, opt in ((p_plain, plain), (p_master, master)):
            p.grad = mg.ones(4, dtype=F16)
            v = p._version
            opt.step()
            opt.zero_grad()
            assert p._version == v + 1
    # each update (1e-4) is below half an fp16 ulp at 1.0 (4.9e-4): lost without masters
    assert np.all(p_plain.numpy() == 1.0)
    np.testing.assert_allclose(master.master_params()[0].numpy(), 1.0 - 1e-3, rtol=1e-6)
    assert np.all(p_master.numpy() == np.float16(1.0 - 1e-3))


def test_master_weights_step_takes_pytorchs_closure():
    p = mg.Parameter(np.ones(2, np.float16))
    master = amp.master_weights(SGD([p], lr=0.25))

    def closure():
        master.zero_grad()
        loss = (p.astype("float32") * mg.tensor([1.0, 2.0])).sum()
        loss.backward()
        return loss

    loss = master.step(closure)
    assert loss.item() == 3.0                       # the closure's loss, computed before the step
    assert p.numpy().tolist() == [0.75, 0.5]        # its gradients reached the masters
    assert master.step() is master
    with pytest.raises(TypeError, match="closure must be callable"):
        master.step(0.5)


def test_master_weights_with_grad_scaler_and_state_roundtrip(tmp_path):
    def make():
        mg.manual_seed(1)
        net = nn.Linear(4, 2)
        net.half()
        return net, amp.master_weights(Adam(net.parameters(), lr=1e-2))

    x = mg.tensor(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float16))

    def train(net, opt, scaler, n):
        for _ in range(n):
            loss = (net(x).astype(F32) ** 2).mean()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)                 # fp32 master gradients: no fp16 refusal
            assert all(m.grad.dtype == F32 for m in opt.master_params())
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()

    net, opt = make()
    scaler = amp.GradScaler(init_scale=256.0)
    train(net, opt, scaler, 3)
    st = opt.state_dict()
    assert set(st["master_weights"]) == {0, 1}
    assert all(v["exp_avg"].dtype == np.float32 for v in st["state"].values())
    mg.save({"model": net.state_dict(), "opt": st}, tmp_path / "ck.safetensors")
    # continue from a fresh model and optimizer: bit-identical to continuing in place
    net2, opt2 = make()
    ck = mg.load(tmp_path / "ck.safetensors")
    net2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["opt"])
    train(net, opt, scaler, 2)
    train(net2, opt2, amp.GradScaler(init_scale=256.0), 2)
    for a, b in zip(opt.master_params(), opt2.master_params()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(net.weight.numpy(), net2.weight.numpy())


def test_master_refreshed_when_model_changes_outside():
    net = nn.Linear(2, 1)
    net.half()
    opt = amp.master_weights(SGD(net.parameters(), lr=0.0))
    net.load_state_dict({"weight": np.full((1, 2), 3.0), "bias": np.zeros(1)})
    net.weight.grad = mg.zeros(1, 2, dtype=F16)
    opt.step()
    np.testing.assert_array_equal(opt.master_params()[0].numpy(), [[3.0, 3.0]])
    assert "fp32 masters" in repr(opt)
    with pytest.raises(TypeError, match="already keeps"):
        amp.master_weights(opt)
