"""autocast: regions, decorator, global switch, policy categories and overrides, the weight-cast
cache, and backward replaying the forward dtypes (invariant 5)."""

import importlib
import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp
from minigrad.autodiff import grad
from minigrad.core.function import Function
from minigrad.core.modes import dispatch_hooks, dispatch_policy

# the submodule (the package attribute ``amp.autocast`` is the class)
autocast_mod = importlib.import_module("minigrad.precision.autocast")

f16, bf16, f32, f64 = mg.float16, mg.bfloat16, mg.float32, mg.float64


def _op(name):
    """A functional op, skipping the test while the helper that writes it is not done."""
    fn = getattr(F, name, None)
    if fn is None:
        pytest.skip(f"F.{name} not implemented yet")
    return fn


class _Probe(Function):
    """A test op whose category the tests set: records the dtypes it received."""

    name = "amp_test_probe"
    seen: list = []  # noqa: RUF012 - shared on purpose: the tests read what the op received

    def forward(self, *xs):
        _Probe.seen.append(tuple(getattr(x, "dtype", type(x)) for x in xs))
        return xs[0].copy()

    def backward(self, gy):
        return (gy,) + (None,) * (len(self.inputs) - 1)


@pytest.fixture(autouse=True)
def _clean_policy():
    amp.policy.reset()
    _Probe.seen.clear()
    yield
    amp.policy.reset()
    amp.enabled = False


def _probe(category, *xs):
    amp.policy.set("amp_test_probe", category)
    _Probe.seen.clear()
    with amp.autocast():
        _Probe.apply(*xs)
    return _Probe.seen[-1]


class _CastCounter:
    """A dispatch hook counting the Cast nodes run in forward."""

    def __init__(self):
        self.n = 0
        self.token = None

    def __call__(self, phase, fn, inputs, outputs):
        if phase == "forward" and fn.name == "cast":
            self.n += 1

    def __enter__(self):
        self.token = dispatch_hooks.set(dispatch_hooks.get() + (self,))
        return self

    def __exit__(self, *exc):
        dispatch_hooks.reset(self.token)


# ----------------------------------------------------------------------------- regions
def test_context_manager_lowers_matmul_and_restores():
    a, b = mg.ones(4, 4), mg.ones(4, 4)
    with amp.autocast():
        assert amp.enabled and amp.is_autocast_enabled()
        c = a @ b
    assert c.dtype == f16 and np.all(c.numpy() == 4)
    assert (a @ b).dtype == f32
    assert dispatch_policy.get() is None and not amp.enabled
    with amp.autocast(dtype="bfloat16"):
        assert (a @ b).dtype == bf16
        assert amp.get_autocast_dtype() == bf16


def test_decorator_and_reentrancy():
    a = mg.ones(2, 2)
    ac = amp.autocast()

    @ac
    def f(depth):
        out = a @ a
        return [out.dtype] + (f(depth - 1) if depth else [])

    assert f(3) == [f16] * 4
    assert dispatch_policy.get() is None
    with ac:
        with ac:  # the same object nested
            assert (a @ a).dtype == f16
        assert (a @ a).dtype == f16
    assert (a @ a).dtype == f32


def test_disabled_inside_enabled_installs_none():
    a = mg.ones(2, 2)
    with amp.autocast():
        with amp.autocast(enabled=False):
            assert dispatch_policy.get() is None and not amp.enabled
            assert (a @ a).dtype == f32
            with amp.autocast(dtype="bfloat16"):
                assert (a @ a).dtype == bf16
        assert (a @ a).dtype == f16


def test_exception_resets_state():
    a = mg.ones(2, 2)
    with pytest.raises(ZeroDivisionError), amp.autocast(), amp.autocast(enabled=False):
        raise ZeroDivisionError
    assert dispatch_policy.get() is None and not amp.enabled
    assert (a @ a).dtype == f32


def test_global_switch_megengine():
    a = mg.ones(2, 2)
    amp.enabled = True
    assert amp.enabled and (a @ a).dtype == f16
    amp.low_prec_dtype = "bfloat16"      # takes effect while enabled
    assert (a @ a).dtype == bf16
    assert amp.low_prec_dtype == bf16
    amp.enabled = False
    amp.low_prec_dtype = "float16"
    assert not amp.enabled and (a @ a).dtype == f32 and dispatch_policy.get() is None
    with pytest.raises(ValueError, match="float16"):
        amp.low_prec_dtype = "float32"


def test_repr_and_argument_checks():
    assert repr(amp.autocast()) == "autocast(enabled=True, dtype=float16)"
    assert "enabled=False" in repr(amp.autocast(enabled=False, dtype="bfloat16"))
    assert amp.autocast(low_prec_dtype="bfloat16").dtype == bf16  # MegEngine alias wins
    with pytest.raises(ValueError, match="float16' or 'bfloat16"):
        amp.autocast(dtype="float32")
    with pytest.raises(ValueError, match="both"):
        amp.autocast(fp32_ops=["matmul"], lower_ops=["matmul"])
    with pytest.raises(ValueError, match="cast"):
        amp.autocast(lower_ops=["cast"])


# ----------------------------------------------------------------------------- categories
def test_lower_category_casts_floats_only():
    x32, x64 = mg.ones(2, 2), mg.ones(2, 2, dtype=f64)
    i = mg.tensor([[1, 2], [3, 4]])
    assert _probe("lower", x32, x64, i, 2.5) == (f16, f64, i.dtype, float)
    assert _probe("lower", mg.ones(2, dtype=bf16)) == (f16,)


def test_promote_and_fp32_and_lower_input_categories():
    h, b, s = mg.ones(2, dtype=f16), mg.ones(2, dtype=bf16), mg.ones(2)
    assert _probe("promote", h, s) == (f32, f32)
    assert _probe("promote", h, h, 3.0) == (f16, f16, float)
    assert _probe("promote", h, b) == (f32, f32)          # neither holds the other
    assert _probe("fp32", h, b, s) == (f32, f32, f32)
    assert _probe("lower_input", s, s, h) == (f16, f32, f32)
    assert _probe("passthrough", h, s) == (f16, f32)


def test_real_ops_follow_the_table():
    rng = np.random.default_rng(0)
    x = mg.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    w = mg.Parameter(rng.standard_normal((3, 8)).astype(np.float32))
    with amp.autocast():
        y = F.linear(x, w)
        assert y.dtype == f16
        assert (x @ x.T).dtype == f16
        assert F.exp(y).dtype == f32
        assert y.sum().dtype == f32 and y.mean().dtype == f32
        assert (y + x[:, :3]).dtype == f32                 # fp16 + fp32 promotes
        assert (y + y).dtype == f16
        assert F.relu(y).dtype == f16                      # pass-through
        np.testing.assert_allclose(y.sum().item(), float(y.numpy().astype(np.float64).sum()),
                                   rtol=1e-5)
    assert amp.policy.get("div") == "promote"


def test_softmax_and_losses_run_in_fp32():
    softmax, mse = _op("softmax"), _op("mse_loss")
    x = mg.tensor(np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4))
    with amp.autocast():
        h = x @ mg.eye(4)
        assert h.dtype == f16
        p = softmax(h, axis=-1)
        loss = mse(h, x)
    assert p.dtype == f32 and loss.dtype == f32
    np.testing.assert_allclose(p.numpy().sum(-1), 1.0, rtol=1e-6)
    ref = np.mean((x.numpy().astype(np.float16).astype(np.float32) - x.numpy()) ** 2)
    np.testing.assert_allclose(loss.item(), ref, rtol=1e-6, atol=1e-9)


def test_batch_norm_keeps_fp32_params_and_returns_fp16():
    bn = _op("batch_norm")
    rng = np.random.default_rng(1)
    x = mg.tensor(rng.standard_normal((8, 3, 2, 2)).astype(np.float32))
    w = mg.Parameter(np.ones(3, np.float32))
    b = mg.Parameter(np.zeros(3, np.float32))
    rm, rv = mg.zeros(3), mg.ones(3)
    seen = []

    def hook(phase, fn, inputs, outputs):
        if phase == "forward" and fn.name == "batch_norm":
            seen.append([t.dtype for t in inputs if isinstance(t, mg.Tensor)])

    token = dispatch_hooks.set((hook,))
    try:
        with amp.autocast():
            y = bn(x @ mg.eye(2), rm, rv, w, b, training=True)
    finally:
        dispatch_hooks.reset(token)
    assert y.dtype == f16
    assert seen[0][0] == f16 and all(d == f32 for d in seen[0][1:])
    assert rm.dtype == f32 and np.any(rm.numpy() != 0)     # stats updated in fp32, in place
    y.astype(f32).sum().backward()
    assert w.grad.dtype == f32 and b.grad.dtype == f32
    np.testing.assert_allclose(b.grad.numpy(), 8 * 2 * 2, rtol=1e-3)


def test_binary_cross_entropy_warns_once_and_computes_fp32():
    bce = _op("binary_cross_entropy")
    autocast_mod._bce_warned[0] = False
    p = mg.tensor([0.2, 0.7, 0.9], dtype=f16)
    t = mg.tensor([0.0, 1.0, 1.0])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with amp.autocast():
            a = bce(p, t)
            b = bce(p, t)
    assert a.dtype == f32 and b.dtype == f32
    assert sum("binary_cross_entropy" in str(w.message) for w in rec) == 1
    pp = p.numpy().astype(np.float64)
    ref = -np.mean(t.numpy() * np.log(pp) + (1 - t.numpy()) * np.log(1 - pp))
    np.testing.assert_allclose(a.item(), ref, rtol=1e-5)


# ----------------------------------------------------------------------------- overrides
def test_region_override_only_inside_and_inherited():
    a = mg.ones(2, 2)
    with amp.autocast(fp32_ops=["matmul"], lower_ops="exp"):
        assert (a @ a).dtype == f32
        assert F.exp(a).dtype == f16
        with amp.autocast():                       # nested regions inherit the overrides
            assert (a @ a).dtype == f32
        with amp.autocast(lower_ops=["matmul"]):   # ...unless they override them again
            assert (a @ a).dtype == f16
    with amp.autocast():
        assert (a @ a).dtype == f16 and F.exp(a).dtype == f32


def test_global_policy_set_get_reset_table():
    a = mg.ones(2, 2)
    amp.policy.set("matmul", "fp32")
    assert amp.policy.get("matmul") == "fp32" and amp.policy.table()["matmul"] == "fp32"
    with amp.autocast():
        assert (a @ a).dtype == f32
    amp.policy.reset()
    with amp.autocast():
        assert (a @ a).dtype == f16
    t = amp.policy.table()
    t["matmul"] = "fp32"                            # a copy
    assert amp.policy.get("matmul") == "lower"
    assert amp.policy.get("no_such_op") == "passthrough"
    with pytest.raises(ValueError) as err:
        amp.policy.set("matmul", "half")
    assert all(c in str(err.value) for c in amp.policy.CATEGORIES)
    with pytest.raises(ValueError, match="passthrough"):
        amp.policy.set("cast", "lower")


def test_every_functional_op_has_a_row():
    missing = amp.policy.missing_rows()
    print("ops without a policy row:", missing)
    assert missing == [], f"add rows to minigrad/precision/policy.py for {missing}"
    table = amp.policy.table()
    for name in ("matmul", "linear", "conv2d", "exp", "softmax", "mse_loss", "add", "batch_norm",
                 "binary_cross_entropy", "relu", "cast"):
        assert name in table


def test_every_row_names_an_op():
    """A row is an op of minigrad.functional or the name of a Function it dispatches (the
    backward ops), never a name nothing runs as (issue 21: 46 such rows once)."""
    import minigrad.functional as F
    from minigrad.precision.policy import _DEFAULT, functional_op_names

    names = functional_op_names()
    dead = sorted(n for n in _DEFAULT if not hasattr(F, n) and n not in names)
    assert dead == [], f"policy rows no op runs as: {dead}"


def test_passthrough_ops_touch_nothing():
    """A pass-through op (relu) and a promote op on inputs of one dtype (add) get their inputs
    back as the same tuple, with no cast and no new tensor: the per-op cost is a dict lookup
    (measured in benchmarks/overhead.py, not asserted here)."""
    pol = autocast_mod.make_policy(f16, f32, None)
    x = (mg.ones(16, 16), mg.ones(16, 16))

    class Relu:
        name = "relu"

    class Add:
        name = "add"

    for cls in (Relu, Add):
        with _CastCounter() as cc:
            inputs, _, reason = pol.cast_inputs(cls, x)
        assert inputs is x and reason is None and cc.n == 0, cls.name


# ----------------------------------------------------------------------------- cast cache
def test_cache_casts_each_param_once_per_region():
    w = mg.Parameter(np.eye(3, dtype=np.float32))
    x = mg.ones(2, 3)
    with _CastCounter() as cc, amp.autocast():
        y1, y2 = x @ w, x @ w
        pol = dispatch_policy.get()
        assert len(pol.cache) == 1
    assert cc.n == 3                      # w once, x (not a parameter) twice
    assert len(pol.cache) == 0            # cleared at exit
    (y1.astype(f32).sum() + y2.astype(f32).sum()).backward()
    assert w.grad.dtype == f32
    np.testing.assert_allclose(w.grad.numpy(), np.full((3, 3), 4.0))
    with _CastCounter() as cc, amp.autocast(cache_enabled=False):
        x @ w, x @ w
    assert cc.n == 4


def test_cache_invalidated_by_inplace_update():
    w = mg.Parameter(np.eye(2, dtype=np.float32))
    x = mg.ones(1, 2)
    with _CastCounter() as cc, amp.autocast():
        a = x @ w
        with mg.no_grad():
            w.add_(1.0)                    # bumps _version
        b = x @ w
    assert cc.n == 4
    np.testing.assert_array_equal(a.numpy(), [[1, 1]])
    np.testing.assert_array_equal(b.numpy(), [[3, 3]])


def test_no_grad_cast_never_served_to_recorded_op():
    w = mg.Parameter(np.full((2, 2), 0.5, np.float32))
    x = mg.ones(1, 2)
    with amp.autocast():
        with mg.no_grad():
            y0 = x @ w
        y = x @ w
    assert y0.creator is None and y.creator is not None
    y.astype(f32).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.ones((2, 2)))


def test_cache_survives_training_loop_inside_one_region():
    from minigrad.optimizer import SGD

    w = mg.Parameter(np.full((2, 1), 1.0, np.float32))
    opt = SGD([w], lr=0.1)
    x = mg.ones(4, 2)
    with amp.autocast():
        for _ in range(3):                 # backward frees the cast's graph: it is recast
            loss = (x @ w).astype(f32).mean()
            loss.backward()
            opt.step().clear_grad()
    np.testing.assert_allclose(w.numpy(), np.full((2, 1), 0.7), rtol=1e-3)


# ----------------------------------------------------------------------------- backward
def _backward_dtypes(fn_inside):
    seen = []

    def hook(phase, fn, inputs, outputs):
        if phase == "backward":
            seen.append((fn.name, tuple(g.dtype for g in outputs if g is not None)))

    w = mg.Parameter(np.array([[0.5, -1.0], [2.0, 0.25]], np.float32))
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]])
    with amp.autocast():
        loss = F.exp((x @ w) * 0.1).sum()
        token = dispatch_hooks.set((hook,))
        try:
            if fn_inside:
                loss.backward()
        finally:
            dispatch_hooks.reset(token)
    if not fn_inside:
        token = dispatch_hooks.set((hook,))
        try:
            loss.backward()
        finally:
            dispatch_hooks.reset(token)
    return seen, w.grad


def test_backward_replays_forward_dtypes_inside_or_outside():
    inside, g_in = _backward_dtypes(True)
    outside, g_out = _backward_dtypes(False)
    assert inside == outside
    assert ("matmul", (f16,)) in inside
    assert g_in.dtype == f32
    np.testing.assert_array_equal(g_in.numpy(), g_out.numpy())
    # reference: d/dw sum(exp(0.1 * x @ w)) with x, w rounded to fp16 for the matmul
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    w = np.array([[0.5, -1.0], [2.0, 0.25]])
    ref = x.T @ (0.1 * np.exp(0.1 * (x @ w)))
    np.testing.assert_allclose(g_in.numpy(), ref, rtol=3e-3)


def test_create_graph_under_autocast():
    w = mg.Parameter(np.array([1.5, -0.5], np.float32))
    x = mg.tensor([[2.0, 1.0]])
    with amp.autocast():
        y = ((x @ w) ** 3).sum()          # matmul fp16, pow fp32
        (gw,) = grad(y, [w], create_graph=True)
    assert gw.dtype == f32
    (ggw,) = grad(gw.sum(), [w])          # outside the region: replays recorded dtypes
    s = 2.0 * 1.5 + 1.0 * -0.5
    np.testing.assert_allclose(gw.numpy(), 3 * s ** 2 * np.array([2.0, 1.0]), rtol=1e-3)
    np.testing.assert_allclose(ggw.numpy(), 6 * s * np.array([2.0, 1.0]) * 3.0, rtol=1e-3)
    assert ggw.dtype == f32


# ----------------------------------------------------------------------------- issue 15
def test_raw_data_write_invalidates_the_cast_cache():
    w = mg.Parameter(np.eye(2, dtype=np.float32))
    x = mg.ones(1, 2)
    with _CastCounter() as cc, amp.autocast():
        a = x @ w
        c = x @ w                          # unchanged: the cached node is served
        w.data[...] = 3.0                  # no version bump: only the content says it changed
        b = x @ w
    assert cc.n == 5                       # w twice, x three times
    np.testing.assert_array_equal(a.numpy(), [[1, 1]])
    np.testing.assert_array_equal(c.numpy(), [[1, 1]])
    np.testing.assert_array_equal(b.numpy(), [[6, 6]])
    (a.astype(f32).sum() + b.astype(f32).sum()).backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 2), 2.0))


def test_cache_hit_keeps_sharing_one_cast_node():
    w = mg.Parameter(np.full((2, 2), np.nan, np.float32))   # NaNs compare bitwise, not as !=
    with amp.autocast():
        pol = dispatch_policy.get()
        c1 = pol._cast(w, f16)
        c2 = pol._cast(w, f16)
    assert c1 is c2


def test_disabled_region_accepts_any_dtype_like_pytorch():
    for use_amp in (True, False):
        with amp.autocast(dtype="float16", enabled=use_amp):
            assert amp.is_autocast_enabled() == use_amp
    with amp.autocast(dtype="float32", enabled=False):
        assert not amp.is_autocast_enabled()
        assert (mg.ones(2, 2) @ mg.ones(2, 2)).dtype == f32
    with pytest.raises(ValueError, match="enabled=False"):
        amp.autocast(dtype="float32")


def test_decorating_a_non_callable_raises_type_error():
    with pytest.raises(TypeError, match="callable"):
        amp.autocast()(3)


def test_region_dtypes_visible_through_module_properties():
    with amp.autocast(low_prec_dtype="bfloat16"):
        assert amp.low_prec_dtype == bf16 and amp.high_prec_dtype == f32 and amp.enabled
        assert (mg.ones(2, 2) @ mg.ones(2, 2)).dtype == bf16
        with amp.autocast(low_prec_dtype="float16", high_prec_dtype="float16"):
            assert amp.low_prec_dtype == f16 and amp.high_prec_dtype == f16
            assert F.exp(mg.ones(2)).dtype == f16        # MegEngine accepts a half "high"
        assert amp.low_prec_dtype == bf16
    assert amp.low_prec_dtype == f16 and not amp.enabled


def test_positional_orders_megengine_and_pytorch():
    r = amp.autocast(True, "bfloat16", False)               # MegEngine / minigrad order
    assert (r.enabled, r.dtype, r.cache_enabled, r.device_type) == (True, bf16, False, None)
    r = amp.autocast("cuda", mg.bfloat16, False, True)       # PyTorch order
    assert (r.enabled, r.dtype, r.cache_enabled, r.device_type) == (False, bf16, True, "cuda")
    assert amp.autocast().dtype == f16                      # minigrad's default is unchanged
    assert amp.autocast("cpu").dtype == bf16 and amp.autocast(device_type="cuda").dtype == f16
    with pytest.raises(TypeError, match="multiple values"):
        amp.autocast("cpu", device_type="cuda")
    with pytest.raises(ValueError, match="device_type"):
        amp.autocast("xpu")
    with pytest.raises(TypeError, match="enabled must be a bool"):
        amp.autocast(mg.float16)                             # not silently "enabled"


def test_grad_accepts_a_generator_of_inputs():
    lin = mg.nn.Linear(3, 2)
    loss = (lin(mg.ones(4, 3)) ** 2).sum()
    gs = grad(loss, lin.parameters(), create_graph=True)
    assert len(gs) == 2 and all(g is not None for g in gs)
    assert [g.shape for g in gs] == [(2, 3), (2,)]


@pytest.mark.parametrize("call", [
    lambda: amp.autocast(fp32_ops=["matmull"]),
    lambda: amp.autocast(lower_ops="sofmax"),
    lambda: amp.policy.set("matmull", "fp32"),
])
def test_misspelled_op_names_are_refused_with_the_closest(call):
    with pytest.raises(ValueError, match="did you mean 'matmul'|did you mean 'softmax'"):
        call()


def test_user_function_names_are_accepted_once_defined():
    amp.policy.set("amp_test_probe", "fp32")
    with amp.autocast(lower_ops=["amp_test_probe"]):
        pass


@pytest.mark.parametrize("low", [mg.float16, mg.bfloat16])
def test_autocast_cast_records_as_cast_apply(low):
    """Autocast's casts skip ``Function.apply``'s dispatch (``Cast.float_cast``) but record the
    same node: the same bits and dtype, a Cast creator whose backward returns float32, no
    node without grad, and hooks still see every cast (they take ``apply``)."""
    from minigrad.core.function import Cast

    rng = np.random.default_rng(0)
    w = mg.Parameter(rng.standard_normal((3, 4)).astype(np.float32) * 1e3)
    x = mg.tensor(rng.standard_normal((2, 3)).astype(np.float32))
    fast, slow = Cast.float_cast(w, np.dtype(low)), Cast.apply(w, dtype=np.dtype(low))
    assert fast.dtype == slow.dtype == low
    np.testing.assert_array_equal(fast.numpy().view(np.uint16), slow.numpy().view(np.uint16))
    assert type(fast.creator) is Cast and fast.requires_grad
    (fast.astype(f32) * 3).sum().backward()
    assert w.grad.dtype == f32
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 3.0, np.float32))
    with mg.no_grad():
        assert Cast.float_cast(w, np.dtype(low)).creator is None
    assert Cast.float_cast(x, np.dtype(low)).creator is None  # x needs no gradient
    with _CastCounter() as cc, amp.autocast(dtype=low):
        x @ w
    assert cc.n == 2
