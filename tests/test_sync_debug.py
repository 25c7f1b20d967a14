"""mg.cuda.set_sync_debug_mode / sync_debug_mode: device-to-host reads warn or raise, on both
backends; an AMP step with a sync-free GradScaler makes none (both scaler APIs, SGD and Adam)."""

import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp
from minigrad._backend.sync_debug import SyncWarning
from minigrad.autodiff import GradManager
from minigrad.optimizer import SGD, Adam

READS = [lambda t: t.numpy(), lambda t: t.item(), lambda t: t.tolist(), lambda t: bool(t),
         lambda t: float(t), lambda t: int(t), lambda t: np.asarray(t)]


@pytest.mark.parametrize("read", READS)
def test_every_host_read_raises_in_error_mode(read):
    t = mg.tensor([1.5])
    with mg.cuda.sync_debug_mode("error"):
        with pytest.raises(RuntimeError, match="device-to-host read"):
            read(t)
    read(t)                                   # outside the region: allowed again


def test_warn_mode_default_mode_and_nesting():
    t = mg.tensor(2.0)
    assert mg.cuda.get_sync_debug_mode() == 0
    with mg.cuda.sync_debug_mode("warn"):
        with pytest.warns(SyncWarning, match="host synchronisation"):
            assert t.item() == 2.0
        with mg.cuda.sync_debug_mode("default"):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                assert t.item() == 2.0
        assert mg.cuda.get_sync_debug_mode() == 1
    assert mg.cuda.get_sync_debug_mode() == 0
    with pytest.raises(ValueError, match="'warn' or 'error'"):
        mg.cuda.set_sync_debug_mode("loud")


def test_set_sync_debug_mode_is_per_context():
    import contextvars

    def body():
        mg.cuda.set_sync_debug_mode("error")
        with pytest.raises(RuntimeError):
            mg.tensor(1.0).item()
        mg.cuda.set_sync_debug_mode(0)
        return mg.tensor(1.0).item()

    assert contextvars.copy_context().run(body) == 1.0
    assert mg.cuda.get_sync_debug_mode() == 0


def test_host_path_scaler_read_is_seen_by_the_detector():
    p = mg.Parameter(np.ones(2, np.float32))
    opt = SGD([p], lr=0.1)
    scaler = amp.GradScaler(init_scale=4.0)
    scaler.scale((p * 2.0).sum()).backward()
    with mg.cuda.sync_debug_mode("error"):
        with pytest.raises(RuntimeError, match="GradScaler found-inf check"):
            scaler.step(opt)


def _model(seed=0):
    rng = np.random.default_rng(seed)
    w = mg.Parameter(rng.standard_normal((3, 4)).astype(np.float32))
    b = mg.Parameter(np.zeros(3, np.float32))
    x = mg.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    y = mg.tensor(rng.standard_normal((8, 3)).astype(np.float32))
    return w, b, x, y


def _loss(w, b, x, y):
    with amp.autocast():
        out = F.linear(x, w, b)
    d = out.astype(mg.float32) - y
    return (d * d).mean()


@pytest.mark.parametrize("opt_cls", [lambda p: SGD(p, lr=0.1, momentum=0.9),
                                     lambda p: Adam(p, lr=0.01)])
def test_sync_free_amp_step_has_no_host_read(opt_cls):
    w, b, x, y = _model()
    opt = opt_cls([w, b])
    scaler = amp.GradScaler(init_scale=2.0 ** 20, growth_interval=1, sync_free=True)
    gm = GradManager().attach([w, b])
    for _ in range(3):
        with mg.cuda.sync_debug_mode("error"):          # PyTorch API
            scaler.scale(_loss(w, b, x, y)).backward()
            result = scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        with mg.cuda.sync_debug_mode("error"), gm:    # MegEngine API
            scaler.backward(gm, _loss(w, b, x, y))
        with mg.cuda.sync_debug_mode("error"):
            opt.step().clear_grad()
        with mg.cuda.sync_debug_mode("error"):          # asking IS a read: the detector sees it
            with pytest.raises(RuntimeError, match="GradScaler.step"):
                result.skipped
            with pytest.raises(RuntimeError, match="GradScaler telemetry"):
                scaler.last_step_skipped
    assert scaler.total_steps == 6 and isinstance(result.skipped, bool)
    assert np.isfinite(w.numpy()).all()
