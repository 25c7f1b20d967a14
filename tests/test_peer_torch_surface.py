"""PyTorch's everyday surface, with ``torch`` renamed ``mg``: the top-level functions, dtypes and
``device``, ``dim=``/``keepdim=``, ``Tensor.size`` as both MegEngine's int and PyTorch's method,
the Tensor idioms, ``Tensor.__format__``, ``backends``, ``accelerator``, ``autograd.gradcheck``,
``save``/``load`` through file objects, ``nn.NLLLoss``, ``LSTM.flatten_parameters`` and the
Transformer encoder; values are compared with PyTorch (CPU). OneFlow's ``env`` is at the end."""

import copy
import io

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def _pair(*shape, seed=0, dtype=np.float32, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if positive:
        a = np.abs(a) + 0.1
    return mg.tensor(a), torch.tensor(a)


def _same(ours, theirs, atol=1e-6):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _same(o, t, atol)
        return
    if isinstance(theirs, torch.Tensor):
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), atol=atol, rtol=1e-5)
    else:
        assert ours == theirs


# ------------------------------------------------------------------------ top-level functions
_X, _TX = _pair(3, 4)
_P, _TP = _pair(3, 4, positive=True)
_B, _TB = _pair(2, 3, 4, seed=1)
_W, _TW = _pair(4, 5, seed=2)
_BW, _TBW = _pair(2, 4, 5, seed=3)
_IDX = np.array([[0, 3], [1, 1], [2, 0]])

CASES = [
    ("cat", lambda m, x, b: m.cat([x, x * 2], dim=1)),
    ("cat0", lambda m, x, b: m.cat((x, x), 0)),
    ("stack", lambda m, x, b: m.stack([x, x + 1], dim=-1)),
    ("flatten", lambda m, x, b: m.flatten(b, start_dim=1)),
    ("flatten_end", lambda m, x, b: m.flatten(b, 0, 1)),
    ("mm", lambda m, x, b: m.mm(x, x.T)),
    ("matmul", lambda m, x, b: m.matmul(b, x.T)),
    ("bmm", lambda m, x, b: m.bmm(b, b.permute(0, 2, 1))),
    ("exp", lambda m, x, b: m.exp(x)),
    ("sin", lambda m, x, b: m.sin(x)),
    ("cos", lambda m, x, b: m.cos(x)),
    ("tanh", lambda m, x, b: m.tanh(x)),
    ("sigmoid", lambda m, x, b: m.sigmoid(x)),
    ("relu", lambda m, x, b: m.relu(x)),
    ("abs", lambda m, x, b: m.abs(x)),
    ("argmax", lambda m, x, b: m.argmax(x, dim=1)),
    ("argmax_keep", lambda m, x, b: m.argmax(x, 0, keepdim=True)),
    ("argmin", lambda m, x, b: m.argmin(b, dim=-1)),
    ("sum_all", lambda m, x, b: m.sum(x)),
    ("sum", lambda m, x, b: m.sum(b, dim=(0, 2), keepdim=True)),
    ("sum_axis", lambda m, x, b: m.sum(b, axis=1)),
    ("mean", lambda m, x, b: m.mean(b, dim=1)),
    ("mean_keep", lambda m, x, b: m.mean(x, -1, True)),
    ("prod", lambda m, x, b: m.prod(x, dim=1)),
    ("logsumexp", lambda m, x, b: m.logsumexp(x, dim=1)),
    ("cumsum", lambda m, x, b: m.cumsum(x, dim=1)),
    ("norm", lambda m, x, b: m.norm(x)),
    ("norm_dim", lambda m, x, b: m.norm(b, dim=2, keepdim=True)),
    ("where", lambda m, x, b: m.where(x > 0, x, x * 0.5)),
    ("clamp", lambda m, x, b: m.clamp(x, min=-0.5, max=0.5)),
    ("clamp_min", lambda m, x, b: m.clamp(x, min=0)),
    ("softmax", lambda m, x, b: m.softmax(x, dim=1)),
    ("log_softmax", lambda m, x, b: m.log_softmax(b, dim=0)),
    ("squeeze", lambda m, x, b: m.squeeze(x.reshape(3, 1, 4), 1)),
    ("unsqueeze", lambda m, x, b: m.unsqueeze(x, 1)),
    ("transpose", lambda m, x, b: m.transpose(b, 0, 2)),
    ("permute", lambda m, x, b: m.permute(b, (2, 0, 1))),
    ("reshape", lambda m, x, b: m.reshape(b, (4, -1))),
    ("einsum", lambda m, x, b: m.einsum("ij,kj->ik", x, x)),
    ("einsum_list", lambda m, x, b: m.einsum("bij->bj", [b])),
    ("triu", lambda m, x, b: m.triu(x)),
    ("triu_k", lambda m, x, b: m.triu(b, 1)),
    ("tril", lambda m, x, b: m.tril(x, diagonal=-1)),
    ("gather", lambda m, x, b: m.gather(x, 1, m.tensor(_IDX))),
    ("index_select", lambda m, x, b: m.index_select(x, 1, m.tensor(np.array([3, 0])))),
    ("narrow", lambda m, x, b: m.narrow(x, 1, 1, 2)),
    ("masked_fill", lambda m, x, b: m.masked_fill(x, x > 0, -1.0)),
    ("maximum", lambda m, x, b: m.maximum(x, x * -1)),
    ("isnan", lambda m, x, b: m.isnan(m.log(x))),
    ("isfinite", lambda m, x, b: m.isfinite(m.log(x))),
    ("eq", lambda m, x, b: m.eq(x, x.T.T)),
    ("zeros_like", lambda m, x, b: m.zeros_like(b)),
    ("ones_like", lambda m, x, b: m.ones_like(x, dtype=m.float64)),
    ("arange", lambda m, x, b: m.arange(5)),
    ("arange_end", lambda m, x, b: m.arange(1, end=7, step=2)),
    ("arange_float", lambda m, x, b: m.arange(0.0, 1.0, 0.25)),
    ("linspace", lambda m, x, b: m.linspace(0, 1, steps=5)),
    ("full", lambda m, x, b: m.full((2, 3), 1.5)),
    ("eye", lambda m, x, b: m.eye(3)),
    ("chunk", lambda m, x, b: m.chunk(m.arange(10), 4)),
    ("chunk_dim", lambda m, x, b: m.chunk(x, 3, dim=1)),
    ("split", lambda m, x, b: m.split(m.arange(7), 3)),
    ("split_sizes", lambda m, x, b: m.split(x, [1, 3], dim=1)),
    ("t", lambda m, x, b: m.t(x)),
]


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_top_level_functions_match_torch(name, fn):
    _same(fn(mg, _X, _B), fn(torch, _TX, _TB), atol=1e-5)


@pytest.mark.parametrize("name", ["log", "sqrt"])
def test_top_level_positive_ops(name):
    _same(getattr(mg, name)(_P), getattr(torch, name)(_TP))


def test_top_level_gradients_match_torch():
    x, tx = _pair(3, 4, seed=5)
    x.requires_grad_()
    tx.requires_grad_()
    outs = []
    for m, v in ((mg, x), (torch, tx)):
        y = (m.triu(v, 1) * 2 + m.tril(v)).sum(dim=1, keepdim=True)
        z = m.cat([y, m.softmax(v, dim=0)], dim=1).mean()
        z.backward()
        outs.append(v.grad)
    _same(outs[0], outs[1])


def test_functions_return_types_and_helpers():
    x, tx = _pair(2, 3)
    assert mg.equal(x, x.clone()) is True and mg.equal(x, x + 1) is False
    assert mg.equal(x, x.reshape(3, 2)) is False
    assert mg.allclose(x, x + 1e-9) and not mg.allclose(x, x + 1e-3)
    assert mg.allclose(x, x + 1e-3, atol=1e-2) == torch.allclose(tx, tx + 1e-3, atol=1e-2)
    assert mg.is_tensor(x) and not mg.is_tensor(tx.numpy()) and mg.is_tensor(mg.nn.Parameter(x))
    assert mg.numel(x) == 6 and mg.is_floating_point(x) and not mg.is_floating_point(x.long())
    assert mg.get_default_dtype() == mg.float32
    r = mg.randn_like(x)
    assert r.shape == x.shape and r.dtype == x.dtype and not mg.allclose(r, x)
    assert mg.rand_like(x, dtype=mg.float64).dtype == mg.float64
    assert mg.empty_like(x).shape == (2, 3)
    ri = mg.randint_like(x, 5)
    assert ri.dtype == mg.float32 and float(ri.max().item()) < 5
    p = mg.randperm(10)
    assert p.dtype == mg.long and sorted(p.tolist()) == list(range(10))
    mg.manual_seed(3)
    a = mg.randn(4)
    mg.manual_seed(3)
    assert mg.equal(a, mg.randn(4))


def test_builtin_names_stay_out_of_star_import():
    ns = {}
    exec("from minigrad import *", ns)  # noqa: S102
    for name in ("sum", "abs", "all", "any", "pow", "float", "int", "bool"):
        assert name not in ns and hasattr(mg, name)
    assert {"cat", "stack", "long", "device", "Size", "einsum"} <= set(ns)


def test_grad_modes():
    w = mg.ones(2, requires_grad=True)
    with mg.no_grad():
        assert not (w * 2).requires_grad
        with mg.enable_grad():
            assert (w * 2).requires_grad
    with mg.set_grad_enabled(False):
        assert not (w * 2).requires_grad
    with mg.inference_mode():
        assert not mg.is_grad_enabled() and not (w * 2).requires_grad
    with mg.inference_mode(False):
        assert mg.is_grad_enabled()
    with mg.no_grad(), mg.inference_mode(False):
        assert not mg.is_grad_enabled()  # mode=False changes nothing

    @mg.inference_mode()
    def f(t):
        return t * 2

    @mg.inference_mode
    def g(t):
        return t * 3

    assert not f(w).requires_grad and not g(w).requires_grad and mg.is_grad_enabled()


# ------------------------------------------------------------------------ dtypes, device, size
def test_dtype_aliases_and_casts():
    pairs = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
             "int": "int32", "short": "int16", "bool": "bool"}
    x, tx = _pair(2, 3)
    for name, dtype in pairs.items():
        assert str(getattr(mg, name)) == dtype == str(getattr(torch, name)).split(".")[1]
        _same(getattr(x * 3, name)(), getattr(tx * 3, name)())
    assert x.byte().dtype == mg.uint8 and x.char().dtype == mg.int8
    assert mg.zeros(2, dtype=mg.long).dtype == mg.int64


def test_type_method():
    x, tx = _pair(2, 2)
    assert x.type() == "minigrad.FloatTensor" and tx.type() == "torch.FloatTensor"
    assert x.long().type() == "minigrad.LongTensor" and x.bool().type() == "minigrad.BoolTensor"
    assert x.type(mg.float64).dtype == mg.float64
    assert x.type("torch.DoubleTensor").dtype == mg.float64
    assert x.type("minigrad.IntTensor").dtype == mg.int32
    assert x.type_as(x.long()).dtype == mg.int64
    with pytest.raises(TypeError, match="unknown"):
        x.type("torch.FooTensor")


def test_device_objects():
    d = mg.device("cuda:1")
    assert (d.type, d.index, str(d), repr(d)) == ("cuda", 1, "cuda:1",
                                                  "device(type='cuda', index=1)")
    assert d == mg.device("cuda", 1) == "cuda:1" and d != "cuda" and d != mg.device("cuda")
    assert hash(d) == hash("cuda:1") and {d: 1}["cuda:1"] == 1
    c = mg.device("cpu")
    assert (c.type, c.index, repr(c)) == ("cpu", None, "device(type='cpu')")
    assert repr(c) == repr(torch.device("cpu")) and repr(d) == repr(torch.device("cuda:1"))
    assert mg.device("gpu").type == "cuda" and mg.device(0) == "cuda:0"
    assert mg.device(c) == c and f"{c:>4}" == " cpu" and c.split(":") == ["cpu"]
    for bad in ("tpu", "cuda:x", "cuda:"):
        with pytest.raises(ValueError, match="unknown device"):
            mg.device(bad)
    with pytest.raises(ValueError, match="twice"):
        mg.device("cuda:0", 1)
    x = mg.zeros(2, device=c)
    assert x.device == "cpu" and x.device.type == "cpu" and x.device.index is None
    assert x.to(c) is x and x.to(device=c) is x and x.to(x.device, mg.float64).dtype == mg.float64
    assert mg.ones(2, device=x.device).device == c
    assert (x.is_cuda, x.get_device()) == (False, -1)


def test_size_is_an_int_and_a_method():
    x, tx = _pair(2, 3, 4)
    assert x.size == 24 and isinstance(x.size, int) and x.size * 2 == 48 and x.numel() == 24
    assert x.size() == tx.size() == (2, 3, 4) and isinstance(x.size(), mg.Size)
    assert [x.size(i) for i in (0, 1, 2, -1, -3)] == [tx.size(i) for i in (0, 1, 2, -1, -3)]
    assert x.size(dim=1) == 3 and x.size().numel() == 24 == tx.size().numel()
    assert repr(x.size()) == "minigrad.Size([2, 3, 4])" and x.size()[1:] == mg.Size([3, 4])
    assert sum(p.size for p in nn.Linear(3, 2).parameters()) == 8
    for bad in (3, -4):
        with pytest.raises(IndexError, match="Dimension out of range"):
            x.size(bad)
    s = mg.tensor(1.0)
    assert s.size == 1 and s.size() == () == tuple(torch.tensor(1.0).size())
    with pytest.raises(IndexError, match="no dimensions"):
        s.size(0)
    with pytest.raises(TypeError):
        x.size("0")
    assert mg.zeros(0, 3).size == 0 and mg.zeros(0, 3).size(1) == 3


# ------------------------------------------------------------------------ dim= / keepdim=
def test_dim_keepdim_on_methods_match_torch():
    x, tx = _pair(2, 3, 4)
    for name in ("sum", "mean", "prod", "argmax", "argmin"):
        _same(getattr(x, name)(dim=1), getattr(tx, name)(dim=1), atol=1e-5)
        _same(getattr(x, name)(1, keepdim=True), getattr(tx, name)(1, keepdim=True), atol=1e-5)
        _same(getattr(x, name)(axis=1), getattr(tx, name)(dim=1), atol=1e-5)
    _same(x.softmax(dim=0), tx.softmax(dim=0))
    _same(x.log_softmax(-1), tx.log_softmax(-1))
    _same(x.cumsum(dim=2), tx.cumsum(dim=2), atol=1e-5)
    _same(x.flatten(start_dim=1), tx.flatten(start_dim=1))
    _same(x.squeeze(dim=0) if x.shape[0] == 1 else x.unsqueeze(dim=0), tx.unsqueeze(dim=0))
    _same(x.norm(dim=1), tx.norm(dim=1), atol=1e-5)
    _same(x.sum(dim=1, dtype=mg.float64), tx.sum(dim=1, dtype=torch.float64), atol=1e-5)
    _same((x > 0).all(dim=1), (tx > 0).all(dim=1))
    _same((x > 0).any(dim=2, keepdim=True), (tx > 0).any(dim=2, keepdim=True))
    _same(F.softmax(x, dim=1), torch.nn.functional.softmax(tx, dim=1))
    _same(F.log_softmax(x, dim=1), torch.nn.functional.log_softmax(tx, dim=1))


@pytest.mark.parametrize("call", [
    lambda x: x.sum(axis=1, dim=1), lambda x: x.mean(1, keepdims=True, keepdim=True),
    lambda x: x.argmax(axis=0, dim=0), lambda x: x.softmax(axis=0, dim=0),
    lambda x: x.all(axis=0, dim=0), lambda x: x.flatten(1, start_dim=1),
    lambda x: mg.sum(x, dim=0, axis=0), lambda x: mg.cat([x], dim=0, axis=0),
    lambda x: F.softmax(x, 0, dim=0), lambda x: x.clamp(0, min=0),
    lambda x: mg.arange(0, 3, end=4), lambda x: mg.linspace(0, 1, 3, steps=3),
])
def test_both_spellings_given_is_an_error(call):
    with pytest.raises(TypeError, match="both"):
        call(mg.ones(2, 3))


# ------------------------------------------------------------------------ Tensor idioms
def test_tensor_idioms_match_torch():
    x, tx = _pair(3, 4)
    _same(x.t(), tx.t())
    _same(mg.ones(3).t(), torch.ones(3).t())
    with pytest.raises(ValueError, match="<= 2"):
        mg.ones(2, 2, 2).t()
    for name in ("new_zeros", "new_ones"):
        _same(getattr(x, name)(2, 3), getattr(tx, name)(2, 3))
        _same(getattr(x, name)((2, 3), dtype=mg.long), getattr(tx, name)((2, 3),
                                                                           dtype=torch.long))
    _same(x.new_full((2,), 7.0), tx.new_full((2,), 7.0))
    _same(x.long().new_tensor([1, 2]), tx.long().new_tensor([1, 2]))
    assert x.new_empty(4).shape == (4,) and x.new_zeros(2, requires_grad=True).requires_grad
    _same(x.narrow(0, 1, 2), tx.narrow(0, 1, 2))
    _same(x.narrow(1, -2, 2), tx.narrow(1, -2, 2))
    y, ty = x * 0 + 0.5, tx * 0 + 0.5
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        _same(getattr(x, name)(y), getattr(tx, name)(ty))
        _same(getattr(x, name)(0.0), getattr(tx, name)(0.0))
    _same(x.view_as(mg.zeros(4, 3)), tx.view_as(torch.zeros(4, 3)))
    _same(x[:1].expand_as(x), tx[:1].expand_as(tx))
    _same(x[:1].expand(5, -1), tx[:1].expand(5, -1))
    _same(x.reshape(1, 3, 4).expand(2, -1, -1), tx.reshape(1, 3, 4).expand(2, -1, -1))
    _same(x.gather(1, mg.tensor(_IDX)), tx.gather(1, torch.tensor(_IDX)))
    _same(x.argmax(1), tx.argmax(1))
    assert x[0, 0].item() == pytest.approx(tx[0, 0].item())
    np.testing.assert_allclose(x.tolist(), tx.tolist())
    assert (x.numel(), x.dim(), x.ndimension(), x.nelement(), x.element_size()) == (
        tx.numel(), tx.dim(), tx.ndimension(), tx.nelement(), tx.element_size())
    _same(x.repeat(2, 1, 3), tx.repeat(2, 1, 3))
    _same(x.repeat_interleave(2, dim=0), tx.repeat_interleave(2, dim=0))
    _same(x.split(3, dim=1), tx.split(3, dim=1))
    _same(x.chunk(2), tx.chunk(2))
    _same(x.clamp(min=0.1), tx.clamp(min=0.1))
    _same(x.add(y, alpha=2), tx.add(ty, alpha=2))
    _same(x.sub(1.0).mul(2).div(4), tx.sub(1.0).mul(2).div(4))
    _same(x.masked_fill(x < 0, 0.0), tx.masked_fill(tx < 0, 0.0))
    xi, txi = x.long(), tx.long()
    _same(xi.masked_fill(xi == 0, 2.7), txi.masked_fill(txi == 0, 2.7))  # keeps int64
    _same(x.index_select(0, mg.tensor([2, 0])), tx.index_select(0, torch.tensor([2, 0])))
    _same(x.mm(x.t()), tx.mm(tx.t()), atol=1e-5)


def test_contiguous_and_clone():
    x = mg.arange(6.0).reshape(2, 3)
    assert x.is_contiguous() and x.contiguous() is x
    t = x.T
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c is not t and c.tolist() == t.tolist()
    assert x.clone().tolist() == x.tolist() and x.clone() is not x


def test_masked_fill_gradient_matches_torch():
    x, tx = _pair(3, 4, seed=4)
    x.requires_grad_()
    tx.requires_grad_()
    (x.masked_fill(x > 0.5, 0.0) * 3).sum().backward()
    (tx.masked_fill(tx > 0.5, 0.0) * 3).sum().backward()
    _same(x.grad, tx.grad)


def test_in_place_fills():
    w = mg.nn.Parameter(mg.zeros(200, 50))
    with pytest.raises(RuntimeError, match="in-place"):
        w.uniform_(-1, 1)  # a parameter while recording, as in PyTorch
    version = w._version
    with mg.no_grad():
        w.uniform_(-0.5, 0.25)
    assert w._version == version + 1
    assert -0.5 <= float(w.min().item()) and float(w.max().item()) < 0.25
    with mg.no_grad():
        w.normal_(2.0, 0.5)
    assert abs(float(w.mean().item()) - 2.0) < 0.02 and abs(float(w.std().item()) - 0.5) < 0.02
    mg.manual_seed(1)
    a = mg.zeros(3).uniform_()
    mg.manual_seed(1)
    assert mg.equal(a, mg.zeros(3).uniform_())
    with pytest.raises(TypeError, match="floating"):
        mg.zeros(3, dtype=mg.long).normal_()
    x, tx = _pair(3, 4)
    _same(x.clone().clamp_(-0.2, 0.3), tx.clone().clamp_(-0.2, 0.3))
    _same(x.clone().clamp_(min=0), tx.clone().clamp_(min=0))
    _same(x.clone().masked_fill_(x > 0, 9.0), tx.clone().masked_fill_(tx > 0, 9.0))
    _same(x.clone().fill_(2.0), tx.clone().fill_(2.0))
    _same(x.clone().zero_(), tx.clone().zero_())
    with pytest.raises(ValueError, match="at least one"):
        x.clamp_()


# ------------------------------------------------------------------------ __format__
def test_format_like_torch():
    for value in (1.5, -0.000123, 12345.678):
        t, tt = mg.tensor(value), torch.tensor(value)
        for spec in (">7f", ".3e", "", ".2f", "10.4g"):
            assert f"{t:{spec}}" == f"{tt:{spec}}"
    assert f"{mg.tensor(3):>4d}" == f"{torch.tensor(3):>4d}"
    assert f"{mg.tensor([1.5])}" == str(mg.tensor([1.5]))
    with pytest.raises(TypeError, match="0-d"):
        f"{mg.tensor([1.5]):>7f}"
    with pytest.raises(TypeError):
        f"{torch.tensor([1.5]):>7f}"


# ------------------------------------------------------------------------ backends, accelerator
def test_backends_flags_do_the_nearest_thing():
    from minigrad._backend import cudnn_conv

    cudnn = mg.backends.cudnn
    import minigrad.backends.cudnn as imported

    assert imported is cudnn
    saved = (cudnn.enabled, cudnn.deterministic, cudnn.benchmark, cudnn.allow_tf32)
    try:
        cudnn.enabled = True
        cudnn.deterministic = True  # im2col + cuBLAS: deterministic
        assert cudnn_conv.set_enabled(False) is False
        cudnn.deterministic = False
        assert cudnn_conv.set_enabled(True) is True  # the flags re-applied cuDNN
        cudnn.enabled = False
        assert cudnn_conv.set_enabled(False) is False and cudnn.enabled is False
        cudnn.enabled = True
        cudnn.benchmark = True
        assert cudnn.benchmark is True
        cudnn.allow_tf32 = False
        assert cudnn_conv.allow_tf32() is False
        assert cudnn.is_available() in (True, False) and cudnn.version() is None
    finally:
        cudnn.enabled, cudnn.deterministic, cudnn.benchmark, cudnn.allow_tf32 = saved
    assert mg.backends.mps.is_available() is False and mg.backends.mps.is_built() is False
    m = mg.backends.cuda.matmul
    assert m.allow_tf32 is False
    m.allow_tf32 = True
    m.allow_tf32 = False
    assert mg.backends.cuda.is_built() in (True, False)


def test_accelerator():
    assert mg.accelerator.is_available() == mg.cuda.is_available()
    acc = mg.accelerator.current_accelerator(check_available=True)
    assert (acc is None) == (not mg.cuda.is_available())
    loose = mg.accelerator.current_accelerator()
    assert loose is None or (loose.type == "cuda" and loose.index is None)
    assert mg.accelerator.device_count() == mg.cuda.device_count()
    assert mg.accelerator.current_device_index() == 0
    mg.accelerator.synchronize()


# ------------------------------------------------------------------------ gradcheck
def test_autograd_gradcheck():
    x = mg.randn(3, dtype=mg.float64, requires_grad=True)
    y = mg.randn(3, dtype=mg.float64)
    assert mg.autograd.gradcheck(lambda a, b: (a * b).sin(), (x, y))
    assert mg.autograd.gradcheck(lambda a: a.exp(), x)

    class Wrong(mg.autograd.Function):
        name = "wrong_square"

        def forward(self, a):
            self.save_for_backward(a)
            return a * a

        def backward(self, g):
            (a,) = self.saved_tensors
            return g * a  # should be 2 * a

    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        mg.autograd.gradcheck(Wrong.apply, (x,))
    assert mg.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False
    with pytest.raises(ValueError, match="requires grad"):
        mg.autograd.gradcheck(lambda a: a * 2, (y,))
    assert mg.autograd.gradgradcheck(lambda a: (a ** 3).sum(), (x,))


# ------------------------------------------------------------------------ save / load
def test_save_load_through_file_objects():
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    buf = io.BytesIO()
    mg.save({"model": net.state_dict(), "epoch": 3}, buf)
    buf.seek(0)
    state = mg.load(buf, weights_only=True, map_location="cpu")
    assert state["epoch"] == 3
    other = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    other.load_state_dict(state["model"])
    assert mg.equal(other[0].weight, net[0].weight)
    for where in (mg.device("cpu"), lambda storage, loc: storage):
        buf.seek(0)
        assert mg.load(buf, map_location=where)["epoch"] == 3
    buf.seek(0)
    assert mg.load(buf, weights_only=False)["epoch"] == 3  # nothing more is ever enabled
    buf.seek(0)
    with pytest.raises(TypeError, match="map_location functions"):
        mg.load(buf, map_location=lambda storage, loc: None)
    with pytest.raises(TypeError, match="both"):
        mg.load(buf, device="cpu", map_location="cpu")


def test_save_a_whole_module_points_to_state_dict(tmp_path):
    net = nn.Linear(2, 2)
    for obj in (net, {"model": net}, mg.optim.SGD(net.parameters(), lr=0.1)):
        with pytest.raises(TypeError, match=r"state_dict\(\)"):
            mg.save(obj, tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


# ------------------------------------------------------------------------ layers
@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"},
                                {"ignore_index": 1}, {"weight": [0.5, 2.0, 1.0, 1.5]}])
def test_nll_loss_module_matches_torch(kw):
    x, tx = _pair(5, 4)
    target = np.array([0, 1, 3, 1, 2])
    ours = nn.NLLLoss(**{k: mg.tensor(v) if k == "weight" else v for k, v in kw.items()})
    theirs = torch.nn.NLLLoss(**{k: torch.tensor(v) if k == "weight" else v
                                 for k, v in kw.items()})
    x.requires_grad_()
    tx.requires_grad_()
    lo = ours(F.log_softmax(x, dim=1), mg.tensor(target))
    lt = theirs(torch.log_softmax(tx, dim=1), torch.tensor(target))
    _same(lo, lt)
    lo.sum().backward()
    lt.sum().backward()
    _same(x.grad, tx.grad)


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"},
                                {"weight": [[0.5], [2.0], [1.0]]}])
def test_bce_loss_module_matches_torch(kw):
    x, tx = _pair(3, 4, seed=6)
    t = (np.random.default_rng(7).random((3, 4)) > 0.5).astype(np.float32)
    t[0, 0] = 0.3  # soft targets too
    ours = nn.BCELoss(**{k: mg.tensor(v) for k, v in kw.items() if k == "weight"},
                      **{k: v for k, v in kw.items() if k != "weight"})
    theirs = torch.nn.BCELoss(**{k: torch.tensor(v) for k, v in kw.items() if k == "weight"},
                              **{k: v for k, v in kw.items() if k != "weight"})
    x.requires_grad_()
    tx.requires_grad_()
    lo = ours(mg.sigmoid(x), mg.tensor(t))
    lt = theirs(torch.sigmoid(tx), torch.tensor(t))
    _same(lo, lt)
    lo.sum().backward()
    lt.sum().backward()
    _same(x.grad, tx.grad)


def test_lstm_flatten_parameters_is_a_no_op():
    lstm = nn.LSTM(3, 4, batch_first=True)
    before = [p.numpy().copy() for p in lstm.parameters()]
    x = mg.randn(2, 5, 3)
    out = lstm(x)[0].numpy()
    assert lstm.flatten_parameters() is None
    np.testing.assert_array_equal(lstm(x)[0].numpy(), out)
    for b, p in zip(before, lstm.parameters()):
        np.testing.assert_array_equal(b, p.numpy())


def _copy_transformer_weights(ours, theirs):
    sd = {k: mg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(sd)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("norm_first, activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_matches_torch(batch_first, norm_first, activation):
    torch.manual_seed(0)
    kw = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.1, activation=activation,
              batch_first=batch_first, norm_first=norm_first)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(**kw), 2,
                                         norm=torch.nn.LayerNorm(8),
                                         enable_nested_tensor=False).eval()
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(**kw), 2,
                                 norm=nn.LayerNorm(8)).eval()
    assert set(ours.state_dict()) == set(theirs.state_dict())
    _copy_transformer_weights(ours, theirs)
    x, tx = _pair(*((3, 5, 8) if batch_first else (5, 3, 8)), seed=7)
    pad = np.zeros((3, 5), bool)
    pad[0, 3:] = True
    causal = np.triu(np.ones((5, 5), bool), 1)
    with torch.no_grad():
        _same(ours(x), theirs(tx), atol=1e-5)
        _same(ours(x, src_key_padding_mask=mg.tensor(pad)),
              theirs(tx, src_key_padding_mask=torch.tensor(pad)), atol=1e-5)
        _same(ours(x, mask=mg.tensor(causal)), theirs(tx, mask=torch.tensor(causal)),
              atol=1e-5)


def test_transformer_layer_gradients_match_torch():
    torch.manual_seed(1)
    kw = dict(d_model=8, nhead=4, dim_feedforward=12, dropout=0.0, batch_first=True)
    theirs = torch.nn.TransformerEncoderLayer(**kw)
    ours = nn.TransformerEncoderLayer(**kw)
    _copy_transformer_weights(ours, theirs)
    x, tx = _pair(2, 6, 8, seed=9)
    x.requires_grad_()
    tx.requires_grad_()
    (ours(x) ** 2).sum().backward()
    (theirs(tx) ** 2).sum().backward()
    _same(x.grad, tx.grad, atol=1e-4)
    _same(ours.linear1.weight.grad, theirs.linear1.weight.grad, atol=1e-4)


def test_transformer_layers_are_independent_copies():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    enc = nn.TransformerEncoder(layer, 3)
    ws = [m.linear1.weight for m in enc.layers]
    assert len({id(w) for w in ws}) == 3 and all(w is not layer.linear1.weight for w in ws)
    assert all(mg.equal(w, layer.linear1.weight) for w in ws)
    clone = copy.deepcopy(enc)
    assert mg.equal(clone.layers[0].linear1.weight, ws[0])
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(8, 2, activation="swish")


# ------------------------------------------------------------------------ OneFlow's env
def test_oneflow_env_single_process():
    import minigrad.env as env

    assert env is mg.env
    assert (env.get_rank(), env.get_world_size(), env.get_local_rank()) == (0, 1, 0)


def test_squeeze_method_leaves_axes_of_another_size_as_pytorch():
    a = np.ones((2, 1, 3, 1), np.float32)
    for dim in (0, 1, -1, (0, 1), (1, 3), (0, 2)):
        assert mg.tensor(a).squeeze(dim).shape == tuple(torch.tensor(a).squeeze(dim).shape)
        assert mg.squeeze(mg.tensor(a), dim).shape == tuple(torch.squeeze(torch.tensor(a),
                                                                         dim).shape)
    assert mg.tensor(5.0).squeeze(0).shape == ()


def test_set_grad_enabled_as_a_call_switches_at_once():
    x = mg.ones(2, requires_grad=True)
    try:
        mg.set_grad_enabled(False)
        assert not mg.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        mg.set_grad_enabled(True)
    assert (x * 2).requires_grad
    with mg.no_grad():
        with mg.set_grad_enabled(True):
            assert mg.is_grad_enabled()
        assert not mg.is_grad_enabled()

    @mg.set_grad_enabled(False)
    def inside():
        return mg.is_grad_enabled()

    assert mg.is_grad_enabled() and inside() is False and mg.is_grad_enabled()


def test_generator_seeds_random_split_and_loaders():
    from minigrad.utils.data import DataLoader, TensorDataset, random_split

    data = TensorDataset(mg.arange(10))
    g = mg.Generator().manual_seed(42)
    assert g.initial_seed() == 42
    a = [int(x) for x in random_split(data, [7, 3], generator=mg.Generator().manual_seed(42))[1]
         .indices]
    b = [int(x) for x in random_split(data, [7, 3], generator=42)[1].indices]
    assert a == b and len(set(a)) == 3  # a Generator seeds as its initial_seed does
    order = [int(x) for (x,) in DataLoader(data, batch_size=1, shuffle=True,
                                          generator=mg.Generator().manual_seed(3))]
    again = [int(x) for (x,) in DataLoader(data, batch_size=1, shuffle=True,
                                          generator=mg.Generator().manual_seed(3))]
    assert order == again and sorted(order) == list(range(10))
    state = g.get_state()
    assert mg.Generator().set_state(state).initial_seed() == 42
    with pytest.raises(TypeError, match="seed must be an int"):
        g.manual_seed(1.5)
    with pytest.raises(TypeError):
        mg.randn(2, generator=g)  # not accepted, so never ignored


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True},
                                {"dim": 1, "correction": 0}, {"dim": 1, "unbiased": False}])
def test_var_mean_and_std_mean_divide_by_n_minus_one_as_pytorch(kw):
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for name in ("var_mean", "std_mean"):
        got, want = getattr(mg, name)(mg.tensor(a), **kw), getattr(torch, name)(
            torch.tensor(a), **kw)
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape)
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": (0, 1), "keepdim": True}])
def test_amax_amin_match_pytorch(kw):
    a = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    for name in ("amax", "amin"):
        want = getattr(torch, name)(torch.tensor(a), **kw).numpy()
        np.testing.assert_array_equal(getattr(mg, name)(mg.tensor(a), **kw).numpy(), want)
        np.testing.assert_array_equal(getattr(mg.tensor(a), name)(**kw).numpy(), want)
