"""Comparisons and integer powers across dtypes: PyTorch's answers, never a RecursionError.

A comparison's bool result never has an input's dtype, which once sent the promote-and-retry
path of ``Function.apply`` into endless retries."""

import numpy as np
import pytest

import minigrad as mg

CASES = [
    ("int == scalar", lambda: mg.tensor([1, 2, 3]) == 2, [False, True, False]),
    ("int != scalar", lambda: mg.tensor([1, 2, 3]) != 2.5, [True, True, True]),
    ("f32 < f64", lambda: mg.ones(2) < mg.ones(2, dtype="float64"), [False, False]),
    ("f32 < f16", lambda: mg.ones(2) < mg.ones(2, dtype="float16"), [False, False]),
    ("f32 == bf16", lambda: mg.ones(2) == mg.ones(2, dtype="bfloat16"), [True, True]),
    ("f16 >= bf16", lambda: mg.ones(2, dtype="float16") >= mg.ones(2, dtype="bfloat16"),
     [True, True]),
    ("int > f32", lambda: mg.tensor([1, 3]) > mg.tensor([1.5, 2.5]), [False, True]),
]


@pytest.mark.parametrize("name,fn,expect", CASES, ids=[c[0] for c in CASES])
def test_comparisons_across_dtypes(name, fn, expect):
    out = fn()
    assert out.dtype == mg.bool_
    np.testing.assert_array_equal(out.numpy(), expect)


def test_comparisons_inside_autocast():
    with mg.autocast():
        out = mg.ones(2) < mg.ones(2, dtype="float16") * 2
    np.testing.assert_array_equal(out.numpy(), [True, True])


def test_integer_powers_with_negative_exponent_tensors():
    # PyTorch: 2 ** -1 == 0 in integers; 1 ** -k == 1; (-1) ** -k == +-1
    np.testing.assert_array_equal((2 ** mg.tensor([-1, 2])).numpy(), [0, 4])
    got = mg.tensor([1, -1, -1, 3]) ** mg.tensor([-2, -1, -2, -1])
    assert got.dtype == mg.int64
    np.testing.assert_array_equal(got.numpy(), [1, -1, 1, 0])
    with pytest.raises(ValueError, match="negative integer powers"):  # PyTorch raises too
        mg.tensor([2]) ** -1
