"""PyTorch's autocast tests, re-expressed for minigrad (intents of test_autocast.py and the
autocast parts of test_cuda.py; written from what they check, not copied).

Checked: ops run in their category's dtype and give the same bits as running the op by hand on
inputs cast to that dtype; ``enabled=False`` inside a region; nesting; the weight-cast cache
(hits, ``cache_enabled=False``, no growth in a no_grad loop, a no_grad cast never served to a
recorded op); checkpointing under autocast; ``custom_fwd``/``custom_bwd``; autocast as a
decorator; dtype arguments and per-device defaults; the state functions; the old
``torch.cuda.amp`` namespace. Runs on the CPU (minigrad's regions cover every device).
"""

import importlib

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp, nn
from minigrad.autodiff import Function
from minigrad.core.modes import dispatch_hooks, dispatch_policy
from minigrad.utils.checkpoint import checkpoint

f16, bf16, f32, f64 = mg.float16, mg.bfloat16, mg.float32, mg.float64


@pytest.fixture(autouse=True)
def _clean():
    yield
    amp.enabled = False
    amp.policy.reset()


def _t(*shape, dtype=f32, seed=0):
    rng = np.random.default_rng(seed)
    return mg.tensor((rng.standard_normal(shape) * 0.5).astype(np.float32), dtype=dtype)


def _bits(t):
    a = t.numpy()
    return a.view(f"u{a.dtype.itemsize}")


# (op, args maker, category dtype: "low" | f32 | None for promote-to-widest)
_OPS = [
    ("matmul", lambda d: (_t(4, 5, dtype=d), _t(5, 3, dtype=d, seed=1)), "low"),
    ("linear", lambda d: (_t(4, 5, dtype=d), _t(3, 5, dtype=d, seed=1), _t(3, dtype=d)), "low"),
    ("bmm", lambda d: (_t(2, 4, 5, dtype=d), _t(2, 5, 3, dtype=d, seed=1)), "low"),
    ("conv2d", lambda d: (_t(1, 2, 5, 5, dtype=d), _t(3, 2, 3, 3, dtype=d, seed=1)), "low"),
    ("exp", lambda d: (_t(4, 3, dtype=d),), f32),
    ("softmax", lambda d: (_t(4, 3, dtype=d),), f32),
    ("log_softmax", lambda d: (_t(4, 3, dtype=d),), f32),
    ("sum", lambda d: (_t(4, 3, dtype=d),), f32),
    ("mse_loss", lambda d: (_t(4, 3, dtype=d), _t(4, 3, dtype=d, seed=1)), f32),
    ("cosine_similarity", lambda d: (_t(4, 3, dtype=d), _t(4, 3, dtype=d, seed=1)), f32),
]


@pytest.mark.parametrize("low", [f16, bf16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("name,make,category", _OPS, ids=[o[0] for o in _OPS])
@pytest.mark.parametrize("given", [f32, f16], ids=["fp32-in", "fp16-in"])
def test_op_runs_in_its_dtype_and_matches_a_manual_cast(low, name, make, category, given):
    op = getattr(F, name)
    args = make(given)
    run_as = low if category == "low" else category
    with amp.autocast(dtype=low):
        out = op(*args)
        with amp.autocast(enabled=False):         # disabled inside: the inputs' dtype
            plain = op(*args)
    control = op(*[a.astype(run_as) for a in args])   # outside any region, cast by hand
    assert out.dtype == control.dtype
    np.testing.assert_array_equal(_bits(out), _bits(control))
    assert plain.dtype == op(*args).dtype


def test_promote_ops_run_in_the_widest_input_dtype():
    a16, a32 = _t(3, dtype=f16), _t(3, seed=1)
    with amp.autocast():
        assert (a16 + a32).dtype == f32 and (a16 * a16).dtype == f16
        assert F.stack([a16, a32]).dtype == f32
        assert (a16 + _t(3, dtype=f64)).dtype == f64          # float64 is never narrowed


def test_integer_and_float64_inputs_are_ignored():
    i = mg.tensor([[1, 2], [3, 4]], dtype=mg.int64)
    d = _t(2, 2, dtype=f64)
    with amp.autocast():
        assert (i @ i).dtype == mg.int64
        assert (d @ d).dtype == f64


def test_nesting_and_enabled_false_inside():
    a, b = _t(2, 2), _t(2, 2, seed=1)
    with amp.autocast(dtype="bfloat16"):
        assert (a @ b).dtype == bf16
        with amp.autocast(dtype="float16"):
            assert (a @ b).dtype == f16 and amp.get_autocast_dtype() == f16
            with amp.autocast(enabled=False):
                assert (a @ b).dtype == f32 and not amp.is_autocast_enabled()
            assert (a @ b).dtype == f16
        assert (a @ b).dtype == bf16 and amp.get_autocast_dtype() == bf16
    assert (a @ b).dtype == f32 and not amp.is_autocast_enabled()


def test_decorator_and_pytorch_module_level_spellings():
    @mg.autocast("cpu", dtype=mg.float16)
    def f(a, b):
        assert mg.is_autocast_enabled("cpu") and mg.get_autocast_dtype("cpu") == f16
        return a @ b

    assert f(_t(2, 2), _t(2, 2)).dtype == f16
    assert not mg.is_autocast_enabled()
    assert mg.autocast is amp.autocast


def test_device_type_defaults_and_state_functions():
    assert mg.get_autocast_dtype("cpu") == bf16 and mg.get_autocast_dtype("cuda") == f16
    assert amp.is_autocast_available("cpu") and amp.is_autocast_available("cuda")
    assert not amp.is_autocast_available("xpu")
    with mg.autocast(device_type="cpu"):
        assert (_t(2, 2) @ _t(2, 2)).dtype == bf16
    with mg.autocast("cuda"):
        assert mg.get_autocast_dtype("cuda") == f16
    with pytest.raises(ValueError, match="device_type"):
        mg.autocast("mps")
    with pytest.raises(ValueError, match="dtype"):
        mg.autocast("cpu", dtype=mg.float64)
    mg.set_autocast_enabled("cpu", True)
    try:
        assert mg.is_autocast_enabled() and (_t(2, 2) @ _t(2, 2)).dtype == f16
    finally:
        mg.set_autocast_enabled(False)
    assert not mg.is_autocast_enabled()


def test_old_cuda_amp_namespace():
    from minigrad.cuda.amp import GradScaler, autocast

    assert GradScaler is amp.GradScaler and mg.cuda.amp.autocast is autocast
    with autocast():                               # torch.cuda.amp.autocast(): float16
        assert (_t(2, 2) @ _t(2, 2)).dtype == f16
    with autocast(enabled=False):
        assert not amp.is_autocast_enabled()
    with autocast(dtype=mg.bfloat16):
        assert (_t(2, 2) @ _t(2, 2)).dtype == bf16


class _CastCount:
    def __init__(self):
        self.n = 0

    def __call__(self, phase, fn, inputs, outputs):
        if phase == "forward" and fn.name == "cast":
            self.n += 1


def _count_casts(body):
    counter = _CastCount()
    token = dispatch_hooks.set((counter,))
    try:
        body()
    finally:
        dispatch_hooks.reset(token)
    return counter.n


def test_weight_cache_hits_and_cache_disabled():
    lin = nn.Linear(4, 4, bias=False)
    x = _t(2, 4)
    x16 = x.astype(f16)

    def twice(**kw):
        with mg.autocast("cuda", **kw):
            lin(x16), lin(x16)
    assert _count_casts(twice) == 1                 # the weight once
    assert _count_casts(lambda: twice(cache_enabled=False)) == 2


def test_cache_does_not_grow_in_a_no_grad_loop():
    lin = nn.Linear(4, 4)
    with amp.autocast(), mg.no_grad():
        cache = dispatch_policy.get().cache
        for _ in range(20):
            lin(_t(2, 4))
        assert len(cache) == 2
    assert len(cache) == 0


def test_no_grad_first_then_grad_still_differentiates():
    lin = nn.Linear(3, 2)
    x = _t(4, 3)
    with amp.autocast():
        with mg.no_grad():
            lin(x)
        y = lin(x)
    assert y.requires_grad
    y.astype(f32).sum().backward()
    assert lin.weight.grad is not None and lin.weight.grad.dtype == f32


def test_clear_autocast_cache():
    lin = nn.Linear(3, 3, bias=False)

    def body():
        with amp.autocast():
            lin(_t(1, 3))
            mg.clear_autocast_cache()
            lin(_t(1, 3))
    assert _count_casts(body) == 4                  # weight twice, inputs twice


def test_checkpointing_under_autocast():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    x = _t(3, 4).requires_grad_()
    with amp.autocast():
        y = checkpoint(model, x)
        assert y.dtype == f16
    y.astype(f32).sum().backward()                   # outside: recompute still in fp16
    g_ckpt = [p.grad.numpy().copy() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    with amp.autocast():
        model(x).astype(f32).sum().backward()
    for a, p in zip(g_ckpt, model.parameters()):
        np.testing.assert_array_equal(a, p.grad.numpy())


class _MyMM(Function):
    name = "peer_test_mymm"

    @amp.custom_fwd
    def forward(self, a, b):
        self.fwd_enabled = amp.is_autocast_enabled()
        self.save_for_backward(a, b)
        return a @ b

    @amp.custom_bwd
    def backward(self, g):
        assert amp.is_autocast_enabled() == self.fwd_enabled
        a, b = self.saved_tensors
        return g @ b.T, a.T @ g


class _MyMMFp32(_MyMM):
    name = "peer_test_mymm_fp32"
    seen = []  # noqa: RUF012

    @amp.custom_fwd(cast_inputs=mg.float32)
    def forward(self, a, b):
        _MyMMFp32.seen.append((a.dtype, b.dtype, amp.is_autocast_enabled()))
        self.fwd_enabled = amp.is_autocast_enabled()
        self.save_for_backward(a, b)
        return a @ b


def test_custom_fwd_bwd_keep_the_forward_state():
    a = _t(3, 4).astype(f16).requires_grad_()
    b = _t(4, 2).requires_grad_()
    with amp.autocast():
        y = _MyMM.apply(a, b)
        assert y.dtype == f32                        # unlisted op: inputs' dtypes, promoted
    y.sum().backward()                               # backward sees autocast on, as forward
    assert a.grad.dtype == f16 and b.grad.dtype == f32


def test_custom_fwd_cast_inputs():
    a = _t(3, 4).astype(f16).requires_grad_()
    b = _t(4, 2).astype(f16).requires_grad_()
    with amp.autocast():
        y = _MyMMFp32.apply(a, b)
    assert _MyMMFp32.seen[-1] == (f32, f32, False)
    assert y.dtype == f32
    y.sum().backward()
    assert a.grad.dtype == f16                       # gradients in the inputs' dtypes
    _MyMMFp32.apply(a, b)                            # outside a region: nothing is cast
    assert _MyMMFp32.seen[-1] == (f16, f16, False)


def test_custom_bwd_without_custom_fwd_is_refused():
    class Bad(Function):
        name = "peer_test_bad"

        def forward(self, x):
            return x * 2

        @amp.custom_bwd
        def backward(self, g):
            return g * 2

    x = _t(2).requires_grad_()
    with pytest.raises(RuntimeError, match="custom_fwd"):
        Bad.apply(x).sum().backward()


def test_banned_binary_cross_entropy_runs_fp32_with_a_warning():
    p = mg.tensor([0.2, 0.7], dtype=f16)
    t = mg.tensor([0.0, 1.0], dtype=f16)
    autocast_mod = importlib.import_module("minigrad.precision.autocast")
    autocast_mod._bce_warned[0] = False
    with amp.autocast(), pytest.warns(UserWarning, match="float32"):
        out = F.binary_cross_entropy(p, t)
    assert out.dtype == f32


def test_rnn_cell_weights_cast_once_across_time_steps():
    cell = nn.Linear(4, 4)
    h = _t(2, 4)

    def unroll():
        nonlocal h
        with amp.autocast():
            for _ in range(5):
                h = F.tanh(cell(h))
    n = _count_casts(unroll)
    assert n == 2 + 1           # weight and bias once, the fp32 initial h once
    h.astype(f32).sum().backward()
    assert cell.weight.grad.dtype == f32


def test_pytorch_spellings_of_the_surroundings():
    import minigrad.nn.functional as nnF

    # PyTorch's nn.functional: minigrad.functional's ops (one object each), PyTorch's pad
    assert nnF.relu is F.relu and nnF.interpolate is F.interpolate and nnF.pad is not F.pad
    assert mg.optim.SGD is mg.optimizer.SGD and mg.autograd.grad is not None
    lin = nn.Linear(3, 2)
    lin(_t(4, 3)).sum().backward()
    lin.weight.grad = lin.weight.grad * float("inf")
    with pytest.raises(RuntimeError, match="error_if_nonfinite"):
        nn.utils.clip_grad_norm_(lin.parameters(), 1.0, error_if_nonfinite=True)
    x = mg.tensor([1.0, -2.0], requires_grad=True)
    mg.autograd.backward([(x * x).sum()])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, -4.0])
    y = x.to(mg.float16)
    assert y.dtype == f16 and y.requires_grad and x.to(y).dtype == f16
    assert x.to("cpu") is x and x.to("cpu", copy=True) is not x
    assert x.to(device="cpu", dtype="bfloat16").dtype == bf16
    with pytest.raises(TypeError, match="twice"):
        x.to(f16, dtype=f32)
    mg.set_default_device("cpu")
    assert mg.get_default_device() == "cpu" and mg.zeros(2).device == "cpu"
    if not mg.cuda.is_available():
        with pytest.raises(RuntimeError, match="GPU"):
            mg.set_default_device("cuda")
    mg.cuda.empty_cache()
    mg.cuda.reset_max_memory_allocated()
    assert mg.cuda.max_memory_allocated() >= 0
