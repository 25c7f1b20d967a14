"""``mg.set_default_dtype`` / ``mg.get_default_dtype``: PyTorch's default floating dtype, as one
setting that every creation function, ``tensor(1.5)``, the layers' parameters and the promotion
of integer tensors with Python floats read. PyTorch (CPU) is the oracle where it is installed."""

import sys
import threading

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
import minigrad.nn as nn
from minigrad import amp
from minigrad.optimizer import SGD

FLOATS = ["float64", "float16", "bfloat16", "float32"]


@pytest.fixture(autouse=True)
def _restore_default_dtype():
    """Put both defaults back whatever the test did (failures included), so no other test sees
    a changed default."""
    saved = mg.get_default_dtype()
    torch = sys.modules.get("torch")
    saved_torch = torch.get_default_dtype() if torch is not None else None
    try:
        yield
    finally:
        mg.set_default_dtype(saved)
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_default_dtype(saved_torch if saved_torch is not None else torch.float32)


def _both(torch, name):
    """Set ``name`` as the default of minigrad and of PyTorch."""
    mg.set_default_dtype(name)
    torch.set_default_dtype(getattr(torch, name))


def _name(dtype) -> str:
    """A minigrad or PyTorch dtype as its bare name ("float64")."""
    return str(dtype).replace("torch.", "")


# ----------------------------------------------------------------------------- the setting
def test_starts_float32_and_round_trips():
    assert mg.get_default_dtype() == mg.float32
    for name in FLOATS:
        mg.set_default_dtype(getattr(mg, name))
        assert mg.get_default_dtype() == getattr(mg, name)
    mg.set_default_dtype("float64")  # minigrad's dtype names work here as everywhere
    assert mg.get_default_dtype() == mg.float64
    mg.set_default_dtype(np.float16)
    assert mg.get_default_dtype() == mg.float16


@pytest.mark.parametrize("bad", [mg.int64, mg.int32, mg.uint8, mg.bool_, "int64", "nope", None, 3])
def test_non_float_default_is_a_clear_error(bad):
    mg.set_default_dtype(mg.float64)
    with pytest.raises(TypeError, match=r"set_default_dtype: only floating-point.*mg\.float32"):
        mg.set_default_dtype(bad)
    assert mg.get_default_dtype() == mg.float64  # a refused value changes nothing


def test_torch_accepts_the_same_floats_and_refuses_ints():
    torch = pytest.importorskip("torch")
    for name in FLOATS:
        torch.set_default_dtype(getattr(torch, name))
        mg.set_default_dtype(name)
        assert _name(torch.get_default_dtype()) == _name(mg.get_default_dtype())
    for bad in ("int64", "int32", "bool"):
        with pytest.raises(TypeError):
            torch.set_default_dtype(getattr(torch, bad))
        with pytest.raises(TypeError):
            mg.set_default_dtype(bad)


def test_one_mechanism_under_both_spellings():
    from minigrad.compat.torch import functions

    assert functions.NAMES["get_default_dtype"] is mg.get_default_dtype
    assert functions.NAMES["set_default_dtype"] is mg.set_default_dtype
    assert mg.__all__.count("set_default_dtype") == mg.__all__.count("get_default_dtype") == 1


def test_process_wide_like_pytorch():
    # PyTorch's default is one setting for every thread: a thread started after the change
    # (a data loader worker) makes tensors of the new default.
    mg.set_default_dtype(mg.float64)
    seen = []
    t = threading.Thread(target=lambda: seen.append((mg.get_default_dtype(),
                                                     mg.tensor(1.5).dtype)))
    t.start()
    t.join()
    assert seen == [(mg.float64, mg.float64)]


# ----------------------------------------------------------------------------- creation
CREATION = {
    "tensor(1.5)": (lambda m: m.tensor(1.5)),
    "tensor([1.0, 2.0])": (lambda m: m.tensor([1.0, 2.0])),
    "tensor([[1, 2.5]])": (lambda m: m.tensor([[1, 2.5]])),
    "tensor([1, 2])": (lambda m: m.tensor([1, 2])),
    "tensor(True)": (lambda m: m.tensor(True)),
    "tensor(np float32 array)": (lambda m: m.tensor(np.array([1.5], np.float32))),
    "tensor(np float64 array)": (lambda m: m.tensor(np.array([1.5]))),
    "tensor(np.float32 scalar)": (lambda m: m.tensor(np.float32(1.5))),
    "tensor([np.float32])": (lambda m: m.tensor([np.float32(1.5)])),
    "as_tensor(1.5)": (lambda m: m.as_tensor(1.5)),
    "as_tensor([1.5])": (lambda m: m.as_tensor([1.5])),
    "zeros": (lambda m: m.zeros(2, 3)),
    "ones": (lambda m: m.ones((2,))),
    "empty": (lambda m: m.empty(2)),
    "full(float)": (lambda m: m.full((2,), 1.5)),
    "full(int)": (lambda m: m.full((2,), 3)),
    "full(bool)": (lambda m: m.full((2,), True)),
    "full(dtype=)": (lambda m: m.full((2,), 1.5, dtype=m.float32)),
    "rand": (lambda m: m.rand(2, 2)),
    "randn": (lambda m: m.randn(3)),
    "normal": (lambda m: m.normal(0.0, 1.0, (2,))),
    "arange(int)": (lambda m: m.arange(3)),
    "arange(float)": (lambda m: m.arange(0.0, 3.0)),
    "arange(float step)": (lambda m: m.arange(0, 3, 0.5)),
    "linspace": (lambda m: m.linspace(0, 1, 5)),
    "eye": (lambda m: m.eye(3)),
    "randint": (lambda m: m.randint(0, 3, (2,))),
    "zeros(dtype=)": (lambda m: m.zeros(2, dtype=m.float32)),
    "zeros_like(float32)": (lambda m: m.zeros_like(m.ones(2, dtype=m.float32))),
    "ones_like(float16)": (lambda m: m.ones_like(m.ones(2, dtype=m.float16))),
    "full_like(int64, 1.5)": (lambda m: m.full_like(m.tensor([1, 2]), 1.5)),
    "randn_like(float32)": (lambda m: m.randn_like(m.ones(2, dtype=m.float32))),
}
_VALUES = ("tensor", "as_tensor", "zeros", "ones", "full", "arange", "linspace", "eye")


@pytest.mark.parametrize("default", FLOATS)
@pytest.mark.parametrize("case", list(CREATION))
def test_creation_dtype_matches_torch(case, default):
    torch = pytest.importorskip("torch")
    _both(torch, default)
    got, want = CREATION[case](mg), CREATION[case](torch)
    assert _name(got.dtype) == _name(want.dtype), f"{case} under default {default}"
    assert tuple(got.shape) == tuple(want.shape)
    if case.startswith(_VALUES):
        np.testing.assert_array_equal(got.numpy().astype(np.float64),
                                      want.to(torch.float64).numpy())


def test_uniform_follows_the_default():
    torch = pytest.importorskip("torch")
    _both(torch, "float64")
    # torch has no top-level uniform: ``empty(n).uniform_()`` is its spelling
    assert _name(mg.uniform(0.0, 1.0, (3,)).dtype) == _name(torch.empty(3).uniform_().dtype)


def test_float64_draws_are_not_on_the_float32_grid():
    # A float64 default gets float64 samples, not float32 ones widened (the float32 stream
    # itself is unchanged, so seeded float32 programs reproduce).
    mg.manual_seed(0)
    a32 = mg.rand(1000).numpy()
    mg.manual_seed(0)
    assert np.array_equal(mg.rand(1000, dtype=mg.float32).numpy(), a32)
    mg.set_default_dtype(mg.float64)
    for draw in (mg.rand(1000), mg.randn(1000)):
        x = draw.numpy()
        assert x.dtype == np.float64
        assert not np.array_equal(x, x.astype(np.float32).astype(np.float64))


def test_float32_default_is_unchanged_without_torch():
    # The values every other test relies on, checked without the oracle too.
    assert mg.tensor(1.5).dtype == mg.float32 and mg.tensor([1.0]).dtype == mg.float32
    assert mg.zeros(2).dtype == mg.ones(2).dtype == mg.rand(2).dtype == mg.float32
    assert mg.arange(0.0, 2.0).dtype == mg.linspace(0, 1, 3).dtype == mg.float32
    assert nn.Linear(2, 3).weight.dtype == mg.float32
    assert (mg.tensor([1, 2]) * 1.5).dtype == mg.float32
    mg.set_default_dtype(mg.float64)
    assert mg.tensor(1.5).dtype == mg.zeros(2).dtype == mg.eye(2).dtype == mg.float64
    assert mg.tensor([1, 2]).dtype == mg.int64 and mg.tensor([True]).dtype == mg.bool_
    assert mg.tensor(np.ones(2, np.float32)).dtype == mg.float32  # arrays keep their dtype


# ----------------------------------------------------------------------------- layers
LAYERS = {
    "Linear": (lambda m: m.nn.Linear(2, 3)),
    "Bilinear": (lambda m: m.nn.Bilinear(2, 3, 4)),
    "Conv2d": (lambda m: m.nn.Conv2d(1, 2, 3)),
    "ConvTranspose1d": (lambda m: m.nn.ConvTranspose1d(2, 1, 2)),
    "BatchNorm1d": (lambda m: m.nn.BatchNorm1d(3)),
    "BatchNorm2d(affine=False)": (lambda m: m.nn.BatchNorm2d(3, affine=False)),
    "LayerNorm": (lambda m: m.nn.LayerNorm(4)),
    "GroupNorm": (lambda m: m.nn.GroupNorm(1, 2)),
    "RMSNorm": (lambda m: m.nn.RMSNorm(4)),
    "InstanceNorm1d(affine)": (lambda m: m.nn.InstanceNorm1d(2, affine=True)),
    "Embedding": (lambda m: m.nn.Embedding(5, 2)),
    "PReLU": (lambda m: m.nn.PReLU()),
    "RNN": (lambda m: m.nn.RNN(2, 3)),
    "LSTM": (lambda m: m.nn.LSTM(2, 3, num_layers=2)),
    "GRUCell": (lambda m: m.nn.GRUCell(2, 3)),
    "MultiheadAttention": (lambda m: m.nn.MultiheadAttention(4, 2, add_bias_kv=True)),
    "TransformerEncoderLayer": (lambda m: m.nn.TransformerEncoderLayer(4, 2, 8)),
    "Linear(dtype=float32)": (lambda m: m.nn.Linear(2, 3, dtype=m.float32)),
}


def _state_dtypes(module):
    return {k: _name(v.dtype) for k, v in module.state_dict().items()}


@pytest.mark.parametrize("case", list(LAYERS))
def test_layer_parameters_and_buffers_follow_the_default(case):
    torch = pytest.importorskip("torch")
    _both(torch, "float64")
    got, want = _state_dtypes(LAYERS[case](mg)), _state_dtypes(LAYERS[case](torch))
    assert got == want


def test_layers_under_a_low_precision_default():
    torch = pytest.importorskip("torch")
    _both(torch, "float16")
    assert nn.Linear(2, 3).weight.dtype == mg.float16 == _name(torch.nn.Linear(2, 3).weight.dtype)
    bn = nn.BatchNorm1d(3)
    assert bn.weight.dtype == mg.float16
    # Deliberate deviation (as with an explicit dtype=float16): running statistics stay float32,
    # where PyTorch's would be float16 -- fp16 running variances lose too much.
    assert bn.running_mean.dtype == bn.running_var.dtype == mg.float32
    assert bn.num_batches_tracked.dtype == mg.int64
    assert _name(torch.nn.BatchNorm1d(3).running_mean.dtype) == "float16"


def test_causal_mask_follows_the_default():
    torch = pytest.importorskip("torch")
    _both(torch, "float64")
    got = nn.Transformer.generate_square_subsequent_mask(3)
    want = torch.nn.Transformer.generate_square_subsequent_mask(3)
    assert _name(got.dtype) == _name(want.dtype) == "float64"
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_training_step_runs_in_float64():
    torch = pytest.importorskip("torch")
    _both(torch, "float64")
    mg.manual_seed(0)
    model = nn.Linear(3, 2)
    tmodel = torch.nn.Linear(3, 2)
    with torch.no_grad():
        tmodel.weight.copy_(torch.from_numpy(model.weight.numpy()))
        tmodel.bias.copy_(torch.from_numpy(model.bias.numpy()))
    x, y = mg.randn(4, 3), mg.randn(4, 2)
    assert x.dtype == y.dtype == model.weight.dtype == mg.float64

    opt = SGD(model.parameters(), lr=0.1)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    assert loss.dtype == mg.float64
    assert model.weight.grad.dtype == model.bias.grad.dtype == mg.float64
    opt.step()

    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    tloss = torch.nn.functional.mse_loss(tmodel(torch.from_numpy(x.numpy())),
                                         torch.from_numpy(y.numpy()))
    tloss.backward()
    np.testing.assert_allclose(model.weight.grad.numpy(), tmodel.weight.grad.numpy(), rtol=1e-12)
    topt.step()
    assert loss.item() == pytest.approx(tloss.item(), rel=1e-12)
    for p, tp in ((model.weight, tmodel.weight), (model.bias, tmodel.bias)):
        assert p.dtype == mg.float64
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-12)


# ----------------------------------------------------------------------------- promotion
PROMOTION = {
    "int * 1.5": (lambda m: m.tensor([1, 2]) * 1.5),
    "1.5 * int": (lambda m: 1.5 * m.tensor([1, 2])),
    "int + 0.5": (lambda m: m.tensor([1, 2]) + 0.5),
    "bool * 1.5": (lambda m: m.tensor([True, False]) * 1.5),
    "int / 2": (lambda m: m.tensor([1, 2]) / 2),
    "int / int": (lambda m: m.tensor([1, 2]) / m.tensor([2, 4])),
    "int ** 0.5": (lambda m: m.tensor([1, 4]) ** 0.5),
    "exp(int)": (lambda m: m.tensor([1, 2]).exp()),
    "sqrt(int)": (lambda m: m.tensor([1, 4]).sqrt()),
    "sigmoid(bool)": (lambda m: m.tensor([True, False]).sigmoid()),
    "int + 0-d default": (lambda m: m.tensor([1, 2]) + m.tensor(1.5)),
    "int + 0-d float32": (lambda m: m.tensor([1, 2]) + m.tensor(1.5, dtype=m.float32)),
    "float32 * 1.5": (lambda m: m.ones(2, dtype=m.float32) * 1.5),
    "float16 + 0.5": (lambda m: m.ones(2, dtype=m.float16) + 0.5),
    "float32 * 0-d default": (lambda m: m.ones(2, dtype=m.float32) * m.tensor(2.0)),
    "int * 2": (lambda m: m.tensor([1, 2]) * 2),
}


@pytest.mark.parametrize("default", ["float64", "float16", "float32"])
@pytest.mark.parametrize("case", list(PROMOTION))
def test_promotion_with_python_floats_matches_torch(case, default):
    torch = pytest.importorskip("torch")
    _both(torch, default)
    got, want = PROMOTION[case](mg), PROMOTION[case](torch)
    assert _name(got.dtype) == _name(want.dtype), f"{case} under default {default}"
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.to(torch.float64).numpy(),
                               rtol=1e-3)


def test_in_place_checks_use_the_default():
    mg.set_default_dtype(mg.float64)
    t = mg.tensor([1, 2])
    with pytest.raises(TypeError, match="in place"):
        t *= 1.5  # int64 * float -> the default float, which int64 cannot hold
    f = mg.ones(2, dtype=mg.float32)
    f += 1.5
    assert f.dtype == mg.float32


# Float-only ops on integer/bool input, and float constants beside them, give the default dtype
LEFT = {
    "atan(int)": (lambda m: (F.atan if m is mg else m.atan)(m.tensor([1, 2]))),
    "reciprocal(int)": (lambda m: m.tensor([1, 2]).reciprocal()),
    "clamp(int, 0.5)": (lambda m: m.tensor([1, 2]).clamp(0.5, 2.5)),
    "where(cond, 1.5, 2.5)": (lambda m: m.where(m.tensor([True, False]), 1.5, 2.5)),
}


@pytest.mark.parametrize("case", list(LEFT))
def test_float_only_ops_on_ints_under_float64_default(case):
    torch = pytest.importorskip("torch")
    _both(torch, "float64")
    assert _name(LEFT[case](mg).dtype) == _name(LEFT[case](torch).dtype)


# ----------------------------------------------------------------------------- autocast
@pytest.mark.parametrize("lowp", ["float16", "bfloat16"])
def test_autocast_is_unaffected(lowp):
    mg.set_default_dtype(mg.float64)
    a32 = mg.ones(2, 2, dtype=mg.float32)
    h = mg.ones(2, 2, dtype=lowp)
    with amp.autocast(dtype=lowp):
        assert F.matmul(a32, a32).dtype == lowp       # float32 inputs still cast down
        assert F.linear(a32, a32).dtype == lowp
        assert F.softmax(h, axis=0).dtype == mg.float32  # float32 ops: float32, not the default
        assert F.exp(h).dtype == mg.float32
        assert F.mse_loss(h, h).dtype == mg.float32


def test_autocast_leaves_float64_like_torch():
    torch = pytest.importorskip("torch")
    _both(torch, "float64")
    a, ta = mg.ones(2, 2), torch.ones(2, 2)
    with amp.autocast(dtype="float16"):
        got = F.matmul(a, a).dtype
    with torch.autocast("cpu", dtype=torch.float16):
        want = (ta @ ta).dtype
    assert _name(got) == _name(want) == "float64"


# NumPy values inside Python lists keep their dtype in PyTorch's inference: a float64 one makes
# the list float64 (mg.tensor([np.mean(a)]) is not rounded to float32), a float32 one leaves it
# at the default
LIST_CASES = {
    "[np.float64]": lambda m: m.tensor([np.float64(1.5)]),
    "[1.5, np.float64]": lambda m: m.tensor([1.5, np.float64(2)]),
    "[[np.float64]]": lambda m: m.tensor([[1.0], (np.float64(1.5),)]),
    "[np.float32, 2.5]": lambda m: m.tensor([np.float32(1.5), 2.5]),
    "[np.float16]": lambda m: m.tensor([np.float16(1)]),
    "[float64 array]": lambda m: m.tensor([np.array([1.5])]),
    "[np.int32, 2]": lambda m: m.tensor([np.int32(1), 2]),
    "[1.5, 2.5]": lambda m: m.tensor([1.5, 2.5]),
}


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("case", list(LIST_CASES))
def test_numpy_values_in_lists_keep_their_dtype(case, default):
    torch = pytest.importorskip("torch")
    _both(torch, default)
    assert _name(LIST_CASES[case](mg).dtype) == _name(LIST_CASES[case](torch).dtype)
