"""Issue 21: the peers' spellings that ran but computed something else than the peer does.

One section per difference (MindSpore's fixed loss scale, OneFlow's clipping through parameter
groups, PyTorch's ctx-protocol Functions and custom_fwd, ``Tensor.max(dim)`` and its siblings,
``Tensor.std``/``var``, the default arguments of the peers' functional paths), each asserting
the peer's values; PyTorch (CPU) is the oracle where it has the op, the peers' documented
examples elsewhere.
"""

import copy
import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
import minigrad.nn as nn
from minigrad import amp
from minigrad.optimizer import SGD, Momentum

RNG = np.random.default_rng(0)


def _data(n=8):
    rng = np.random.default_rng(1)
    return (mg.tensor(rng.standard_normal((n, 4)).astype(np.float32)),
            mg.tensor(rng.integers(0, 3, n)))


def _net(seed=0):
    mg.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))


def _weights(net):
    return [p.numpy().copy() for p in net.parameters()]


# ============================================================== 1. MindSpore's fixed loss scale
S = 1024.0


def _unscaled_reference(steps=2):
    """MindSpore without loss scaling: Momentum(loss_scale=1), TrainOneStepCell(sens=1)."""
    net = _net()
    step = amp.build_train_network(net, Momentum(net.trainable_params(), 0.05, 0.9),
                                   nn.CrossEntropyLoss(), level="O0")
    for _ in range(steps):
        step(*_data())
    return _weights(net)


def test_fixed_manager_without_drop_pairs_with_the_optimizers_loss_scale():
    # MindSpore's documented pairing: the cell hands the optimizer the gradients of S * loss,
    # Momentum(loss_scale=S) divides them once; the update is unscaled training's.
    net = _net()
    step = amp.build_train_network(
        net, Momentum(net.trainable_params(), 0.05, 0.9, loss_scale=S), nn.CrossEntropyLoss(),
        level="O0", loss_scale_manager=amp.FixedLossScaleManager(S, drop_overflow_update=False))
    assert isinstance(step, nn.TrainOneStepCell)
    for _ in range(2):
        step(*_data())
    for got, want in zip(_weights(net), _unscaled_reference()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_train_one_step_cell_sens_is_not_unscaled_by_the_cell():
    net = _net()
    cell = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()),
                               Momentum(net.trainable_params(), 0.05, 0.9, loss_scale=S),
                               sens=S)
    for _ in range(2):
        cell(*_data())
    for got, want in zip(_weights(net), _unscaled_reference()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # an optimizer that does not divide (loss_scale 1, MindSpore's default) gets S times the
    # unscaled gradient, as in MindSpore
    a, b = _net(), _net()
    before = _weights(a)
    nn.TrainOneStepCell(nn.WithLossCell(a, nn.CrossEntropyLoss()),
                        SGD(a.parameters(), lr=1e-3), sens=8.0)(*_data())
    nn.TrainOneStepCell(nn.WithLossCell(b, nn.CrossEntropyLoss()),
                        SGD(b.parameters(), lr=1e-3))(*_data())
    for w0, wa, wb in zip(before, _weights(a), _weights(b)):
        np.testing.assert_allclose(wa - w0, 8.0 * (wb - w0), rtol=1e-2, atol=1e-6)


@pytest.mark.parametrize("manager", [
    lambda: amp.DynamicLossScaleManager(init_loss_scale=S, scale_window=1000),
    lambda: amp.FixedLossScaleManager(S, drop_overflow_update=True),
], ids=["dynamic", "fixed_drop"])
def test_scale_sense_cells_unscale_once(manager):
    # TrainOneStepWithLossScaleCell unscales; the optimizer keeps loss_scale=1 (MindSpore's
    # examples): unscaled training again
    net = _net()
    step = amp.build_train_network(net, Momentum(net.trainable_params(), 0.05, 0.9),
                                   nn.CrossEntropyLoss(), level="O0",
                                   loss_scale_manager=manager())
    assert isinstance(step, nn.TrainOneStepWithLossScaleCell)
    for _ in range(2):
        step(*_data())
    for got, want in zip(_weights(net), _unscaled_reference()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_sens_step_still_refuses_nonfinite_gradients():
    net = _net()
    step = amp.build_train_network(
        net, Momentum(net.trainable_params(), 0.05, 0.9, loss_scale=S), nn.CrossEntropyLoss(),
        level="O0", loss_scale_manager=amp.FixedLossScaleManager(S, drop_overflow_update=False))
    x, y = _data()
    bad = x.numpy().copy()
    bad[0, 0] = np.inf
    before = _weights(net)
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match="refuses"):
        step(mg.tensor(bad), y)
    for got, want in zip(_weights(net), before):
        np.testing.assert_array_equal(got, want)


def test_momentum_loss_scale_keeps_a_carried_overflow_flag():
    # a sync-free scaler's unscale(tensors) marks the gradients with its found-inf flag; the
    # division by loss_scale used to replace them and drop the flag, so the step ran on NaN
    w = mg.Parameter(np.ones(3, np.float32))
    w.grad = mg.tensor(np.array([1.0, np.inf, 1.0], np.float32))
    scaler = amp.GradScaler(init_scale=4.0, sync_free=True)
    with np.errstate(all="ignore"):
        scaler.unscale([w])
        Momentum([w], 0.1, 0.9, loss_scale=2.0).step()
    np.testing.assert_array_equal(w.numpy(), np.ones(3))


# ======================================================= 2. OneFlow's clipping in param groups
def test_clip_grad_max_norm_in_a_parameter_group_clips():
    w = mg.Parameter(np.zeros(2, np.float32))
    v = mg.Parameter(np.zeros(2, np.float32))
    opt = mg.optim.SGD([{"params": [w], "clip_grad_max_norm": 1.0, "clip_grad_norm_type": 2.0},
                        {"params": [v]}], lr=1.0)
    w.grad = mg.tensor(np.array([3.0, 4.0], np.float32))
    v.grad = mg.tensor(np.array([3.0, 4.0], np.float32))
    opt.step()
    np.testing.assert_allclose(w.numpy(), [-0.6, -0.8], rtol=1e-5)   # norm 5 -> 1
    np.testing.assert_allclose(v.numpy(), [-3.0, -4.0])              # its group: no clipping
    w.grad = mg.tensor(np.array([0.0, -10.0], np.float32))
    mg.optim.SGD([{"params": [w], "clip_grad_max_norm": 2.0,
                   "clip_grad_norm_type": float("inf")}], lr=1.0).step()
    np.testing.assert_allclose(w.numpy(), [-0.6, 1.2], rtol=1e-5)


def test_clip_after_unscaling_inside_an_nn_graph():
    def model():
        mg.manual_seed(3)
        return nn.Linear(4, 3)

    class G(nn.Graph):
        def __init__(self, m, opt):
            super().__init__()
            self.m = m
            self.add_optimizer(opt)
            self.set_grad_scaler(amp.StaticGradScaler(2.0 ** 10))

        def build(self, x, y):
            loss = F.cross_entropy(self.m(x), y)
            loss.backward()
            return loss

    x, y = _data()
    m = model()
    G(m, SGD([{"params": m.parameters(), "clip_grad_max_norm": 0.1,
               "clip_grad_norm_type": 2.0}], lr=1.0))(x, y)
    ref = model()
    F.cross_entropy(ref(x), y).backward()
    total = mg.optimizer.clip_grad_norm(ref.parameters(), 0.1)
    assert float(total.item()) > 0.1            # the clip acts
    SGD(ref.parameters(), lr=1.0).step()
    for p, q in zip(m.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)


def test_oneflow_clip_grad_method():
    w = mg.Parameter(np.zeros(2, np.float32))
    opt = SGD([{"params": [w], "clip_grad_max_norm": 1.0, "clip_grad_norm_type": 2.0}], lr=1.0)
    w.grad = mg.tensor(np.array([3.0, 4.0], np.float32))
    opt.clip_grad()
    np.testing.assert_allclose(w.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    opt.step()                                     # clipping again changes nothing
    np.testing.assert_allclose(w.numpy(), [-0.6, -0.8], rtol=1e-5)
    w.grad = mg.tensor(np.array([np.nan, 1.0], np.float32))
    with pytest.raises(RuntimeError, match="nan"):
        opt.clip_grad()                            # OneFlow's clip_grad raises on a NaN norm


@pytest.mark.parametrize("group, match", [
    ({"clip_grad_max_norm": 1.0}, "clip_grad_norm_type"),       # OneFlow ignores it alone
    ({"clip_grad_norm_type": 2.0}, "clip_grad_max_norm"),
    ({"clip_grad_max_norm": 0.0, "clip_grad_norm_type": 2.0}, "> 0"),
    ({"betas": (0.9, 0.99)}, "betas"),                           # Adam's, in an SGD group
    ({"amsgrad": True}, "amsgrad"),                               # Adam's, in an SGD group
    ({"do_bias_correction": False}, "do_bias_correction"),        # OneFlow's Adam
    ({"grad_centralization": True}, "grad_centralization"),       # MindSpore's groups
])
def test_group_keys_that_would_change_numbers_are_refused(group, match):
    w = mg.Parameter(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=match):
        SGD([{"params": [w], **group}], lr=0.1)


def test_a_groups_maximize_is_honoured():
    w, v = (mg.Parameter(np.zeros(2, np.float32)) for _ in range(2))
    opt = SGD([{"params": [w], "maximize": True}, {"params": [v]}], lr=0.1)
    w.grad, v.grad = mg.ones(2), mg.ones(2)
    opt.step()
    assert w.numpy().tolist() == pytest.approx([0.1, 0.1])    # ascends, as PyTorch's group
    assert v.numpy().tolist() == pytest.approx([-0.1, -0.1])


def test_free_form_and_harmless_group_keys_are_kept():
    w = mg.Parameter(np.zeros(2, np.float32))
    opt = SGD([{"params": [w], "name": "head", "maximize": False, "foreach": None}], lr=0.1)
    assert opt.param_groups[0]["name"] == "head"      # PyTorch keeps such keys too
    mg.optim.Adam([{"params": [mg.Parameter(np.zeros(2, np.float32))],
                    "amsgrad": True, "do_bias_correction": True}])


# ===================================================== 3. PyTorch's ctx-protocol Functions
class MyMM(mg.autograd.Function):
    """PyTorch's autocast docs example, spelled with minigrad."""

    @staticmethod
    @mg.amp.custom_fwd(device_type="cuda")
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a.mm(b)

    @staticmethod
    @mg.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad.mm(b.t()), a.t().mm(grad)


def _torch_mymm(torch):
    class TorchMM(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad.mm(b.t()), a.t().mm(grad)

    return TorchMM


def test_ctx_function_values_grads_and_autocast_dtype_match_pytorch():
    torch = pytest.importorskip("torch")
    a_np = RNG.standard_normal((3, 4)).astype(np.float32)
    b_np = RNG.standard_normal((4, 2)).astype(np.float32)
    cot = RNG.standard_normal((3, 2)).astype(np.float32)
    TorchMM = _torch_mymm(torch)
    for region in (False, True):
        a, b = mg.tensor(a_np, requires_grad=True), mg.tensor(b_np, requires_grad=True)
        ta = torch.tensor(a_np, requires_grad=True)
        tb = torch.tensor(b_np, requires_grad=True)
        with mg.autocast("cuda", enabled=region):
            y = MyMM.apply(a, b)
        with torch.autocast("cpu", dtype=torch.float16, enabled=region):
            ty = TorchMM.apply(ta, tb)
        assert str(y.dtype) == str(ty.dtype).replace("torch.", "")   # float16 in a region
        np.testing.assert_allclose(y.numpy().astype(np.float32), ty.detach().float().numpy(),
                                   rtol=2e-3, atol=2e-3)
        (y.astype("float32") * mg.tensor(cot)).sum().backward()
        (ty.float() * torch.tensor(cot)).sum().backward()
        assert a.grad.dtype == mg.float32
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=2e-3, atol=2e-3)


def test_custom_fwd_cast_inputs_on_a_ctx_function():
    class Mul(mg.autograd.Function):
        @staticmethod
        @mg.amp.custom_fwd(cast_inputs=mg.float32)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @mg.amp.custom_bwd
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g.mm(b.t()), a.t().mm(g)

    a = mg.tensor(RNG.standard_normal((2, 3)).astype(np.float16), requires_grad=True)
    b = mg.tensor(RNG.standard_normal((3, 2)).astype(np.float32), requires_grad=True)
    with mg.autocast("cuda"):
        y = Mul.apply(a, b)
    assert y.dtype == mg.float32                 # inputs cast, autocast off inside
    y.sum().backward()
    assert a.grad.dtype == mg.float16 and b.grad.dtype == mg.float32


def test_ctx_protocol_details_match_pytorch():
    torch = pytest.importorskip("torch")
    seen = {}

    def make(lib, key):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.k = k
                ctx.save_for_backward(x)
                idx = x.argmax()
                ctx.mark_non_differentiable(idx)
                ctx.set_materialize_grads(False)
                return x * x * k, idx, x + 1

            @staticmethod
            def backward(ctx, g, g_idx, g_unused):
                seen[key] = (ctx.needs_input_grad, g_idx is None, g_unused is None)
                (x,) = ctx.saved_tensors
                return 2 * x * g * ctx.k, None

        return Sq

    x = mg.tensor([1.0, 3.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 3.0, 2.0], requires_grad=True)
    y, i, _ = make(mg, "mg").apply(x, 2.0)
    ty, ti, _ = make(torch, "torch").apply(tx, 2.0)
    assert y.requires_grad and not i.requires_grad and not ti.requires_grad
    assert int(i.item()) == int(ti.item()) == 1
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    assert seen["mg"] == seen["torch"] == ((True, False), True, True)


def test_ctx_protocol_setup_context_and_errors():
    class Cube(mg.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    Cube.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])
    (gx,) = mg.autograd.grad(Cube.apply(x).sum(), [x], create_graph=True)
    (ggx,) = mg.autograd.grad(gx.sum(), [x])                     # double backward
    np.testing.assert_allclose(ggx.numpy(), [6.0, 12.0])

    class TooFew(mg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        TooFew.apply(x, x).sum().backward()
    with pytest.raises(TypeError, match="positional"):
        TooFew.apply(x, b=x)
    # the engine's own protocol (forward on arrays) is unchanged
    assert mg.autodiff.Function is mg.autograd.Function


# =========================================================== 4. max(dim) -> (values, indices)
_X = np.array([[1.0, 5.0, 3.0, 0.5], [4.0, 2.0, 6.0, 7.0], [0.0, -1.0, 2.0, 1.5]], np.float32)


def test_max_along_a_dim_returns_values_and_indices():
    out = mg.tensor(_X[:2])                     # a batch of two rows
    _, pred = out.max(1)                       # the PyTorch idiom: the predicted classes
    np.testing.assert_array_equal(pred.numpy(), [1, 3])
    r = out.max(1)
    assert r.values.shape == r.indices.shape == (2,) and str(r.indices.dtype) == "int64"
    v, i = out.min(dim=0, keepdim=True)
    np.testing.assert_array_equal(v.numpy(), [[1.0, 2.0, 3.0, 0.5]])
    np.testing.assert_array_equal(i.numpy(), [[0, 1, 0, 0]])
    assert float(out.max().item()) == 7.0       # no dim: the value
    # the PyTorch top-level spelling, and its elementwise form
    np.testing.assert_array_equal(mg.max(out, 1).indices.numpy(), [1, 3])
    np.testing.assert_array_equal(mg.max(out, mg.full((4,), 3.0)).numpy(),
                                  np.maximum(_X[:2], 3.0))
    np.testing.assert_array_equal(out.min(mg.full((4,), 3.0)).numpy(), np.minimum(_X[:2], 3.0))
    # MegEngine's spelling, F.max(x, axis), is the values
    np.testing.assert_array_equal(F.max(out, axis=1).numpy(), [5.0, 7.0])


@pytest.mark.parametrize("call", [
    lambda t, m: t.max(1), lambda t, m: t.min(0), lambda t, m: t.max(dim=-1, keepdim=True),
    lambda t, m: t.sort(1), lambda t, m: t.sort(0, True), lambda t, m: t.sort(descending=True),
    lambda t, m: t.topk(2), lambda t, m: t.topk(3, dim=0, largest=False),
    lambda t, m: t.kthvalue(2, 1), lambda t, m: t.kthvalue(3, 0, True),
    lambda t, m: t.median(1), lambda t, m: t.median(0, keepdim=True),
    lambda t, m: t.mode(1), lambda t, m: m.sort(t, dim=0), lambda t, m: m.topk(t, 1),
    lambda t, m: m.median(t, 1), lambda t, m: m.kthvalue(t, 1, 0), lambda t, m: m.mode(t),
], ids=["max", "min", "max_keepdim", "sort", "sort_desc", "sort_kw", "topk", "topk_small",
        "kthvalue", "kthvalue_keep", "median", "median_keep", "mode", "mg.sort", "mg.topk",
        "mg.median", "mg.kthvalue", "mg.mode"])
def test_order_statistics_match_pytorch(call):
    torch = pytest.importorskip("torch")
    x = mg.tensor(_X.astype(np.float64), requires_grad=True)
    tx = torch.tensor(_X.astype(np.float64), requires_grad=True)
    got, want = call(x, mg), call(tx, torch)
    assert type(got).__name__ == type(want).__name__   # torch.return_types.<op>
    np.testing.assert_array_equal(got.values.numpy(), want.values.detach().numpy())
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    cot = RNG.standard_normal(want.values.shape)
    (got.values * mg.tensor(cot)).sum().backward()
    (want.values * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_order_statistics_without_dim_and_argsort_match_pytorch():
    torch = pytest.importorskip("torch")
    x, tx = mg.tensor(_X), torch.tensor(_X)
    assert float(x.median().item()) == float(tx.median().item())
    assert float(mg.median(x).item()) == float(torch.median(tx).item())
    np.testing.assert_array_equal(x.argsort(1, True).numpy(), tx.argsort(1, True).numpy())
    np.testing.assert_array_equal(mg.argsort(x, dim=0).numpy(), torch.argsort(tx, dim=0).numpy())
    ties = np.array([1.0, 2.0, 1.0, 2.0, 3.0], np.float32)
    m, tm = mg.tensor(ties).mode(), torch.tensor(ties).mode()
    assert (float(m.values.item()), int(m.indices.item())) == (float(tm.values.item()),
                                                             int(tm.indices.item()))
    nan = np.array([1.0, np.nan, 2.0], np.float32)
    r, tr = mg.tensor(nan).median(0), torch.tensor(nan).median(0)
    assert np.isnan(r.values.item()) and int(r.indices.item()) == int(tr.indices.item())


def test_megengine_sort_and_topk_spellings():
    # MegEngine's F.sort(inp, descending=False, dim=-1), F.argsort(inp, descending=False) and
    # F.topk(inp, k, descending=True) (MegEngine's default since 1.13, its docs example)
    x = mg.tensor(np.array([2, 4, 6, 8, 7, 5, 3, 1], np.float32))
    top, idx = F.topk(x, 5, descending=False)
    np.testing.assert_array_equal(top.numpy(), [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(idx.numpy(), [7, 0, 6, 1, 5])
    np.testing.assert_array_equal(F.topk(x, 2).values.numpy(), [8, 7])
    kth = F.topk(x, 3, kth_only=True)
    assert float(kth.values.item()) == 6 and int(kth.indices.item()) == 2
    out, ind = F.sort(mg.tensor(np.array([1, 2], np.float32)))
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(F.argsort(x, True).numpy()[:2], [3, 4])


# ================================================================== 5. std / var: N - 1
def test_tensor_std_and_var_divide_by_n_minus_one():
    torch = pytest.importorskip("torch")
    x, tx = mg.tensor(_X), torch.tensor(_X)
    for got, want in [
        (x.std(), tx.std()), (x.var(), tx.var()), (x.var(0), tx.var(0)),
        (x.std(1, unbiased=False), tx.std(1, unbiased=False)),
        (x.var(dim=1, keepdim=True), tx.var(dim=1, keepdim=True)),
        (x.var(correction=0), tx.var(correction=0)),
        (x.std(dim=(0, 1), correction=2), tx.std(dim=(0, 1), correction=2)),
        (x.var(False), tx.var(False)), (mg.std(x, 0), torch.std(tx, 0)),
        (mg.var(x, 1, keepdim=True), torch.var(tx, 1, keepdim=True)),
    ]:
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="one argument"):
        x.var(unbiased=True, correction=1)


def test_functional_var_and_std_keep_megengines_n():
    # MegEngine's docs: F.var([[1, 2], [3, 4]]) is 1.25 and F.std of it 1.118034
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert float(F.var(x).item()) == 1.25
    np.testing.assert_allclose(F.std(x).item(), 1.118034, rtol=1e-6)
    assert float(x.var().item()) == pytest.approx(5.0 / 3.0)     # the Tensor method: PyTorch's


# ======================================================= 6. defaults of the peers' paths
_IMG = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2)


def test_megengine_interpolate_defaults_to_bilinear():
    # MegEngine's docs example of F.vision.interpolate / F.nn.interpolate
    want = [[1.0, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5], [2.5, 2.75, 3.25, 3.5],
            [3.0, 3.25, 3.75, 4.0]]
    np.testing.assert_allclose(F.nn.interpolate(mg.tensor(_IMG), [4, 4]).numpy()[0, 0], want)
    np.testing.assert_allclose(F.nn.interpolate(mg.tensor(_IMG), scale_factor=2.0).numpy()[0, 0],
                               want)
    with pytest.raises(ValueError, match="align_corners"):
        F.nn.interpolate(mg.tensor(_IMG), 4, mode="nearest", align_corners=False)


def test_pytorch_interpolate_defaults_to_nearest():
    torch = pytest.importorskip("torch")
    import minigrad.nn.functional as tF

    want = torch.nn.functional.interpolate(torch.tensor(_IMG), scale_factor=2).numpy()
    np.testing.assert_array_equal(tF.interpolate(mg.tensor(_IMG), scale_factor=2).numpy(), want)
    np.testing.assert_array_equal(F.interpolate(mg.tensor(_IMG), scale_factor=2).numpy(), want)


def test_softmax_without_an_axis_takes_the_peers_implicit_axis():
    torch = pytest.importorskip("torch")
    for shape in [(5,), (3, 5), (2, 3, 4), (2, 3, 4, 5)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # PyTorch: the implicit choice is deprecated
            want = torch.nn.functional.softmax(torch.tensor(x)).numpy()
            want_log = torch.nn.functional.log_softmax(torch.tensor(x)).numpy()
            want_mod = torch.nn.Softmax()(torch.tensor(x)).numpy()
        for got in (F.softmax(mg.tensor(x)), F.nn.softmax(mg.tensor(x)),
                    nn.Softmax()(mg.tensor(x))):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(want_mod, want)
        np.testing.assert_allclose(F.log_softmax(mg.tensor(x)).numpy(), want_log, rtol=1e-5,
                                   atol=1e-6)


def test_megengine_avg_pool2d_leaves_the_padding_out():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32)
    tf = torch.nn.functional
    want = tf.avg_pool2d(torch.tensor(x), 3, 2, 1, count_include_pad=False).numpy()
    np.testing.assert_allclose(F.nn.avg_pool2d(mg.tensor(x), 3, 2, 1).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(
        F.avg_pool2d(mg.tensor(x), 3, 2, 1, count_include_pad=False).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(F.nn.avg_pool2d(mg.tensor(x), 3, 2, 1, mode="average").numpy(),
                               tf.avg_pool2d(torch.tensor(x), 3, 2, 1).numpy(), rtol=1e-5)
    np.testing.assert_allclose(F.avg_pool2d(mg.tensor(x), 3, 2, 1).numpy(),
                               tf.avg_pool2d(torch.tensor(x), 3, 2, 1).numpy(), rtol=1e-5)


def test_megengine_batch_norm_momentum_convention():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((6, 3, 2, 2)).astype(np.float32)
    rm, rv = mg.zeros(3), mg.ones(3)
    trm, trv = torch.zeros(3), torch.ones(3)
    # MegEngine's momentum 0.9 keeps 90% of the running statistics: PyTorch's 0.1
    out = F.nn.batch_norm(mg.tensor(x), rm, rv, training=True, momentum=0.9)
    want = torch.nn.functional.batch_norm(torch.tensor(x), trm, trv, training=True,
                                          momentum=0.1)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-5)
    rm2 = mg.zeros(3)
    out2, new_mean, _ = F.nn.batch_norm(mg.tensor(x), rm2, mg.ones(3), training=True,
                                        inplace=False)
    np.testing.assert_allclose(new_mean.numpy(), trm.numpy(), rtol=1e-5, atol=1e-7)
    assert float(np.abs(rm2.numpy()).max()) == 0.0         # not in place


def test_megengine_layer_norm_and_group_norm_take_affine_first():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    w, b = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    got = F.nn.layer_norm(mg.tensor(x), (3,), True, mg.tensor(w), mg.tensor(b))
    want = tf.layer_norm(torch.tensor(x), (3,), torch.tensor(w), torch.tensor(b))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    gw, gb = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    got = F.nn.group_norm(mg.tensor(x), 2, True, mg.tensor(gw), mg.tensor(gb))
    want = tf.group_norm(torch.tensor(x), 2, torch.tensor(gw), torch.tensor(gb))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.nn.layer_norm(mg.tensor(x), (3,), False).numpy(),
                               tf.layer_norm(torch.tensor(x), (3,)).numpy(), rtol=1e-5, atol=1e-6)


def test_megengine_normalize_defaults_to_all_elements():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    np.testing.assert_allclose(F.nn.normalize(mg.tensor(x)).numpy(), x / np.linalg.norm(x),
                               rtol=1e-6)
    # MegEngine's docs example
    np.testing.assert_allclose(F.nn.normalize(mg.tensor(x), ord=2, axis=1).numpy(),
                               [[0.2673, 0.5345, 0.8018], [0.4558, 0.5698, 0.6838]], atol=1e-4)


def test_pytorch_pad_pads_the_last_dims():
    torch = pytest.importorskip("torch")
    import minigrad.nn.functional as tF

    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    for pad, mode in [((1, 1), "constant"), ((1, 2, 0, 1), "constant"), ((1, 1), "reflect"),
                      ((2, 1), "replicate"), ((1, 1, 1, 1), "circular")]:
        want = torch.nn.functional.pad(torch.tensor(x), pad, mode).numpy()
        np.testing.assert_array_equal(tF.pad(mg.tensor(x), pad, mode).numpy(), want)
    want = torch.nn.functional.pad(torch.tensor(x), (1, 1), value=2.5).numpy()
    np.testing.assert_array_equal(tF.pad(mg.tensor(x), (1, 1), value=2.5).numpy(), want)
    # MegEngine's (and NumPy's) pad: one pair for every axis
    assert F.pad(mg.tensor(x), (1, 1)).shape == (4, 5, 6)
    assert F.nn.pad(mg.tensor(x), ((0, 0), (0, 0), (1, 1)), constant_value=1.0).shape == (2, 3, 6)
    with pytest.raises(ValueError, match="even number"):
        tF.pad(mg.tensor(x), (1, 1, 1))


def test_mindspore_conv_spelling_has_no_bias_by_default():
    # MindSpore's nn.Conv2d(..., pad_mode=...) has has_bias=False; PyTorch's spelling a bias
    assert nn.Conv2d(1, 2, 3).bias is not None
    assert nn.Conv2d(1, 2, 3, pad_mode="same").bias is None
    assert nn.Conv2d(1, 2, 3, pad_mode="valid", has_bias=True).bias is not None
    assert nn.Conv2d(1, 2, 3, pad_mode="pad", padding=1, bias=True).bias is not None
    assert nn.Conv1d(1, 2, 3, pad_mode="valid").bias is None
    with pytest.raises(TypeError, match="has_bias"):
        nn.Conv2d(1, 2, 3, bias=True, has_bias=True)


def test_copy_of_a_ctx_function_class_keeps_its_own_node():
    class A(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class B(A):
        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = mg.tensor([1.0], requires_grad=True)
    A.apply(x).sum().backward()
    B.apply(x).sum().backward()
    assert float(x.grad.item()) == 5.0
    assert copy.copy(A) is A


def test_one_hot_num_classes_minus_one_infers_as_in_pytorch():
    np.testing.assert_array_equal(F.one_hot(mg.tensor([0, 2]), -1).numpy(),
                                  [[1, 0, 0], [0, 0, 1]])
