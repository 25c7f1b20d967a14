"""Per-module precision: ``Module.to_float`` / ``add_flags_recursive`` and its dispatch policy."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
from minigrad import amp
from minigrad.core.modes import dispatch_hooks, dispatch_policy


class Probe(nn.Module):
    """Records the dtype of its input and the policy in force inside its forward."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append((str(x.dtype), dispatch_policy.get()))
        return x


class Net(nn.Module):
    def __init__(self, pin_fc3=False):
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.fc2 = nn.Linear(5, 4)
        self.fc3 = nn.Linear(4, 3)
        if pin_fc3:  # seed 001: the child's own setting comes first
            self.fc3 = nn.Linear(4, 3).add_flags_recursive(fp32=True)
        self.relu = nn.ReLU()
        self.probe = Probe()

    def forward(self, x):
        h = self.relu(self.fc1(x))
        self.h2 = self.relu(self.fc2(h))
        return self.fc3(self.probe(self.h2))


def _x(n=3, d=6, seed=0):
    return mg.tensor(np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32))


def _ref(net, x):
    """float64 NumPy forward of Net."""
    def lin(m, a):
        return a @ m.weight.numpy().astype(np.float64).T + m.bias.numpy().astype(np.float64)
    a = np.maximum(lin(net.fc1, x.numpy().astype(np.float64)), 0)
    a = np.maximum(lin(net.fc2, a), 0)
    return lin(net.fc3, a)


def test_child_setting_wins_over_later_parent_call():
    mg.manual_seed(0)
    net = Net(pin_fc3=True)
    assert net.add_flags_recursive(fp16=True) is net
    assert net.fc1.compute_dtype == mg.float16 and not net.fc1._precision_explicit
    assert net.fc3.compute_dtype == mg.float32 and net.fc3._precision_explicit
    x = _x()
    out = net(x)
    assert net.h2.dtype == mg.float16          # fc2 ran in float16
    assert out.dtype == mg.float32             # fc3 pinned to float32: output stays float32
    np.testing.assert_allclose(out.numpy(), _ref(net, x), rtol=2e-2, atol=2e-2)
    # parameters are untouched (cast per op), gradients reach them in float32
    assert all(p.dtype == mg.float32 for p in net.parameters())
    out.sum().backward()
    assert all(p.grad.dtype == mg.float32 for p in net.parameters())
    # no policy leaks out of the call
    assert dispatch_policy.get() is None


def test_without_pin_whole_net_runs_fp16_and_clear_restores():
    net = Net()
    net.to_float(mg.float16)
    x = _x()
    assert net(x).dtype == mg.float16
    net.add_flags_recursive(fp16=False)            # all flags off: setting cleared
    assert all(m.compute_dtype is None for m in net.modules())
    assert net(x).dtype == mg.float32


def test_nearest_explicit_setting_resolved_at_call_time():
    net = Net()
    net.to_float("float16")
    net.probe.to_float(None)          # no own setting: follows whoever calls it
    net(_x())
    dtype, pol = net.probe.seen[-1]
    assert dtype == "float16" and pol is not None and pol.low == mg.float16
    net.probe(_x())                   # called alone: nothing in force
    assert net.probe.seen[-1] == ("float32", None)
    # a module added after the parent's call has no setting but still runs in the parent's
    net.extra = nn.Linear(3, 3)
    assert net.extra.compute_dtype is None


def test_fp32_module_inside_autocast_keeps_fp32():
    lin = nn.Linear(4, 4).to_float(mg.float32)
    other = nn.Linear(4, 4)
    x = mg.ones(2, 4)
    with amp.autocast():
        assert other(x).dtype == mg.float16
        assert lin(x).dtype == mg.float32
        assert lin(x.astype(mg.float16)).dtype == mg.float32  # boundary cast up


def test_weight_cast_once_per_forward():
    class TwoUses(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = mg.Parameter(np.eye(3, dtype=np.float32))

        def forward(self, x):
            return (x @ self.w) @ self.w

    m = TwoUses().to_float(mg.float16)
    casts = []
    token = dispatch_hooks.set((lambda ph, fn, i, o: casts.append(fn.name)
                                if ph == "forward" else None,))
    try:
        y = m(mg.ones(2, 3))
    finally:
        dispatch_hooks.reset(token)
    # one boundary cast of x, one cast of w (served from the cache for the second matmul)
    assert casts.count("cast") == 2
    assert y.dtype == mg.float16
    np.testing.assert_array_equal(y.numpy(), np.ones((2, 3), np.float16))
    # the cache lives for one call: the next forward casts again (an in-place update between
    # calls must be seen)
    with mg.no_grad():
        m.w.mul_(2.0)
    np.testing.assert_array_equal(m(mg.ones(2, 3)).numpy(), np.full((2, 3), 4, np.float16))


def test_batchnorm_keeps_fp32_statistics_and_params():
    mg.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU())
    ref = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU())
    ref.load_state_dict(net.state_dict())
    net.to_float(mg.float16)
    x = _x(8, 4)
    out, out_ref = net(x), ref(x)
    bn = net[1]
    assert out.dtype == mg.float16
    assert bn.weight.dtype == bn.running_mean.dtype == bn.running_var.dtype == mg.float32
    np.testing.assert_allclose(bn.running_mean.numpy(), ref[1].running_mean.numpy(),
                               rtol=1e-2, atol=1e-3)
    assert not np.allclose(bn.running_mean.numpy(), 0)   # statistics were updated in place
    np.testing.assert_allclose(out.numpy().astype(np.float32), out_ref.numpy(), atol=2e-2)


def test_reductions_accumulate_fp32_and_float64_left_alone():
    class Sum(nn.Module):
        def forward(self, x, *, y=None):
            return x.sum(), (None if y is None else y * 1.0)

    m = Sum().to_float(mg.float16)
    s, _ = m(mg.ones(4096))
    assert s.dtype == mg.float16 and float(s.item()) == 4096.0
    _, y = m(mg.ones(2), y=mg.ones(2, dtype=mg.float64))
    assert y.dtype == mg.float64
    _, y = m(mg.ones(2), y=mg.ones(2))            # keyword tensors are cast at the boundary
    assert y.dtype == mg.float16


def test_policy_restored_after_exception_and_fast_path():
    class Boom(nn.Module):
        def forward(self, x):
            assert dispatch_policy.get() is not None
            raise ZeroDivisionError

    m = Boom().to_float(mg.float16)
    with pytest.raises(ZeroDivisionError):
        m(mg.ones(2))
    assert dispatch_policy.get() is None
    p = Probe()
    p(mg.ones(1))
    assert p.seen == [("float32", None)]          # no setting: no policy installed


def test_hooks_and_bf16():
    lin = nn.Linear(3, 2).to_float("bfloat16")
    seen = []
    lin.register_forward_pre_hook(lambda m, a: seen.append(str(a[0].dtype)))
    assert lin(mg.ones(1, 3)).dtype == mg.bfloat16
    assert seen == ["bfloat16"]


def test_errors():
    with pytest.raises(ValueError, match="float16, bfloat16 or float32"):
        nn.Linear(2, 2).to_float(mg.float64)
    with pytest.raises(TypeError, match="unsupported flags"):
        nn.Linear(2, 2).add_flags_recursive(fp8=True)
    with pytest.raises(ValueError, match="conflict"):
        nn.Linear(2, 2).add_flags_recursive(fp16=True, fp32=True)
