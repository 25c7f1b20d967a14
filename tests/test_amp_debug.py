"""Overflow localisation: amp.debug_overflow and GradScaler(debug_overflow=...)."""

import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import amp, nn
from minigrad.core.modes import dispatch_hooks
from minigrad.optimizer import SGD


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))

    def forward(self, x):
        return self.features(x)


def _net(w0, w2):
    net = Net()
    with mg.no_grad():
        net.features[0].weight.fill_(w0)
        net.features[0].bias.fill_(0.0)
        net.features[2].weight.fill_(w2)
        net.features[2].bias.fill_(0.0)
    return net


@pytest.fixture(autouse=True)
def _no_leaked_hooks():
    yield
    assert dispatch_hooks.get() == ()


def test_forward_overflow_names_module_and_op():
    # hidden = 8, output = 8 * 8 * 1e4 = 6.4e5 > 65504: inf in float16, fine in float32
    net = _net(1.0, 1e4)
    x = mg.ones(4, 8)
    with amp.debug_overflow() as dbg:
        y = net(x)
    assert dbg.report is None and float(y.numpy().max()) == pytest.approx(6.4e5)
    with pytest.raises(FloatingPointError) as ei:
        with amp.debug_overflow(), amp.autocast():
            net(x)
    rep = ei.value.report
    assert isinstance(ei.value, amp.AmpOverflowError) and isinstance(ei.value, RuntimeError)
    assert (rep.op, rep.module, rep.direction, rep.kind) == ("linear", "features.2", "forward",
                                                             "inf")
    assert rep.input_dtypes == ("float16", "float16", "float16")
    assert rep.output_dtypes == ("float16",) and rep.max_finite_input == 1e4
    assert rep.inputs_finite and rep.loss_scale is None and rep.backward_of is None
    msg = str(ei.value)
    assert "linear @ features.2 (forward)" in msg and "fp32_ops=['linear']" in msg


def test_backward_only_overflow_found_by_the_scaler_watch():
    # forward is small (x = 1e-3); backward multiplies the scaled seed 4096 by W2^T (8 * 1000)
    net = _net(0.1, 1000.0)
    x = mg.full((4, 8), 1e-3)
    scaler = amp.GradScaler(init_scale=2.0 ** 12, debug_overflow=True)
    assert scaler.debug_overflow == "raise"
    try:
        with amp.autocast():
            loss = net(x).sum()
        assert np.isfinite(loss.item())
        with pytest.raises(amp.AmpOverflowError) as ei:
            scaler.scale(loss).backward()
        rep = ei.value.report
        assert (rep.module, rep.direction, rep.backward_of) == ("features.2", "backward",
                                                                "linear")
        assert rep.op == "matmul" and rep.loss_scale == 4096.0
        assert rep.max_finite_input == 4096.0 and rep.output_dtypes == ("float16",)
        assert "matmul inside linear.backward @ features.2 (backward)" in str(rep)
        # warn mode: one warning per iteration, and the location goes into the history
        scaler.debug_overflow = False
        scaler = amp.GradScaler(init_scale=2.0 ** 12, debug_overflow="warn")
        opt = SGD(net.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            with amp.autocast():
                loss = net(x).sum()
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                scaler.scale(loss).backward()
            ours = [w for w in rec if issubclass(w.category, amp.AmpOverflowWarning)]
            assert len(ours) == 1
            assert scaler.step(opt) is None
            scaler.update()
        h = scaler.get_history()
        assert [e["where"] for e in h] == ["matmul inside linear.backward @ features.2 "
                                           "(backward)"] * 2
        assert [e["scale"] for e in h] == [4096.0, 2048.0]
    finally:
        scaler.debug_overflow = False
    assert scaler.debug_overflow is False


def test_megengine_style_scaler_backward_and_clean_step():
    from minigrad.autodiff import GradManager

    net = _net(0.1, 1.0)
    gm = GradManager().attach(net.parameters())
    scaler = amp.GradScaler(init_scale=2.0 ** 4, debug_overflow=True)
    try:
        with gm, amp.autocast():
            loss = net(mg.ones(2, 8)).sum()
            scaler.backward(gm, loss)  # clean: nothing raised
        assert scaler.get_history()[-1] == {"step": 0, "scale": 16.0, "new_scale": 16.0,
                                            "found_inf": False, "reason": None, "where": None}
        g = net.features[2].weight.grad.numpy()
        np.testing.assert_allclose(g, np.full((8, 8), 2 * 0.8), rtol=1e-3)
    finally:
        scaler.debug_overflow = False


def test_context_manager_checks_backward_with_scale_and_upstream_inputs():
    net = _net(0.1, 1000.0)
    scaler = amp.GradScaler(init_scale=2.0 ** 12)
    with pytest.raises(amp.AmpOverflowError) as ei:
        with amp.debug_overflow(scaler=scaler):
            with amp.autocast():
                loss = net(mg.full((4, 8), 1e-3)).sum()
            scaler.scale(loss).backward()
    assert ei.value.report.direction == "backward" and ei.value.report.loss_scale == 4096.0
    # an inf already in the data is reported as coming from upstream
    with amp.debug_overflow(action="warn") as dbg:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mg.tensor([np.inf, 1.0]) * 2.0
            mg.tensor([np.nan]) * 2.0  # second one: no new report (first only)
    assert len(dbg.reports) == 1 and not dbg.report.inputs_finite
    assert dbg.report.max_finite_input == 1.0
    with pytest.raises(ValueError, match="action"):
        amp.debug_overflow(action="ignore")


def test_watch_of_a_collected_scaler_uninstalls_itself():
    import gc

    scaler = amp.GradScaler(debug_overflow="warn")
    assert len(dispatch_hooks.get()) == 1
    del scaler
    gc.collect()
    mg.ones(2) + 1.0  # the next op notices the dead scaler
    assert dispatch_hooks.get() == ()
