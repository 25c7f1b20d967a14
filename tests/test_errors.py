"""Bad input raises a clear error (op, shapes/dtypes/values, the fix) instead of a silent wrong
answer or a crash deep inside NumPy: index ranges, layer arguments, negative sizes, devices."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
import minigrad.nn as nn
from minigrad import _backend as B
from minigrad._backend import indexing
from minigrad._backend import random as R


# ------------------------------------------------------------------------------ index ranges
@pytest.mark.parametrize("ids, bad", [([1, -1], -1), ([1, 5], 5), ([[0, 7], [2, 3]], 7)])
def test_embedding_ids_out_of_range_raise_index_error(ids, bad):
    emb = nn.Embedding(5, 2)
    with pytest.raises(IndexError, match=rf"embedding: index {bad} is out of range for the "
                                         r"embedding table \(num_embeddings\) of size 5"):
        emb(mg.tensor(ids))
    with pytest.raises(ValueError):                # also a ValueError, like other bad input
        F.embedding(mg.tensor(ids), emb.weight)


def test_embedding_in_range_and_its_gradient():
    emb = nn.Embedding(5, 2)
    ids = mg.tensor([[0, 4], [4, 4]])
    out = emb(ids)
    np.testing.assert_array_equal(out.numpy()[0, 1], emb.weight.numpy()[4])
    out.sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy()[:, 0], [1, 0, 0, 0, 3])


def test_gather_index_ops_name_the_index_and_the_size():
    x = mg.zeros(3, 4)
    with pytest.raises(IndexError, match=r"gather: index 4 is out of range for a dimension "
                                         r"of size 4 .*valid: \[-4, 3\]"):
        F.gather(x, 1, np.array([[0, 4]]))
    with pytest.raises(IndexError, match="index_select: index -5"):
        F.index_select(x, 1, np.array([-5]))
    with pytest.raises(IndexError, match="scatter_add: index 3"):
        F.scatter_add(x, 0, np.array([[3, 0]]), mg.ones(1, 2))
    with pytest.raises(ValueError, match="index must be an integer array, got float64"):
        indexing.check_index_range(np, np.array([0.5]), 3, "gather")


class _FakeXp:
    """Stands for CuPy: any module that is not NumPy."""
    where = staticmethod(np.where)
    clip = staticmethod(np.clip)


def test_gpu_index_checks_run_only_in_debug_mode():
    idx = np.array([0, 9, -1])
    out, bad = indexing.check_index_range(_FakeXp, idx, 4, "gather")  # no host read, no raise
    assert out.tolist() == [0, 3, 3] and bad.tolist() == [False, True, False]  # -1 wraps
    assert not indexing.host_checks(_FakeXp) and indexing.host_checks(np)
    with indexing.index_debug():
        assert indexing.host_checks(_FakeXp)
        with pytest.raises(IndexError, match="gather: index 9"):
            indexing.check_index_range(_FakeXp, idx, 4, "gather")
    assert not indexing.host_checks(_FakeXp)


@pytest.mark.parametrize("op", ["embedding", "gather", "index_select", "scatter_add"])
def test_out_of_range_indices_without_a_host_read_poison_the_output(op, monkeypatch):
    # The GPU path (no host read per op), run on the CPU with the read switched off: the op
    # reads a clipped, valid element, and the positions that used a bad index are NaN.
    monkeypatch.setattr(indexing, "host_checks", lambda xp: False)
    w = mg.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    if op == "embedding":
        out = F.embedding(mg.tensor([0, 7]), w).numpy()
        assert np.isfinite(out[0]).all() and np.isnan(out[1]).all()
    elif op == "gather":
        out = F.gather(w, 1, np.array([[0, 9]])).numpy()
        assert out[0, 0] == 0.0 and np.isnan(out[0, 1])
    elif op == "index_select":
        out = F.index_select(w, 0, np.array([2, 5])).numpy()
        assert (out[0] == w.numpy()[2]).all() and np.isnan(out[1]).all()
    else:
        out = F.scatter_add(w, 0, np.array([[3, 0]]), mg.ones(1, 2)).numpy()
        assert np.isnan(out).all()


def test_scatter_adds_accumulate_repeated_targets():
    vals = np.arange(8, dtype=np.float32).reshape(4, 2)
    rows = indexing.scatter_add_rows(np, 3, np.array([2, 0, 2, 2]), vals, np.float32)
    np.testing.assert_array_equal(rows, [[2, 3], [0, 0], [0 + 4 + 6, 1 + 5 + 7]])
    flat = indexing.scatter_add_flat(np, 4, np.array([3, 3, 0]), np.float32([1, 2, 5]),
                                     np.float16)
    assert flat.dtype == np.float16 and flat.tolist() == [5, 0, 0, 3]


# ------------------------------------------------------------------------------ losses
def test_cross_entropy_label_range_checked_on_numpy():
    with pytest.raises(ValueError, match=r"cross_entropy: target values must be in \[0, 3\)"):
        F.cross_entropy(mg.zeros(2, 3), mg.tensor([0, -1]))


# ------------------------------------------------------------------------------ layer arguments
@pytest.mark.parametrize("kwargs, match", [
    ({"stride": 0}, r"Conv2d: stride must be >= 1, got \(0, 0\)"),
    ({"kernel_size": 0}, r"Conv2d: kernel_size must be >= 1"),
    ({"padding": -1}, r"Conv2d: padding must be >= 0"),
    ({"dilation": (1, 0)}, r"Conv2d: dilation must be >= 1, got \(1, 0\)"),
    ({"groups": 0}, r"Conv2d: groups must be >= 1, got 0"),
    ({"kernel_size": (3, 3, 3)}, r"Conv2d: kernel_size must be an int or a 2-tuple"),
    ({"in_channels": -3}, r"Conv2d: in_channels/out_channels must be >= 0"),
])
def test_conv_arguments_validated_at_construction(kwargs, match):
    args = {"in_channels": 3, "out_channels": 4, "kernel_size": 3, **kwargs}
    with pytest.raises(ValueError, match=match):
        nn.Conv2d(**args)


def test_functional_conv_and_pooling_validate_before_dividing():
    x, w = mg.ones(1, 3, 5, 5), mg.ones(4, 3, 3, 3)
    for kw in ({"stride": 0}, {"padding": -1}, {"dilation": 0}):
        with pytest.raises(ValueError, match="conv2d: stride and dilation must be >= 1"):
            F.conv2d(x, w, **kw)
    with pytest.raises(ValueError, match="conv2d: the weight's kernel size must be >= 1"):
        F.conv2d(x, mg.ones(4, 3, 0, 3))
    with pytest.raises(ValueError, match="conv1d: stride"):
        F.conv1d(mg.ones(1, 3, 5), mg.ones(4, 3, 3), stride=0)
    with pytest.raises(ValueError, match="max_pool2d: kernel_size and stride must be >= 1"):
        F.max_pool2d(x, 2, stride=0)
    with pytest.raises(ValueError, match="avg_pool2d"):
        F.avg_pool2d(x, 0)


def test_zero_sized_layers_build_like_pytorch():
    lin = nn.Linear(0, 3)
    out = lin(mg.ones(2, 0))
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(lin.bias.numpy(), (2, 3)))
    assert nn.Conv2d(0, 4, 3).weight.shape == (4, 0, 3, 3)
    assert nn.Linear(3, 0)(mg.ones(2, 3)).shape == (2, 0)


@pytest.mark.parametrize("make, match", [
    (lambda: mg.zeros(-1, 3), r"zeros: negative dimension -1 in shape \(-1, 3\)"),
    (lambda: mg.ones((2, -4)), r"ones: negative dimension -4"),
    (lambda: mg.randn(2, -3), r"randn: negative dimension -3 in shape \(2, -3\)"),
    (lambda: mg.rand(-1), r"rand: negative dimension -1"),
    (lambda: mg.full((2, -1), 1.0), r"full: negative dimension -1"),
    (lambda: mg.normal(size=(-2,)), r"normal: negative dimension -2"),
    (lambda: mg.empty(-5), r"empty: negative dimension -5"),
    (lambda: nn.Linear(-1, 3), r"Linear: in_features must be a non-negative int, got -1"),
    (lambda: nn.Linear(2, -3), r"Linear: out_features must be a non-negative int, got -3"),
    (lambda: nn.Embedding(-2, 3), r"Embedding: num_embeddings must be a non-negative int"),
    (lambda: nn.Embedding(3, 2, padding_idx=3), r"Embedding: padding_idx 3 is not a row"),
])
def test_negative_sizes_name_the_function_and_the_dimension(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_creation_sizes_must_be_ints():
    with pytest.raises(TypeError, match=r"zeros: sizes must be ints, got shape \(2\.5, 3\)"):
        mg.zeros(2.5, 3)
    assert mg.zeros(np.int64(2), 3).shape == (2, 3) and mg.zeros([]).shape == ()


# ------------------------------------------------------------------------------ random on the GPU
class _CupyLikeGenerator:
    """CuPy's Generator: standard_normal/random/integers, but no normal()/uniform()."""

    def __init__(self):
        self.g = np.random.default_rng(0)

    def standard_normal(self, size):
        return self.g.standard_normal(size)

    def random(self, size):
        return self.g.random(size)


def test_normal_and_uniform_work_without_generator_normal():
    gen = _CupyLikeGenerator()
    x = R.normal(gen, 2.0, 3.0, (20000,))
    assert abs(x.mean() - 2.0) < 0.1 and abs(x.std() - 3.0) < 0.1
    u = R.uniform(gen, -1.0, 5.0, (20000,))
    assert u.min() >= -1.0 and u.max() < 5.0 and abs(u.mean() - 2.0) < 0.1
    mg.manual_seed(1)                               # the CPU stream is unchanged
    a = mg.normal(1.0, 2.0, (5,)).numpy()
    np.testing.assert_array_equal(
        a, np.random.default_rng(1).normal(1.0, 2.0, (5,)).astype(np.float32))


# ------------------------------------------------------------------------------ devices
def test_device_mismatch_message_is_a_pure_function():
    assert B.device_mismatch("add", ["cpu", "cpu"]) is None
    err = B.device_mismatch("matmul", ["cuda:0", "cpu", "cuda:0"])
    assert isinstance(err, RuntimeError) and isinstance(err, ValueError)
    assert str(err).startswith("matmul: expected all tensors on one device, but found cuda:0 "
                               "and cpu; move them")


def test_failing_op_with_mixed_devices_names_both(monkeypatch):
    # Fake the devices: 2-D arrays "live on cuda:0". The op fails (a shape error here, a
    # NumPy/CuPy type error on a real machine) and the dispatcher names the devices.
    from minigrad.core import function

    monkeypatch.setattr(function, "_device_of", lambda a: "cuda:0" if a.ndim == 2 else "cpu")
    with pytest.raises(RuntimeError, match="add: expected all tensors on one device, but "
                                           "found cuda:0 and cpu"):
        mg.ones(2, 3) + mg.ones(4)
    with pytest.raises(ValueError, match="broadcast"):   # same device: the original error
        mg.ones(2, 3) + mg.ones(2, 4)


@pytest.mark.skipif(not mg.cuda.is_available(), reason="needs a GPU")
def test_cpu_and_cuda_tensors_in_one_op_raise():
    a, b = mg.ones(2, 3), mg.ones(2, 3, device="cuda")
    for op, name in ((lambda: a + b, "add"), (lambda: F.matmul(a, b.T), "matmul")):
        with pytest.raises(RuntimeError, match=rf"{name}: expected all tensors on one device, "
                                               "but found (cpu and cuda:0|cuda:0 and cpu)"):
            op()
    assert mg.normal(0.0, 1.0, (3,), device="cuda").device == "cuda:0"


# ----------------------------------------------------------------------------- named errors
class _Ragged(mg.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return np.ones(i + 1, np.float32)


@pytest.mark.parametrize("fn,err,match", [
    # int64 is averaged (truncated, as PyTorch's CPU kernels); other integers are refused
    (lambda: mg.functional.avg_pool2d(mg.tensor(np.ones((1, 1, 4, 4), np.int32)), 2),
     ValueError, "^avg_pool2d: expects a floating tensor"),
    (lambda: mg.functional.adaptive_avg_pool2d(mg.tensor(np.ones((1, 1, 4, 4), np.int64)), 2),
     ValueError, "^adaptive_avg_pool2d: expects a floating tensor"),
    (lambda: mg.functional.concat([mg.tensor(1.0), mg.tensor(2.0)]),
     ValueError, "^concat: the tensor at position 0 is 0-d"),
    (lambda: mg.ones(1, 3).expand(2, 3).add_(1.0), RuntimeError, "^add_: .* expanded view"),
    (lambda: mg.nn.LSTM(4, -8), ValueError, "^LSTM: input_size must be >= 0 and hidden_size"),
    (lambda: mg.nn.MultiheadAttention(0, 1), ValueError, "^MultiheadAttention: embed_dim"),
    (lambda: mg.nn.GRU(4, 4, dropout=2.0), ValueError, "^GRU: dropout must be a probability"),
    (lambda: mg.nn.LeakyReLU("x"), TypeError, "^LeakyReLU: negative_slope must be a number"),
    (lambda: next(iter(mg.data.DataLoader(_Ragged(), batch_size=2))),
     ValueError, "^DataLoader: the samples of a batch have different shapes"),
    (lambda: mg.functional.conv2d(mg.ones(1, 1, 5, 5), mg.ones(1, 1, 3, 3), stride=2,
                                  padding="same"), ValueError, "^conv2d: padding='same'"),
    (lambda: mg.ones(2) - mg.tensor([True, False]), ValueError, "^sub: subtraction of a bool"),
    (lambda: mg.ones(2) - True, ValueError, "^sub: subtraction of a bool"),
    (lambda: -mg.tensor([True]), ValueError, "^neg: negation of a bool"),
    (lambda: abs(mg.tensor([True])), ValueError, "^abs: the absolute value of a bool"),
    (lambda: mg.tensor([[True, True]]) @ mg.tensor([[True], [True]]), ValueError,
     "^matmul: products of bool tensors"),
    (lambda: mg.tensor([True]) ** mg.tensor([True]), ValueError, "^pow: a power of bool"),
    (lambda: F.conv2d(mg.tensor(np.ones((1, 1, 2, 2), bool)),
                         mg.tensor(np.ones((1, 1, 1, 1), bool))), ValueError,
     "^conv2d: products of bool tensors"),
    (lambda: F.cross(mg.tensor(np.ones((2, 3), bool)), mg.tensor(np.ones((2, 3), bool))),
     ValueError, "^cross: products of bool tensors"),
    (lambda: F.scatter_add(mg.ones((3, 4)), 1, mg.tensor(np.zeros((3, 2), np.int64)),
                           mg.ones(7)), ValueError, "^scatter_add: index must have the same "
     "number of dimensions as src"),
    # out-of-range axes wrapped around silently (axis 5 of a 3-D tensor contracted axis 2)
    (lambda: F.tensordot(mg.ones((2, 3, 4)), mg.ones((4, 5)), ([5], [0])), ValueError,
     "^tensordot: axis 5 is out of range"),
    (lambda: F.nn.cross_entropy(mg.ones((2, 3, 4)), mg.tensor(np.zeros((2, 4), np.int64)),
                                axis=4, with_logits=False), ValueError,
     "^cross_entropy: axis 4 is out of range"),
    (lambda: F.embedding(mg.tensor(np.array([0])), mg.tensor(1.0)), ValueError,
     "^embedding: weight must be 2-D"),
    (lambda: F.nll_loss(mg.ones((3, 4)), mg.tensor(np.zeros(3, np.int64)), weight=mg.ones(5)),
     ValueError, r"^nll_loss: weight must have shape \(4,\)"),
    (lambda: F.binary_cross_entropy(mg.ones((3, 4)) * 0.5, mg.ones((3, 4)),
                                    weight=mg.ones((2, 4))), ValueError,
     r"^binary_cross_entropy \(weight\): shapes"),
    (lambda: F.interpolate(mg.ones((1, 1, 0, 4)), size=(2, 2)), ValueError,
     "^interpolate: the spatial input sizes must be positive"),
    (lambda: F.split(mg.tensor(1.0), 1), ValueError, "^split: expects at least a 1-D"),
    (lambda: F.pad(mg.ones((0, 2)), 1, mode="reflect"), ValueError,
     "^pad: mode 'reflect' cannot pad the empty axis 0"),
])
def test_errors_name_the_op(fn, err, match):
    with pytest.raises(err, match=match):
        fn()


def test_what_pytorch_computes_is_computed():
    out = mg.functional.gather(mg.tensor(1.0), 0, mg.tensor(0))     # a 0-d gather
    assert out.shape == () and out.item() == 1.0
    mixed = mg.functional.matmul(mg.ones(2, 2, dtype="float16"), mg.ones(2, 2, dtype="bfloat16"))
    assert mixed.dtype == mg.float32                                 # the widest float, as on GPU
    np.testing.assert_array_equal(mixed.numpy(), np.full((2, 2), 2.0))


def test_an_integer_device_is_that_gpu_as_in_pytorch():
    assert mg._backend.normalize_device(2) == "cuda:2"
    if not mg.cuda.is_available():
        with pytest.raises(RuntimeError, match="device 'cuda:3' requested but CuPy sees no GPU"):
            F.to_device(mg.ones(2), 3)
