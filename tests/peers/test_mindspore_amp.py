"""MindSpore ``mindspore.amp`` intents, re-expressed for minigrad: ``all_finite``, the
``DynamicLossScaler``/``StaticLossScaler`` dynamics, ``auto_mixed_precision`` levels,
``custom_mixed_precision``, ``build_train_network`` (``cast_model_type``, ``boost_level``, the
returned cell), the update cells, and the model-code names (``nn.Cell``/``construct``,
``pad_mode``, ``nn.Momentum``, ``trainable_params``, ``set_train``)."""

import numpy as np
import pytest

import minigrad as ms
import minigrad.nn as nn
from minigrad import Tensor, amp
from minigrad.optimizer import SGD, Momentum

F16, F32 = ms.float16, ms.float32


# ---------------------------------------------------------------- all_finite / loss scalers
def test_all_finite():
    ok = (Tensor(np.array([1.0, 2.0]), F16), Tensor(np.array([0.2]), F32))
    bad = (Tensor(np.array([np.nan, 1.0]), F16),) + ok
    r = amp.all_finite(ok)
    assert str(r.dtype) == "bool" and r.shape == () and bool(r)
    assert not bool(amp.all_finite(bad)) and not bool(amp.all_finite(Tensor([np.inf])))


def test_dynamic_loss_scaler_docs_example():
    loss_scaler = amp.DynamicLossScaler(scale_value=2 ** 10, scale_factor=2, scale_window=1)
    grads = (Tensor(np.array([np.nan, 1.0]), F16), Tensor(np.array([0.2]), F16))
    unscaled_grads = loss_scaler.unscale(grads)
    grads_finite = amp.all_finite(unscaled_grads)
    assert loss_scaler.adjust(grads_finite) is True
    assert loss_scaler.scale_value.numpy() == np.float32(512.0)


def test_dynamic_loss_scaler_dynamics():
    s = amp.DynamicLossScaler(scale_value=4, scale_factor=2, scale_window=3)
    seen = []
    for finite in [False, False, False, True, True, True, True, True, True, False]:
        s.adjust(Tensor(finite))
        seen.append(float(s.scale_value.item()))
    # max(scale / factor, 1) on overflow (counter reset); * factor after 3 finite in a row
    assert seen == [2, 1, 1, 1, 1, 2, 2, 2, 4, 2]
    loss = Tensor([0.5])
    np.testing.assert_array_equal(s.scale(loss).numpy(), [1.0])
    np.testing.assert_array_equal(s.unscale((loss * 2, loss))[0].numpy(), [0.5])
    with pytest.raises(ValueError, match="scale_factor"):
        amp.DynamicLossScaler(8, 1, 10)


def test_static_loss_scaler_and_manual_training_loop():
    ms.manual_seed(0)
    net = nn.Dense(4, 1)
    opt = SGD(net.trainable_params(), lr=0.1)
    loss_scaler = amp.StaticLossScaler(scale_value=2 ** 10)
    x, t = ms.randn(8, 4), ms.zeros(8, 1)
    losses = []
    for _ in range(5):
        loss = ((net(x) - t) ** 2).mean()
        loss_scaler.scale(loss).backward()
        grads = [p.grad for p in net.trainable_params()]
        is_finite = amp.all_finite(grads)
        if is_finite:
            for p, g in zip(net.trainable_params(), loss_scaler.unscale(grads)):
                p.grad = g
            opt.step()
        opt.zero_grad()
        assert loss_scaler.adjust(is_finite) is False
        losses.append(float(loss.item()))
    assert losses[-1] < losses[0] and float(loss_scaler.scale_value.item()) == 1024.0


# ---------------------------------------------------------------- precision lists and levels
class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="same")
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(4 * 6 * 6, 3)

    def construct(self, x):
        return self.fc(self.flatten(self.relu(self.bn(self.conv(x)))))


def _dtypes(net, x):
    seen = {}
    for name in ("conv", "bn", "fc"):
        getattr(net, name).register_forward_hook(
            lambda m, a, o, n=name: seen.__setitem__(n, str(o.dtype)))
    net(x)
    return seen


def test_white_and_black_lists_are_copies():
    white = amp.get_white_list()
    assert nn.Dense in white and nn.Conv2d in white and nn.BatchNorm2d not in white
    assert nn.BatchNorm2d in amp.get_black_list() and nn.LayerNorm in amp.get_black_list()
    white.append(nn.Flatten)
    assert nn.Flatten not in amp.get_white_list()


@pytest.mark.parametrize("level, expected", [
    ("O0", {"conv": "float32", "bn": "float32", "fc": "float32"}),
    ("O1", {"conv": "float16", "bn": "float16", "fc": "float16"}),
    ("O2", {"conv": "float16", "bn": "float32", "fc": "float16"}),
    ("O3", {"conv": "float16", "bn": "float16", "fc": "float16"}),
])
def test_auto_mixed_precision_levels(level, expected):
    net = amp.auto_mixed_precision(Net(), level)
    # O1: conv/fc white-listed; BatchNorm is not, it follows its float16 input (BN keeps fp32
    # statistics); O2: BatchNorm is black-listed, so it computes in float32
    assert _dtypes(net, ms.randn(2, 1, 6, 6)) == expected
    assert all(p.dtype == F32 for p in net.parameters())


def test_auto_mixed_precision_auto_and_errors():
    net = amp.auto_mixed_precision(Net(), "auto")
    assert str(net(ms.randn(2, 1, 6, 6)).dtype) == "float16"
    assert str(amp.auto_mixed_precision(Net(), "O3", dtype=ms.bfloat16)(
        ms.randn(1, 1, 6, 6)).dtype) == "bfloat16"
    with pytest.raises(ValueError, match="amp_level"):
        amp.auto_mixed_precision(Net(), "O4")
    with pytest.raises(ValueError, match="dtype"):
        amp.auto_mixed_precision(Net(), "O1", dtype=F32)
    with pytest.raises(TypeError, match="nn.Module"):
        amp.auto_mixed_precision(lambda x: x, "O1")


def test_custom_mixed_precision():
    white = amp.get_white_list()
    white.remove(nn.Dense)
    white.remove(nn.Linear)  # Dense is a Linear
    net = amp.custom_mixed_precision(Net(), white_list=white)
    assert _dtypes(net, ms.randn(2, 1, 6, 6)) == {"conv": "float16", "bn": "float16",
                                                   "fc": "float32"}
    net = amp.custom_mixed_precision(Net(), black_list=[nn.Dense])
    assert _dtypes(net, ms.randn(2, 1, 6, 6))["fc"] == "float32"
    with pytest.raises(ValueError, match="exactly one"):
        amp.custom_mixed_precision(Net())
    with pytest.raises(ValueError, match="exactly one"):
        amp.custom_mixed_precision(Net(), white_list=[], black_list=[])
    with pytest.raises(TypeError, match="nn.Module classes"):
        amp.custom_mixed_precision(Net(), white_list=["MatMul"])


# ---------------------------------------------------------------- training cells
def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 1, 6, 6)).astype(np.float32)
    return Tensor(x), Tensor((x.reshape(8, -1)[:, :3].argmax(1)).astype(np.int64))


def test_build_train_network_cell_returns_loss_overflow_scale():
    ms.manual_seed(0)
    net = Net()
    opt = Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    manager = amp.DynamicLossScaleManager(init_loss_scale=2 ** 10, scale_window=2)
    step = amp.build_train_network(net, opt, nn.CrossEntropyLoss(), level="O2",
                                   loss_scale_manager=manager)
    x, y = _data()
    losses = []
    for _ in range(6):
        loss, overflow, scale = step(x, y)
        losses.append(float(loss.item()))
        assert not bool(overflow) and str(scale.dtype) == "float32"
    assert float(scale.item()) == 2 ** 13          # grew after every 2 clean steps
    assert losses[-1] < losses[0]


def test_build_train_network_cast_model_type_and_boost_level():
    net = Net()
    step = amp.build_train_network(net, SGD(net.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                                   level="O0", cast_model_type=ms.bfloat16, boost_level="O1")
    # O0 keeps no BatchNorm in float32 (MindSpore's keep_batchnorm_fp32=False at O0)
    assert net.fc.weight.dtype == net.bn.weight.dtype == ms.bfloat16
    assert isinstance(step, nn.TrainOneStepCell)
    loss = step(*_data())
    assert loss.shape == () and loss.dtype == F32
    net = Net()
    amp.build_train_network(net, SGD(net.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                            level="O2", cast_model_type=F32)
    assert net.fc.weight.dtype == F32
    with pytest.raises(ValueError, match="boost_level"):
        amp.build_train_network(net, SGD(net.parameters(), lr=0.1), level="O0",
                                boost_level="O5")


def test_update_cells():
    manager = amp.DynamicLossScaleManager(init_loss_scale=8, scale_factor=2, scale_window=2)
    cell = manager.get_update_cell()
    assert isinstance(cell, nn.DynamicLossScaleUpdateCell)
    loss_scale = Tensor(np.float32(8.0))
    assert bool(cell(loss_scale, Tensor(True)))
    assert float(loss_scale.item()) == 4.0 == manager.get_loss_scale()   # one shared scale
    cell(loss_scale, False)
    cell(loss_scale, False)
    assert float(loss_scale.item()) == 8.0 and cell.get_loss_scale() == 8.0
    assert amp.FixedLossScaleManager(64, drop_overflow_update=False).get_update_cell() is None
    fixed = amp.FixedLossScaleManager(64).get_update_cell()
    assert isinstance(fixed, nn.FixedLossScaleUpdateCell)
    fixed(None, True)
    assert fixed.get_loss_scale() == 64
    # a cell is a valid scale_sense
    ms.manual_seed(0)
    net = Net()
    step = nn.TrainOneStepWithLossScaleCell(
        nn.WithLossCell(net, nn.CrossEntropyLoss()), SGD(net.parameters(), lr=0.1),
        scale_sense=nn.DynamicLossScaleUpdateCell(loss_scale_value=2 ** 12, scale_factor=2,
                                                  scale_window=1000))
    loss, overflow, scale = step(*_data())
    assert not bool(overflow) and float(scale.item()) == 2 ** 12


def test_fixed_manager_without_drop_refuses_nonfinite_weights():
    ms.manual_seed(0)
    net = Net()
    opt = SGD(net.parameters(), lr=0.1)
    step = amp.build_train_network(
        net, opt, nn.CrossEntropyLoss(), level="O0",
        loss_scale_manager=amp.FixedLossScaleManager(128, drop_overflow_update=False))
    x, y = _data()
    step(x, y)
    w = net.fc.weight.numpy().copy()
    bad = x.numpy().copy()
    bad[0, 0, 0, 0] = np.nan
    with np.errstate(invalid="ignore"), pytest.raises(FloatingPointError, match="refuses"):
        step(Tensor(bad), y)
    np.testing.assert_array_equal(net.fc.weight.numpy(), w)


# ---------------------------------------------------------------- model-code names
def test_cell_construct_pad_mode_momentum_set_train():
    assert issubclass(nn.Cell, nn.Module) and isinstance(nn.Conv2d(1, 1, 1), nn.Cell)
    assert not isinstance(nn.Conv2d(1, 1, 1), Net)  # a user's Cell keeps plain isinstance
    net = Net()
    assert net.set_train() is net and net.training
    net.set_train(False)
    assert not net.training and not net.bn.training
    net.conv.weight.requires_grad = False
    assert len(net.trainable_params()) == len(list(net.parameters())) - 1
    valid = nn.Conv2d(1, 2, 3, pad_mode="valid")
    same = nn.Conv2d(1, 2, 3, pad_mode="same")
    x = ms.randn(1, 1, 5, 5)
    assert valid(x).shape == (1, 2, 3, 3) and same(x).shape == (1, 2, 5, 5)
    assert nn.Conv2d(1, 2, 3, pad_mode="pad", padding=1)(x).shape == (1, 2, 5, 5)
    with pytest.raises(ValueError, match="pad_mode"):
        nn.Conv2d(1, 2, 3, pad_mode="full")
    with pytest.raises(ValueError, match="pad_mode='pad'"):
        nn.Conv2d(1, 2, 3, pad_mode="same", padding=1)

    class NoForward(nn.Cell):
        pass

    with pytest.raises(NotImplementedError, match="forward"):
        NoForward()(x)


def test_momentum_matches_sgd_momentum():
    ms.manual_seed(0)
    a, b = nn.Dense(3, 2), nn.Dense(3, 2)
    b.load_state_dict(a.state_dict())
    opt_a = Momentum(a.trainable_params(), learning_rate=0.1, momentum=0.9, weight_decay=0.01)
    opt_b = SGD(b.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    scaled = Momentum(nn.Dense(3, 2).trainable_params(), 0.1, 0.9, loss_scale=4.0)
    for _ in range(3):
        for m, o in ((a, opt_a), (b, opt_b)):
            (m(ms.ones(2, 3)) ** 2).sum().backward()
            o.step().zero_grad()
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    p = scaled.param_groups[0]["params"][0]
    before = p.numpy().copy()
    p.grad = ms.ones(*p.shape) * 4.0
    scaled.step()
    np.testing.assert_allclose(p.numpy(), before - 0.1, rtol=1e-6)
