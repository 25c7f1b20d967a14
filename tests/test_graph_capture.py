"""``nn.Graph`` as a CUDA graph: the capture logic on the CPU through the NumPy twin of the
capture backend (``_backend.cuda_graph.cpu_twin``), and the real path on a GPU."""

import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
from minigrad import amp
from minigrad._backend import cuda_graph
from minigrad.optimizer import SGD, Adam, lr_scheduler


def _mlp(seed=0):
    mg.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def _convnet(seed=0):
    mg.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Conv2d(4, 4, 3, padding=1), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))


def _batches(n, shape=(8, 6), seed=0, device="cpu"):
    rng = np.random.default_rng(seed)
    return [(mg.tensor(rng.standard_normal(shape).astype(np.float32), device=device),
             mg.tensor(rng.integers(0, 3, shape[0]), device=device)) for _ in range(n)]


class Step(nn.Graph):
    def __init__(self, model, opt, scaler=None, sched=None, capture=True, read_loss=False):
        super().__init__()
        self.model, self.loss_fn, self.read_loss = model, nn.CrossEntropyLoss(), read_loss
        self.add_optimizer(opt, lr_sch=sched)
        self.config.enable_amp(True)
        self.config.enable_cuda_graph(capture)
        if scaler is not None:
            self.set_grad_scaler(scaler)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        if self.read_loss:
            float(loss.item())        # a host read: cannot be inside a CUDA graph
        loss.backward()
        return loss


def _run(make_model, make_opt, batches, *, capture, scaler_kw=None, **kw):
    model = make_model()
    scaler = amp.GradScaler(**(scaler_kw or {"init_scale": 2.0 ** 10, "sync_free": True}))
    g = Step(model, make_opt(model), scaler, capture=capture, **kw)
    losses = []
    with cuda_graph.cpu_twin():
        for x, y in batches:
            out = g(x, y)
            losses.append((out, out.numpy().copy()))
    return g, model, losses


def _params(model):
    return [p.numpy() for p in model.parameters()]


@pytest.mark.parametrize("make_model,shape", [(_mlp, (8, 6)), (_convnet, (4, 2, 6, 6))])
@pytest.mark.parametrize("make_opt", [lambda m: SGD(m.parameters(), lr=0.1, momentum=0.9),
                                      lambda m: Adam(m.parameters(), lr=1e-2)])
def test_twin_replay_equals_eager(make_model, shape, make_opt):
    batches = _batches(4, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # the captured path warns about nothing
        g, model, losses = _run(make_model, make_opt, batches, capture=True)
    _, ref, ref_losses = _run(make_model, make_opt, batches, capture=False)
    sig, step, _ = g._captured
    assert isinstance(step, cuda_graph.TwinStep) and step.replays == 3
    assert sig == next(iter(g._signatures))
    # replays return the same (static) output Tensor, refilled; the warm-up's is its own
    assert losses[1][0] is losses[2][0] is losses[3][0] and losses[0][0] is not losses[1][0]
    for (_, a), (_, b) in zip(losses, ref_losses):
        np.testing.assert_array_equal(a, b)
    for p, q in zip(_params(model), _params(ref)):
        np.testing.assert_array_equal(p, q)


def test_inputs_are_copied_into_static_buffers():
    batches = _batches(3)
    g, _, _ = _run(_mlp, lambda m: SGD(m.parameters(), lr=0.1), batches, capture=True)
    step = g._captured[1]
    # the buffers are the graph's own copies, holding the last call's inputs
    assert all(s is not b[0]._data for s, b in zip(step.static_inputs, batches))
    np.testing.assert_array_equal(step.static_inputs[0], batches[-1][0].numpy())
    np.testing.assert_array_equal(step.static_inputs[1], batches[-1][1].numpy())


def test_host_syncing_scaler_stays_eager_with_one_warning():
    batches = _batches(3)
    with pytest.warns(RuntimeWarning, match="sync_free=True") as rec:
        g, model, losses = _run(_mlp, lambda m: SGD(m.parameters(), lr=0.1), batches,
                                capture=True, scaler_kw={"init_scale": 2.0 ** 10})
    assert len([w for w in rec if "CUDA graph" in str(w.message)]) == 1
    assert g._captured is None
    _, ref, _ = _run(_mlp, lambda m: SGD(m.parameters(), lr=0.1), batches, capture=False,
                     scaler_kw={"init_scale": 2.0 ** 10})
    for p, q in zip(_params(model), _params(ref)):
        np.testing.assert_array_equal(p, q)


def test_new_signature_runs_eagerly_with_a_warning_naming_it():
    batches = _batches(2) + _batches(2, (5, 6), seed=1)
    with pytest.warns(RuntimeWarning, match=r"differ from the captured signature") as rec:
        g, model, _ = _run(_mlp, lambda m: SGD(m.parameters(), lr=0.1), batches, capture=True)
    assert len([w for w in rec if "CUDA graph" in str(w.message)]) == 1
    assert "(5, 6)" in str(rec[0].message) and g._captured[1].replays == 1
    _, ref, _ = _run(_mlp, lambda m: SGD(m.parameters(), lr=0.1), batches, capture=False)
    for p, q in zip(_params(model), _params(ref)):
        np.testing.assert_array_equal(p, q)


def test_host_read_inside_the_step_falls_back_to_eager():
    batches = _batches(4)
    with pytest.warns(RuntimeWarning, match="capture failed.*host"):
        g, model, _ = _run(_mlp, lambda m: SGD(m.parameters(), lr=0.1), batches, capture=True,
                           read_loss=True)
    assert g._captured[1] is None
    _, ref, _ = _run(_mlp, lambda m: SGD(m.parameters(), lr=0.1), batches, capture=False,
                     read_loss=True)
    for p, q in zip(_params(model), _params(ref)):
        np.testing.assert_array_equal(p, q)


def test_lr_scheduler_and_switch_off_stay_eager():
    batches = _batches(2)

    def sched(model):
        opt = SGD(model.parameters(), lr=0.1)
        return opt, lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    model = _mlp()
    opt, sch = sched(model)
    g = Step(model, opt, amp.GradScaler(sync_free=True), sched=sch)
    with cuda_graph.cpu_twin(), pytest.warns(RuntimeWarning, match="lr schedulers"):
        for x, y in batches:
            g(x, y)
    assert g._captured is None
    g2, _, _ = _run(_mlp, lambda m: SGD(m.parameters(), lr=0.1), batches, capture=False)
    assert g2._captured is None and not g2.config.cuda_graph


def test_cpu_without_twin_is_eager_and_silent():
    model = _mlp()
    g = Step(model, SGD(model.parameters(), lr=0.1), amp.GradScaler())  # host-syncing scaler
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, y in _batches(2):
            g(x, y)
    assert g._captured is None


@pytest.mark.skipif(not mg.cuda.is_available(), reason="needs a GPU")
def test_gpu_graph_replays():
    batches = _batches(4, device="cuda")
    model = _mlp().to("cuda")
    g = Step(model, SGD(model.parameters(), lr=0.1, momentum=0.9),
             amp.GradScaler(init_scale=2.0 ** 10, sync_free=True))
    outs = [g(x, y) for x, y in batches]
    sig, step, _ = g._captured
    assert isinstance(step, cuda_graph.CapturedStep), "the step did not run as a CUDA graph"
    assert step.replays == 3 and outs[1] is outs[3]
    ref = _mlp().to("cuda")
    g_ref = Step(ref, SGD(ref.parameters(), lr=0.1, momentum=0.9),
                 amp.GradScaler(init_scale=2.0 ** 10, sync_free=True), capture=False)
    for x, y in batches:
        g_ref(x, y)
    for p, q in zip(_params(model), _params(ref)):
        np.testing.assert_allclose(p, q, rtol=1e-4, atol=1e-5)


def test_load_state_dict_drops_the_captured_graph():
    batches = _batches(3)
    g, model, _ = _run(_mlp, lambda m: SGD(m.parameters(), lr=0.1), batches, capture=True)
    assert g._captured is not None
    g.load_state_dict(g.state_dict())
    assert g._captured is None
    with cuda_graph.cpu_twin():
        g(*batches[0])
    assert isinstance(g._captured[1], cuda_graph.TwinStep)


# ----------------------------------------------------------------------------- baked host values
def test_twin_fails_when_a_host_value_changes_between_replays():
    # What a real graph would freeze silently: a kernel argument computed on the host per step.
    counter = iter(range(10))

    def fn():
        cuda_graph.note_host_values("some_kernel", 0.1, next(counter))

    step = cuda_graph.NUMPY_TWIN.capture(fn, [np.zeros(1)])
    step.replay(np.zeros(1))
    with pytest.raises(cuda_graph.CaptureError, match=r"some_kernel takes host values \(0.1, 2\)"
                       r" at replay 2 but took \(0.1, 1\) when captured"):
        step.replay(np.zeros(1))


@pytest.mark.parametrize("opt_cls", [Adam, mg.optimizer.AdamW])
def test_adam_without_a_scaler_counts_steps_on_the_device_when_captured(opt_cls):
    # A host step count would be baked in at capture: every replay would reuse the capture's
    # bias corrections. The twin fails on such a value, so a twin run that stays captured and
    # equals eager bit for bit proves the count moved to the device in the warm-up.
    batches = _batches(5)
    no_scaler = {"enabled": False}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g, model, _ = _run(_mlp, lambda m: opt_cls(m.parameters(), lr=1e-2), batches,
                           capture=True, scaler_kw=no_scaler)
    _, ref, _ = _run(_mlp, lambda m: opt_cls(m.parameters(), lr=1e-2), batches, capture=False,
                     scaler_kw=no_scaler)
    assert isinstance(g._captured[1], cuda_graph.TwinStep) and g._captured[1].replays == 4
    for p, q in zip(_params(model), _params(ref)):
        np.testing.assert_array_equal(p, q)
    steps = [st["step"] for st in g.optimizers[0].state.values()]
    assert all(s.shape == (1,) and int(s[0]) == 5 for s in steps)


def test_a_learning_rate_set_by_hand_recaptures_then_stays_eager():
    batches = _batches(8)
    lrs = [0.1, 0.1, 0.05, 0.05, 0.02, 0.01, 0.005, 0.005]  # 5 changes: 3 recaptures, then eager

    def train(capture):
        model = _mlp()
        opt = SGD(model.parameters(), lr=lrs[0], momentum=0.9)
        g = Step(model, opt, amp.GradScaler(init_scale=2.0 ** 10, sync_free=True),
                 capture=capture)
        with cuda_graph.cpu_twin(), warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            for lr, (x, y) in zip(lrs, batches):
                opt.param_groups[0]["lr"] = lr
                g(x, y)
        return g, model, [str(w.message) for w in rec]

    g, model, messages = train(True)
    _, ref, _ = train(False)
    for p, q in zip(_params(model), _params(ref)):
        np.testing.assert_array_equal(p, q)
    assert g._captured[1] is None
    assert [m for m in messages if "hyperparameters changed" in m] and len(messages) == 1


def test_capture_needs_a_warm_up():
    with pytest.raises(ValueError, match="warmup must be >= 1"):
        cuda_graph.NUMPY_TWIN.capture(lambda: None, [np.zeros(1)], warmup=0)
    with pytest.raises(ValueError, match="warmup must be >= 1"):
        cuda_graph.capture(lambda: None, warmup=0)


def test_capture_safe_joins_equal_numpy_on_the_cpu():
    parts = [np.arange(i, dtype=np.float32) for i in range(12)]
    np.testing.assert_array_equal(cuda_graph.concatenate(parts), np.concatenate(parts))
    rows = [np.full(3, i, np.float64) for i in range(12)]
    np.testing.assert_array_equal(cuda_graph.stack(rows), np.stack(rows))


@pytest.mark.skipif(not mg.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("scaler_kw", [{"enabled": False},
                                       {"init_scale": 2.0 ** 10, "sync_free": True}])
def test_gpu_captured_adam_follows_eager(scaler_kw):
    # The bias corrections come from the device step count: a replay never reuses step 2's.
    batches = _batches(6, device="cuda")

    def train(capture):
        model = _mlp().to("cuda")
        g = Step(model, Adam(model.parameters(), lr=1e-2), amp.GradScaler(**scaler_kw),
                 capture=capture)
        for x, y in batches:
            g(x, y)
        return g, model

    g, model = train(True)
    _, ref = train(False)
    assert isinstance(g._captured[1], cuda_graph.CapturedStep) and g._captured[1].replays == 5
    for p, q in zip(_params(model), _params(ref)):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
