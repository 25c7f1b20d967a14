"""Broadcast mismatches raise one message that names the op and every shape (not NumPy's)."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F

A, B = mg.ones(2, 3), mg.ones(4)
SHAPES = r"shapes \(2, 3\) and \(4,\) cannot be broadcast together"


@pytest.mark.parametrize("name, call", [
    ("add", lambda: A + B),
    ("sub", lambda: A - B),
    ("mul", lambda: A * B),
    ("div", lambda: A / B),
    ("pow", lambda: A ** B),
    ("maximum", lambda: F.maximum(A, B)),
    ("minimum", lambda: F.minimum(A, B)),
    ("add", lambda: F.add(A, np.ones(4, np.float32))),
])
def test_binary_ops_name_the_op_and_shapes(name, call):
    with pytest.raises(ValueError, match=rf"^{name}: {SHAPES}"):
        call()


def test_where_names_all_three_shapes():
    with pytest.raises(ValueError, match=r"^where: shapes \(2, 3\) and \(2, 3\) and \(4,\) "
                                         "cannot be broadcast"):
        F.where(mg.ones(2, 3) > 0, A, B)


def test_recorded_op_and_int_operand_get_the_same_message():
    w = mg.ones(2, 3, requires_grad=True)
    with pytest.raises(ValueError, match=rf"^mul: {SHAPES}"):
        w * mg.tensor(np.ones(4, np.int64))


def test_batched_matmul_names_the_batch_dimensions():
    with pytest.raises(ValueError, match=r"^matmul \(batch dimensions of a \(2, 3, 4\) and b "
                                         r"\(5, 4, 2\)\): shapes \(2,\) and \(5,\) cannot be "
                                         "broadcast"):
        mg.ones(2, 3, 4) @ mg.ones(5, 4, 2)
    out = mg.ones(1, 3, 4) @ mg.ones(5, 4, 2)
    assert out.shape == (5, 3, 2)
    np.testing.assert_allclose(out.numpy(), np.full((5, 3, 2), 4.0))


def test_broadcasting_that_works_is_unchanged():
    out = mg.ones(2, 3) + mg.tensor([1.0, 2.0, 3.0])
    np.testing.assert_allclose(out.numpy(), [[2, 3, 4], [2, 3, 4]])


def test_inplace_op_names_both_shapes():
    t = mg.ones(3)
    with pytest.raises(ValueError, match=r"add_: operand of shape \(2, 3\) does not broadcast "
                                         r"to the tensor's shape \(3,\)"):
        t.add_(mg.ones(2, 3))
    with pytest.raises(ValueError, match=r"add_: shapes \(3,\) and \(4,\) cannot be broadcast"):
        t += mg.ones(4)
    np.testing.assert_allclose(t.numpy(), [1, 1, 1])
