"""Ops that compute in floats never return a truncated integer for integer or bool input: they
compute in float32 (PyTorch's default float) or raise as PyTorch does, naming the op."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F

INTS = mg.tensor([1, 2, 4])
REFUSED = {
    "var": lambda: F.var(INTS),
    "std": lambda: F.std(INTS),
    "norm": lambda: F.norm(INTS),
    "vector_norm": lambda: F.vector_norm(INTS),
    "matrix_norm": lambda: F.matrix_norm(mg.tensor([[1, 2], [3, 4]])),
    "dist": lambda: F.dist(INTS, INTS * 2),
    "cdist": lambda: F.cdist(mg.tensor([[1, 2]]), mg.tensor([[3.0, 4.0]])),
    "pdist": lambda: F.pdist(mg.tensor([[1, 2], [3, 4]])),
    "leaky_relu": lambda: F.leaky_relu(mg.tensor([-5, 3]), 0.5),
    **{op: (lambda op=op: getattr(F, op)(mg.tensor([-5, 3]))) for op in (
        "elu", "selu", "celu", "hardsigmoid", "hardswish", "mish", "logsigmoid", "softmin")},
    "hypot": lambda: F.hypot(INTS, INTS),
    "normalize": lambda: F.normalize(mg.tensor([[1, 2]])),
    "instance_norm": lambda: F.instance_norm(mg.tensor([[[1, 2]]])),
    "local_response_norm": lambda: F.local_response_norm(mg.tensor([[[1, 2]]]), 2),
}


def test_rounding_and_copies_keep_integers_as_pytorch():
    i = mg.tensor(np.array([3, -4], np.int32))
    for op in ("floor", "ceil", "trunc", "round", "relu6", "hardtanh", "flip"):
        out = getattr(F, op)(i)
        assert out.dtype == mg.int32, op
    assert F.exp2(INTS).dtype == mg.float32 and F.atan(INTS).dtype == mg.float32
    assert F.copysign(INTS, -1).dtype == mg.float32            # always floating, as PyTorch
    assert F.fmod(INTS, 3).dtype == mg.int64 and F.remainder(INTS, 3).dtype == mg.int64


@pytest.mark.parametrize("op", REFUSED)
def test_float_only_ops_refuse_integers_naming_the_op(op):
    with pytest.raises(ValueError, match=f"^{op}: expects a floating tensor"):
        REFUSED[op]()


@pytest.mark.parametrize("x,expect", [
    (mg.tensor([1, 2, 3]), np.log(np.exp([1.0, 2.0, 3.0]).sum())),
    (mg.tensor([True, False]), np.log(np.e + 1.0)),
    (mg.tensor(np.zeros(0, np.int64)), -np.inf),
])
def test_logsumexp_of_integers_is_float32(x, expect):
    out = F.logsumexp(x, 0)
    assert out.dtype == mg.float32
    np.testing.assert_allclose(out.item(), expect, rtol=1e-6)


def test_clip_promotes_like_pytorch():
    out = F.clip(mg.tensor([1, 2, 3]), 0.5, 2.5)
    assert out.dtype == mg.float32
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0, 2.5])
    out = F.clip(mg.tensor([True, False]), 0.5, 2.5)
    assert out.dtype == mg.float32 and out.numpy().tolist() == [1.0, 0.5]
    out = F.clip(mg.tensor([1, 2, 3]), 1, 2)                 # integer bounds keep integers
    assert out.dtype == mg.int64 and out.numpy().tolist() == [1, 2, 2]


def test_integer_and_bool_results_follow_pytorch():
    assert F.sum(mg.tensor(np.array([200, 100], np.uint8))).dtype == mg.int64
    assert F.sum(mg.tensor(np.array([200, 100], np.uint8))).item() == 300   # no uint8 wrap
    sq = F.square(mg.tensor([True, False]))
    assert sq.dtype == mg.int64 and sq.numpy().tolist() == [1, 0]
    sg = F.sign(mg.tensor([True, False]))
    assert sg.dtype == mg.bool_ and sg.numpy().tolist() == [True, False]


@pytest.mark.parametrize("op,expected", [("prod", 720), ("cumsum", [[1, 3, 6], [4, 9, 15]]),
                                         ("cumprod", [[1, 2, 6], [4, 20, 120]])])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64])
def test_integer_products_and_scans_are_int64_like_sum(op, expected, dtype):
    # sum's sibling rule: NumPy gives uint8 inputs uint64; PyTorch (and minigrad) int64
    x = mg.tensor(np.array([[1, 2, 3], [4, 5, 6]], dtype))
    y = getattr(F, op)(x) if op == "prod" else getattr(F, op)(x, 1)
    assert y.dtype == np.int64 and y.numpy().tolist() == expected
