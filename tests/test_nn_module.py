"""nn.Module API: registration, traversal, state dicts, hooks, modes, device/dtype moves, init."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn import init
from minigrad.nn.module import current_module_path


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(3, np.float32))
        self.features = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 3))
        self.register_buffer("steps", mg.zeros(()))
        self.register_buffer("cache", mg.zeros(2), persistent=False)
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        return self.head(self.features(x) * self.scale)


def _x(n=2, f=4, seed=0):
    return mg.tensor(np.random.default_rng(seed).standard_normal((n, f)).astype(np.float32))


# ---------------------------------------------------------------- registration and traversal
def test_registration_order_and_names():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "scale", "features.0.weight", "features.0.bias", "features.2.weight",
        "features.2.bias", "head.weight", "head.bias"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "cache"]
    assert [n for n, _ in net.named_children()] == ["features", "head"]
    assert [n for n, _ in net.named_modules()] == [
        "", "features", "features.0", "features.1", "features.2", "head"]
    assert len(list(net.parameters())) == 7
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert next(iter(net.children())) is net.features
    assert net.get_submodule("features.2") is net.features[2]


def test_shared_parameters_counted_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0"]


def test_setattr_rules():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.zeros(2, np.float32))

    with pytest.raises(AttributeError, match="super"):
        Bad()
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Parameter"):
        lin.weight = mg.zeros(2, 2)
    lin.bias = None  # allowed, as in PyTorch
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    y = lin(mg.ones(1, 2))
    np.testing.assert_allclose(y.numpy(), lin.weight.numpy().sum(1)[None], rtol=1e-6)
    del lin.weight
    assert list(lin.parameters()) == []


def test_module_containers():
    seq = nn.Sequential(nn.ReLU())
    seq.append(nn.Tanh())
    assert len(seq) == 2 and isinstance(seq[-1], nn.Tanh)
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 1
    ml = nn.ModuleList([nn.Linear(2, 2)])
    ml.append(nn.Linear(2, 3))
    ml.insert(0, nn.Identity())
    assert [type(m).__name__ for m in ml] == ["Identity", "Linear", "Linear"]
    assert [n for n, _ in ml.named_parameters()] == ["1.weight", "1.bias", "2.weight", "2.bias"]
    md = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(KeyError, match="clashes"):
        md["items"] = nn.ReLU()
    x = mg.tensor([[-1.0, 2.0]])
    np.testing.assert_allclose(seq(x).numpy(), np.tanh([[0.0, 2.0]]), rtol=1e-6)


# ---------------------------------------------------------------- state dicts
def test_state_dict_keys_and_round_trip():
    mg.manual_seed(1)
    a = Net()
    sd = a.state_dict()
    # PyTorch's order: each module's parameters, then its persistent buffers, then children
    assert list(sd) == ["scale", "steps", "features.0.weight", "features.0.bias",
                        "features.2.weight", "features.2.bias", "head.weight", "head.bias"]
    mg.manual_seed(2)
    b = Net()
    x = _x()
    assert not np.allclose(a(x).numpy(), b(x).numpy())
    w_obj, v0 = b.head.weight, b.head.weight._version
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    assert b.head.weight is w_obj and b.head.weight._version > v0
    # values are copies: changing a afterwards leaves b alone
    with mg.no_grad():
        a.head.weight.fill_(0.0)
    assert np.abs(b.head.weight.numpy()).sum() > 0


def test_load_state_dict_numpy_and_cast():
    lin = nn.Linear(3, 2)
    w = np.arange(6, dtype=np.float64).reshape(2, 3)
    lin.load_state_dict({"weight": w, "bias": mg.tensor([1.0, 2.0], dtype="float16")})
    assert lin.weight.dtype == mg.float32 and lin.bias.dtype == mg.float32
    np.testing.assert_array_equal(lin.weight.numpy(), w.astype(np.float32))
    np.testing.assert_array_equal(lin.bias.numpy(), [1.0, 2.0])


def test_load_state_dict_errors():
    lin = nn.Linear(3, 2)
    with pytest.raises(RuntimeError) as e:
        lin.load_state_dict({"weight": np.zeros((2, 4)), "extra": np.zeros(1)})
    msg = str(e.value)
    assert "missing keys: bias" in msg and "unexpected keys: extra" in msg
    assert "weight: checkpoint shape (2, 4), model shape (2, 3)" in msg
    # strict=False tolerates missing/unexpected keys, never shape mismatches
    r = lin.load_state_dict({"bias": np.ones(2), "extra": np.zeros(1)}, strict=False)
    assert r.missing_keys == ["weight"] and r.unexpected_keys == ["extra"]
    np.testing.assert_array_equal(lin.bias.numpy(), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="shape mismatches"):
        lin.load_state_dict({"bias": np.ones(3)}, strict=False)


def test_optimizer_stays_attached_after_load():
    lin = nn.Linear(2, 1)
    params = list(lin.parameters())
    lin.load_state_dict({"weight": np.ones((1, 2)), "bias": np.zeros(1)})
    assert all(p is q for p, q in zip(params, lin.parameters()))
    y = lin(mg.tensor([[1.0, 2.0]])).sum()
    y.backward()
    np.testing.assert_array_equal(params[0].grad.numpy(), [[1.0, 2.0]])


# ---------------------------------------------------------------- calling, hooks, paths
def test_hooks_and_removal():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    y = lin(mg.ones(1, 2))
    np.testing.assert_allclose(y.numpy(), lin.bias.numpy()[None] + 1, rtol=1e-6)
    assert calls == [(1, 2)]
    h1.remove()
    h2.remove()
    h2.remove()  # idempotent
    y = lin(mg.ones(1, 2))
    np.testing.assert_allclose(y.numpy(), lin.weight.numpy().sum(1)[None] + lin.bias.numpy(),
                               rtol=1e-6)
    assert calls == [(1, 2)]


def test_current_module_path():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(current_module_path.get())
            return x

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Identity(), Probe())
            self.probe = Probe()

        def forward(self, x):
            return self.probe(self.features(x))

    net = Outer()
    net(mg.ones(1))
    assert seen == [("", "features", "1"), ("", "probe")]
    assert current_module_path.get() == ()
    # reset even when forward raises
    net.probe.register_forward_pre_hook(lambda m, a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        net(mg.ones(1))
    assert current_module_path.get() == ()
    assert nn.Module()._compute_dtype is None


def test_train_eval_propagation_and_apply():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    names = []
    net.apply(lambda m: names.append(type(m).__name__))
    assert names == ["Linear", "ReLU", "Linear", "Sequential", "Linear", "Net"]


def test_zero_grad():
    net = Net()
    net(_x()).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


# ---------------------------------------------------------------- dtype and device
def test_astype_keeps_objects():
    bn = nn.BatchNorm1d(3)
    net = nn.Sequential(nn.Linear(2, 3), bn)
    objs = [id(t) for t in list(net.parameters()) + list(net.buffers())]
    net.half()
    assert [id(t) for t in list(net.parameters()) + list(net.buffers())] == objs
    assert all(p.dtype == mg.float16 for p in net.parameters())
    assert bn.running_mean.dtype == mg.float16
    assert bn.num_batches_tracked.dtype == mg.int64  # integer buffers are not cast
    net.float()
    assert all(p.dtype == mg.float32 for p in net.parameters())
    net.astype("bfloat16")
    assert net[0].weight.dtype == mg.bfloat16
    net.to("float64")
    assert net[0].weight.dtype == mg.float64
    with pytest.raises(TypeError, match="floating"):
        net.astype("int32")


def test_to_device_keeps_objects(device):
    net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    net(mg.ones(4, 2)).sum().backward()
    w = net[0].weight
    ref = w.numpy().copy()
    assert net.to(device) is net
    assert net[0].weight is w and w.device == mg._backend.normalize_device(device)
    assert w.grad.device == w.device and net[1].running_var.device == w.device
    np.testing.assert_array_equal(w.numpy(), ref)
    out = net(mg.ones(4, 2, device=device))
    assert out.device == w.device
    net.cpu()
    assert w.device == "cpu"


def test_repr_tree():
    net = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU()))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): Sequential(\n"
        "    (0): ReLU()\n"
        "  )\n"
        ")")


# ---------------------------------------------------------------- init
def test_default_linear_conv_init_bounds():
    lin = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    for t in (lin.weight, lin.bias):
        a = t.numpy()
        assert np.abs(a).max() <= bound and np.abs(a).max() > 0.8 * bound
    conv = nn.Conv2d(4, 8, 3)
    bound = 1 / math.sqrt(4 * 9)
    for t in (conv.weight, conv.bias):
        assert np.abs(t.numpy()).max() <= bound and np.abs(t.numpy()).max() > 0.7 * bound
    convt = nn.ConvTranspose2d(4, 6, 3, groups=2)  # fan_in = (6 / 2) * 9
    assert convt.weight.shape == (4, 3, 3, 3)
    assert np.abs(convt.bias.numpy()).max() <= 1 / math.sqrt(27)
    assert abs(lin.weight.numpy().mean()) < 0.01


def test_init_functions_statistics():
    t = mg.zeros(200, 300)
    init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    np.testing.assert_allclose(t.numpy().std(), math.sqrt(2 / 200), rtol=0.03)
    init.kaiming_uniform_(t, a=0, nonlinearity="relu")
    assert np.abs(t.numpy()).max() <= math.sqrt(2) * math.sqrt(3 / 300)
    init.xavier_uniform_(t, gain=2.0)
    b = 2.0 * math.sqrt(6 / 500)
    assert np.abs(t.numpy()).max() <= b and np.abs(t.numpy()).max() > 0.99 * b
    init.xavier_normal_(t)
    np.testing.assert_allclose(t.numpy().std(), math.sqrt(2 / 500), rtol=0.03)
    init.normal_(t, 3.0, 0.5)
    np.testing.assert_allclose([t.numpy().mean(), t.numpy().std()], [3.0, 0.5], rtol=0.02)
    init.uniform_(t, -2.0, -1.0)
    assert t.numpy().min() >= -2.0 and t.numpy().max() < -1.0
    v = t._version
    init.constant_(t, 0.5)
    assert (t.numpy() == 0.5).all() and t._version > v
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))
    assert init._calculate_fan_in_and_fan_out(mg.zeros(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="at least 2"):
        init.xavier_uniform_(mg.zeros(5))


def test_init_reproducible_and_dtype():
    mg.manual_seed(7)
    a = nn.Linear(5, 4).weight.numpy().copy()
    mg.manual_seed(7)
    b = nn.Linear(5, 4).weight.numpy()
    np.testing.assert_array_equal(a, b)
    h = nn.Linear(5, 4, dtype="float16")
    assert h.weight.dtype == mg.float16 and h.bias.dtype == mg.float16
    assert np.abs(h.weight.numpy().astype(np.float32)).max() <= 1 / math.sqrt(5) + 1e-3


# ---------------------------------------------------------------- utils
def test_functional_call_and_clip():
    lin = nn.Linear(2, 1)
    w = mg.tensor([[1.0, 2.0]])
    b = mg.tensor([0.5])
    y = nn.utils.functional_call(lin, {"weight": w, "bias": b}, mg.tensor([[1.0, 1.0]]))
    np.testing.assert_allclose(y.numpy(), [[3.5]])
    assert lin.weight is not w and isinstance(lin.weight, nn.Parameter)
    with pytest.raises(KeyError, match="no parameter"):
        nn.utils.functional_call(lin, {"wieght": w}, mg.ones(1, 2))
    lin.weight.grad = mg.tensor([[3.0, 4.0]])
    lin.bias.grad = mg.tensor([0.0])
    total = nn.utils.clip_grad_norm_(lin.parameters(), 1.0)
    assert float(total.item()) == pytest.approx(5.0)
    np.testing.assert_allclose(lin.weight.grad.numpy(), [[0.6, 0.8]], rtol=1e-4)
    nn.utils.clip_grad_value_(lin.parameters(), 0.7)
    np.testing.assert_allclose(lin.weight.grad.numpy(), [[0.6, 0.7]], rtol=1e-4)
