"""Which Tensors share memory, as in PyTorch: ``tensor()`` copies; ``from_numpy`` and
``as_tensor`` share (writes through either are seen by both); ``Parameter(t)`` shares ``t``'s
memory and version counter, so changing ``t`` in place before a backward that needs it raises."""

import numpy as np
import pytest

import minigrad as mg


@pytest.mark.parametrize("source", ["ndarray", "tensor"])
def test_tensor_copies_its_source(source):
    a = np.ones(2, np.float32)
    src = a if source == "ndarray" else mg.tensor(a)
    b = mg.tensor(src)
    b.add_(1.0)
    np.testing.assert_array_equal(a, [1.0, 1.0])
    if source == "tensor":
        np.testing.assert_array_equal(src.numpy(), [1.0, 1.0])


def test_from_numpy_and_as_tensor_share():
    a = np.ones(3, np.float32)
    f, s = mg.from_numpy(a), mg.as_tensor(a)
    a[0] = 5.0
    assert f.numpy()[0] == 5.0 and s.numpy()[0] == 5.0
    f.add_(1.0)
    assert a[0] == 6.0
    t = mg.tensor([1.0, 2.0])
    assert mg.as_tensor(t) is t
    assert mg.as_tensor(t, dtype="float64").dtype == mg.float64
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray"):
        mg.from_numpy([1, 2])


def test_parameter_shares_its_tensor_and_version_counter():
    t = mg.tensor([1.0, 2.0])
    p = mg.Parameter(t)
    assert np.shares_memory(p._data, t._data)
    y = (p * p).sum()
    t.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified in place after the forward"):
        y.backward()
    q = mg.Parameter(mg.tensor([1.0, 2.0]), dtype="float64")    # a conversion copies
    assert q.dtype == mg.float64
