"""Scaler telemetry (history as data, plot) and grad_stats."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp, nn
from minigrad.optimizer import SGD

INF = float("inf")


def _run_pattern(scaler, pattern):
    """One iteration per entry: True = the gradients overflow."""
    p = mg.Parameter(mg.zeros(2))
    opt = SGD([p], lr=0.1)
    for bad in pattern:
        scaler.scale(p.sum())  # the gradients below stand for those of this scaled loss
        p.grad = mg.tensor([INF if bad else 1.0, 1.0])
        scaler.step(opt)
        scaler.update()


def test_history_is_plain_data_and_summary_counts():
    scaler = amp.GradScaler(init_scale=8.0, growth_interval=2)
    _run_pattern(scaler, [False, False, True, False])
    h = scaler.get_history()
    assert [e["step"] for e in h] == [0, 1, 2, 3]
    assert [e["scale"] for e in h] == [8.0, 8.0, 16.0, 8.0]
    assert [e["found_inf"] for e in h] == [False, False, True, False]
    assert [e["reason"] for e in h] == [None, None, "grad_overflow", None]
    h[0]["scale"] = -1  # a copy: the scaler is untouched
    assert scaler.history[0]["scale"] == 8.0
    s = amp.scaler_summary(scaler)
    assert s == {"iterations": 4, "skipped": 1, "skipped_by_reason": {"grad_overflow": 1},
                 "first_scale": 8.0, "last_scale": 8.0, "min_scale": 8.0, "max_scale": 16.0}
    assert amp.scaler_summary([])["iterations"] == 0


def test_plot_scaler_writes_a_png_with_log2_axis(tmp_path, monkeypatch):
    import matplotlib.axes

    scaler = amp.GradScaler(init_scale=2.0 ** 10, growth_interval=1)
    _run_pattern(scaler, [False, True, True, False, False])
    seen = {}
    real = matplotlib.axes.Axes.set_yscale

    def spy(self, value, **kw):
        seen.update(value=value, **kw)
        return real(self, value, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "set_yscale", spy)
    out = amp.plot_scaler(scaler, tmp_path / "scale.png")
    data = (tmp_path / "scale.png").read_bytes()
    assert out == tmp_path / "scale.png" and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    assert seen == {"value": "log", "base": 2}
    amp.plot_scaler(scaler.get_history(), tmp_path / "again.png")
    assert (tmp_path / "again.png").stat().st_size > 1000


def test_grad_stats_definitions():
    p = mg.Parameter(mg.zeros(4))
    p.grad = mg.tensor([1e-8, 1e-8, 0.0, 1.0])
    st = amp.grad_stats([p])
    r = st["param0"]
    assert r["underflow"] == 0.5 and r["zeros"] == 0.25 and r["overflow"] == 0.0
    assert r["max_abs"] == 1.0 and r["min_abs_nonzero"] == pytest.approx(1e-8)
    assert r["lost_update"] is None
    assert amp.grad_stats([p], scale=2.0 ** 16)["param0"]["underflow"] == 0.0
    # 1e-6 is below float16's smallest normal (6.1e-5): kept as a subnormal
    p.grad = mg.tensor([1e-6, 1.0, 1.0, 1.0])
    assert amp.grad_stats([p])["param0"]["subnormal"] == 0.25
    # 1.0 * 2**17 > 65504: overflow
    assert amp.grad_stats([p], scale=2.0 ** 17)["param0"]["overflow"] == 0.75
    # bfloat16 has float32's range: 1e-8 does not underflow
    p.grad = mg.full((4,), 1e-8)
    assert amp.grad_stats([p], dtype="bfloat16")["param0"]["underflow"] == 0.0
    # lost updates: an fp16 weight of 1000 (ulp 0.5) cannot take a 1e-4 step
    w16 = mg.Parameter(mg.full((4,), 1000.0, dtype="float16"))
    w16.grad = mg.tensor([1e-3, 1e-3, 1e4, 0.0])
    w32 = mg.Parameter(mg.full((4,), 1000.0))
    w32.grad = mg.full((4,), 1e-3)
    st = amp.grad_stats({"w16": w16, "w32": w32, "none": mg.Parameter(mg.zeros(2))}, lr=0.1)
    assert st["w16"]["lost_update"] == 0.5 and st["w32"]["lost_update"] == 0.0
    assert st["none"]["underflow"] is None
    text = st.summary()
    assert "w16" in text and "50.00%" in text and "(no gradient)" in text


def test_grad_stats_predicts_the_fp16_backward_underflow():
    mg.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 4))
    x = mg.randn(16, 8)
    target = mg.zeros(16, 4)

    def loss_fn():
        return F.mse_loss(net(x), target) * 1e-8  # gradients ~1e-10

    loss_fn().backward()  # float32: the true gradients
    at1 = amp.grad_stats(net)
    scaler = amp.GradScaler(init_scale=2.0 ** 16)
    at16 = amp.grad_stats(net, scaler)
    assert [r["name"] for r in at1] == ["0.weight", "0.bias"]
    assert at1["0.weight"]["underflow"] > 0.9 and at16["0.weight"]["underflow"] == 0.0
    assert at16.scale == 65536.0 and "65536" in at16.summary()
    # the real fp16 backward agrees: at scale 1 the weight gradient flushes to zero ...
    for p in net.parameters():
        p.grad = None
    with amp.autocast():
        loss = loss_fn()
    loss.backward()
    assert np.count_nonzero(net[0].weight.grad.numpy()) < 0.1 * 32
    # ... and with the scaler it survives
    for p in net.parameters():
        p.grad = None
    with amp.autocast():
        loss = loss_fn()
    scaler.scale(loss).backward()
    scaler.unscale_(SGD(net.parameters(), lr=0.1))
    assert np.count_nonzero(net[0].weight.grad.numpy()) == 32
