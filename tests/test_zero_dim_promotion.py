"""PyTorch's promotion with 0-d tensors and across n-ary ops: within a category the dimensioned
tensors decide (a float64 0-d tensor does not widen a float32 batch), a higher category wins
with its own dtype; concat/stack promote like any other op. Expected dtypes are PyTorch 2.x's."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F

Z = mg.tensor  # 0-d from NumPy scalars keeps their dtype
CASES = [
    ("f32[2] + 0d f64", lambda: mg.ones(2) + Z(np.float64(1.0)), "float32"),
    ("f16[2] * 0d f32", lambda: mg.ones(2, dtype="float16") * Z(np.float32(1.0)), "float16"),
    ("0d f32 + f16[2]", lambda: Z(np.float32(1.0)) + mg.ones(2, dtype="float16"), "float16"),
    ("i32[2] + 0d i64", lambda: mg.tensor(np.array([1, 2], np.int32)) + Z(np.int64(1)), "int32"),
    ("i64[2] + 0d f32", lambda: mg.tensor([1, 2]) + Z(np.float32(1.0)), "float32"),
    ("i64[2] + 0d f64", lambda: mg.tensor([1, 2]) + Z(np.float64(1.0)), "float64"),
    ("bool[2] + 0d i64", lambda: mg.tensor([True, False]) + Z(np.int64(1)), "int64"),
    ("0d f32 + 0d f64", lambda: Z(np.float32(1.0)) + Z(np.float64(1.0)), "float64"),
    ("maximum(f32[2], 0d f64)", lambda: F.maximum(mg.ones(2), Z(np.float64(0))), "float32"),
    ("where(c, f32[2], 0d f64)",
     lambda: F.where(mg.tensor([True, False]), mg.ones(2), Z(np.float64(0))), "float32"),
    ("atan2(f16, f32)", lambda: F.atan2(mg.ones(2, dtype="float16"), mg.ones(2)), "float32"),
    ("concat([i64, f32])", lambda: F.concat([mg.tensor([1]), mg.ones(1)]), "float32"),
    ("stack([f16, bf16])",
     lambda: F.stack([mg.ones(1, dtype="float16"), mg.ones(1, dtype="bfloat16")]), "float32"),
]


@pytest.mark.parametrize("name,fn,dtype", CASES, ids=[c[0] for c in CASES])
def test_result_dtype(name, fn, dtype):
    assert str(fn().dtype) == dtype


def test_the_0d_operand_keeps_its_own_gradient_dtype():
    x = mg.ones(2, requires_grad=True)
    c = Z(np.float64(2.0))
    c.requires_grad = True
    y = x * c
    assert y.dtype == mg.float32
    y.sum().backward()
    assert x.grad.dtype == mg.float32 and c.grad.dtype == mg.float64
    assert c.grad.item() == 2.0


def test_prelu_of_a_0d_tensor_is_0d():
    out = F.prelu(Z(np.float32(-1.0)), mg.tensor(np.array([0.25], np.float32)))
    assert out.shape == () and out.item() == -0.25
