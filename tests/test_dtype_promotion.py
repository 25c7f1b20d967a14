"""dtype promotion follows PyTorch (not NumPy), checked against a table written from PyTorch's
rules; products refuse mixing integers with floats; autocast and promotion agree."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.functional as F
import minigrad.nn as nn
from minigrad import amp
from minigrad.testing import gradcheck

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64",
         "float16", "bfloat16", "float32", "float64"]
_SHORT = {"b": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32",
          "i64": "int64", "f16": "float16", "bf16": "bfloat16", "f32": "float32",
          "f64": "float64"}

# PyTorch's result dtype of a binary op on two tensors (torch.promote_types), written by hand:
# row dtype op column dtype. Integer pairs widen as in C (uint8 with int8 -> int16); an integer
# or bool with a float gives that float; float16 with bfloat16 gives float32.
_TABLE = """
        b    u8   i8   i16  i32  i64  f16  bf16 f32  f64
b       b    u8   i8   i16  i32  i64  f16  bf16 f32  f64
u8      u8   u8   i16  i16  i32  i64  f16  bf16 f32  f64
i8      i8   i16  i8   i16  i32  i64  f16  bf16 f32  f64
i16     i16  i16  i16  i16  i32  i64  f16  bf16 f32  f64
i32     i32  i32  i32  i32  i32  i64  f16  bf16 f32  f64
i64     i64  i64  i64  i64  i64  i64  f16  bf16 f32  f64
f16     f16  f16  f16  f16  f16  f16  f16  f32  f32  f64
bf16    bf16 bf16 bf16 bf16 bf16 bf16 f32  bf16 f32  f64
f32     f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
f64     f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
"""

# tensor dtype op Python scalar (bool, int, float): a scalar only matters when its category
# (bool < int < float) is above the tensor's, and then gives that category's default dtype.
_SCALAR_TABLE = """
        bool int  float
b       b    i64  f32
u8      u8   u8   f32
i8      i8   i8   f32
i16     i16  i16  f32
i32     i32  i32  f32
i64     i64  i64  f32
f16     f16  f16  f16
bf16    bf16 bf16 bf16
f32     f32  f32  f32
f64     f64  f64  f64
"""


def _parse(text):
    rows = [line.split() for line in text.strip().splitlines()]
    cols = rows[0]
    return {(_SHORT[r[0]], c): _SHORT[v] for r in rows[1:] for c, v in zip(cols, r[1:])}


TENSOR_TENSOR = {(a, _SHORT[b]): v for (a, b), v in _parse(_TABLE).items()}
TENSOR_SCALAR = _parse(_SCALAR_TABLE)
SCALARS = {"bool": True, "int": 3, "float": 2.5}


def _float(d):
    return d if d in ("float16", "bfloat16", "float32", "float64") else "float32"


def _t(dtype, values=(1, 0, 1)):
    return mg.tensor(np.array(values).astype(np.float64), dtype=dtype)


def test_tables_are_symmetric_and_complete():
    assert len(TENSOR_TENSOR) == 100 and len(TENSOR_SCALAR) == 30
    for (a, b), v in TENSOR_TENSOR.items():
        assert TENSOR_TENSOR[(b, a)] == v


_dtypes = st.sampled_from(NAMES)


@settings(max_examples=120, deadline=None)
@given(a=_dtypes, b=_dtypes, op=st.sampled_from(["add", "mul", "maximum", "where"]))
def test_tensor_tensor_promotion(a, b, op):
    x, y = _t(a, (1, 0, 1)), _t(b, (1, 1, 0))
    fn = {"add": F.add, "mul": F.mul, "maximum": F.maximum,
          "where": lambda p, q: F.where(mg.tensor([True, False, True]), p, q)}[op]
    out = fn(x, y)
    assert str(out.dtype) == TENSOR_TENSOR[(a, b)], (a, b, op)
    ref = {"add": np.add, "mul": np.multiply, "maximum": np.maximum,
           "where": lambda p, q: np.where([True, False, True], p, q)}[op](
        np.array([1, 0, 1.0]), np.array([1, 1, 0.0]))
    if out.dtype == np.bool_:
        ref = ref.astype(bool)
    np.testing.assert_array_equal(out.numpy().astype(np.float64), ref.astype(np.float64))


@settings(max_examples=60, deadline=None)
@given(a=_dtypes, kind=st.sampled_from(sorted(SCALARS)), side=st.sampled_from(["left", "right"]))
def test_tensor_scalar_promotion(a, kind, side):
    x, s = _t(a), SCALARS[kind]
    out = x * s if side == "right" else s * x
    assert str(out.dtype) == TENSOR_SCALAR[(a, kind)], (a, kind)
    np.testing.assert_allclose(out.numpy().astype(np.float64), np.array([1, 0, 1.0]) * float(s))


@settings(max_examples=60, deadline=None)
@given(a=_dtypes, b=_dtypes)
def test_true_division_gives_a_float(a, b):
    x, y = _t(a, (1, 0, 1)), _t(b, (2, 2, 2)) if b != "bool" else _t(b, (1, 1, 1))
    out = x / y
    assert str(out.dtype) == _float(TENSOR_TENSOR[(a, b)]), (a, b)
    assert str((x / 2).dtype) == _float(a)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fn", [F.exp, F.log, F.sqrt, F.sigmoid, F.tanh, F.sin, F.erf, F.mean],
                         ids=lambda f: f.__name__)
def test_float_only_ops_give_the_default_float(fn, name):
    x = _t(name, (1, 1, 1))
    out = fn(x)
    assert str(out.dtype) == _float(name)
    np.testing.assert_allclose(out.numpy().astype(np.float64),
                               fn(mg.tensor([1.0, 1.0, 1.0], dtype="float64")).numpy(),
                               rtol=1e-2)


def test_the_issue_examples():
    assert F.exp(mg.tensor([1, 2])).dtype == mg.float32               # NumPy: float64
    assert F.exp(mg.tensor([True, False])).dtype == mg.float32        # NumPy: float16
    i = mg.tensor(np.arange(4))
    assert (i * mg.ones(4)).dtype == mg.float32                       # NumPy: float64
    assert (i + 2.5).dtype == mg.float32                              # NumPy: float64
    assert (mg.ones(2, dtype="float16") + 2.5).dtype == mg.float16    # scalars stay weak
    assert (mg.ones(2, dtype="float16") + mg.ones(2, dtype="bfloat16")).dtype == mg.float32


@pytest.mark.parametrize("call", [
    lambda: F.matmul(mg.tensor(np.ones((2, 3), np.int64)), mg.ones(3, 2)),
    lambda: mg.ones(2, 3) @ mg.tensor(np.ones((3, 2), np.int32)),
    lambda: nn.Linear(4, 3)(mg.tensor(np.ones((2, 4), np.int64))),
    lambda: F.conv2d(mg.tensor(np.ones((1, 1, 4, 4), np.int64)), mg.ones(1, 1, 3, 3)),
    lambda: F.bmm(mg.ones(2, 2, 2), mg.tensor(np.ones((2, 2, 2), bool))),
], ids=["matmul", "matmul-rev", "linear", "conv2d", "bmm"])
def test_products_refuse_integer_with_float(call):
    with pytest.raises(RuntimeError, match=r"expected all inputs to have the same dtype, but "
                                           r"got \w+ \(.*\) and \w+ \(.*\); cast one"):
        call()


def test_products_of_one_dtype_still_work():
    i = mg.tensor(np.arange(6).reshape(2, 3))
    out = i @ i.T
    assert out.dtype == mg.int64
    np.testing.assert_array_equal(out.numpy(), np.arange(6).reshape(2, 3) @
                                  np.arange(6).reshape(2, 3).T)
    lin = nn.Linear(4, 3)
    assert lin(mg.ones(2, 4)).dtype == mg.float32


def test_autocast_casts_products_and_promotion_agrees():
    a, w = mg.ones(2, 3), mg.ones(3, 2)
    with amp.autocast():
        assert (a.half() @ w).dtype == mg.float16          # lower row casts both
        assert F.exp(mg.tensor([1, 2])).dtype == mg.float32  # int -> float32, fp32 row keeps it
        assert (a.half() + a).dtype == mg.float32           # promote row: widest float
        assert (mg.tensor(np.arange(3)) + mg.ones(3, dtype="float16")).dtype == mg.float16
        with pytest.raises(RuntimeError, match="same dtype"):
            mg.tensor(np.ones((2, 3), np.int64)) @ w        # autocast casts floats only


def test_gradient_through_a_promoted_op():
    w = mg.tensor([1.0, 2.0, 3.0], dtype="float16", requires_grad=True)
    i = mg.tensor([4, 5, 6])
    y = (w * i).sum()
    assert y.dtype == mg.float16
    y.backward()
    assert w.grad.dtype == mg.float16
    np.testing.assert_array_equal(w.grad.numpy(), [4, 5, 6])
    gradcheck(lambda x: F.exp(x * mg.tensor([1, 2])) / mg.tensor([3, 4]),
              [np.array([0.1, 0.2])])


def test_matches_torch_when_installed():
    torch = pytest.importorskip("torch")
    for (a, b), v in TENSOR_TENSOR.items():
        assert str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1] == v
    for (a, kind), v in TENSOR_SCALAR.items():
        got = torch.result_type(torch.ones(2, dtype=getattr(torch, a)), SCALARS[kind])
        assert str(got).split(".")[1] == v, (a, kind)
    for a in NAMES:
        assert str(torch.exp(torch.ones(2, dtype=getattr(torch, a))).dtype).split(".")[1] \
            == _float(a)
