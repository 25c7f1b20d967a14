"""An index or condition Tensor changed in place after the forward does not change where the
gradient goes: the backward scatters by the values the forward read (docs/migrating.md lists
this next to PyTorch's error)."""

import numpy as np

import minigrad as mg
import minigrad.functional as F


def test_embedding():
    i = mg.tensor([0, 1, 2])
    w = mg.Parameter(np.eye(3, dtype=np.float32))
    y = F.embedding(i, w)
    i[0] = 1
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((3, 3)))


def test_getitem_with_an_index_tensor():
    idx = mg.tensor([0, 1, 2])
    x = mg.Parameter(np.ones(3, np.float32))
    y = x[idx]
    idx[0] = 1
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1])


def test_gather_index_select_scatter_add():
    idx = mg.tensor([[0], [1]])
    x = mg.Parameter(np.ones((2, 2), np.float32))
    y = F.gather(x, 1, idx)
    idx[0, 0] = 1
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0], [0, 1]])
    idx = mg.tensor([0, 1])
    x = mg.Parameter(np.ones(3, np.float32))
    y = F.index_select(x, 0, idx)
    idx[0] = 2
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 0])
    idx = mg.tensor([0, 0])
    src = mg.Parameter(np.array([1.0, 2.0], np.float32))
    y = F.scatter_add(mg.zeros(3), 0, idx, src)
    idx[1] = 2
    (y * mg.tensor([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [1.0, 1.0])


def test_where_condition():
    c = mg.tensor([True, False])
    a = mg.Parameter(np.ones(2, np.float32))
    y = F.where(c, a, 0.0)
    c[0] = False
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1, 0])


def test_no_copy_without_a_backward():
    idx = mg.tensor([0, 1])
    x = mg.tensor(np.ones(3, np.float32))          # nothing requires grad: nothing is kept
    with mg.no_grad():
        y = x[idx]
    assert y.shape == (2,)
