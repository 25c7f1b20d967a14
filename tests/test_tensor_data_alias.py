"""``Tensor.data`` is PyTorch's: a tensor on the same memory, outside autograd (the scripts of
pytorch/examples update and initialise weights through it)."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def test_data_is_a_detached_tensor_on_the_same_memory():
    p = nn.Parameter(mg.tensor([1.0, 2.0, 3.0]))
    d = p.data
    assert type(d) is mg.Tensor and not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert np.shares_memory(d.numpy(), p.numpy())


def test_writes_through_data_reach_the_tensor_unrecorded():
    p = nn.Parameter(mg.tensor([1.0, 2.0, 3.0]))
    p.grad = mg.tensor([1.0, 1.0, 2.0])
    p.data.add_(p.grad, alpha=-0.5)            # word_language_model's manual SGD step
    np.testing.assert_array_equal(p.numpy(), [0.5, 1.5, 2.0])
    p.data.mul_(2)
    p.data[0] = 7.0
    np.testing.assert_array_equal(p.numpy(), [7.0, 3.0, 4.0])
    assert p._version == 0 and p.requires_grad   # as in PyTorch: not counted on p
    p.data.zero_()
    assert not p.numpy().any()


def test_initialisers_through_data_fill_the_parameter():
    mg.manual_seed(0)
    w = nn.Linear(50, 40).weight
    w.data.uniform_(-0.1, 0.1)                 # the Transformer tutorial's init_weights
    assert -0.1 <= w.numpy().min() < -0.09 and 0.09 < w.numpy().max() <= 0.1
    w.data.normal_(0.0, 0.02)
    assert abs(float(w.numpy().std()) - 0.02) < 0.002
    w.data.fill_(0.25)
    assert (w.numpy() == 0.25).all()


def test_assigning_data_replaces_the_memory_keeping_the_parameter():
    p = nn.Parameter(mg.ones(3))
    new = mg.zeros(2, 2)
    p.data = new
    assert isinstance(p, nn.Parameter) and p.requires_grad and p.shape == (2, 2)
    new.add_(1)                                 # p holds new's memory now
    assert (p.numpy() == 1).all()
    p.data = np.full(4, 2.0, np.float32)      # an array is taken as it is
    assert p.shape == (4,) and p.dtype == np.float32


@pytest.mark.parametrize("value, match", [
    ([1.0, 2.0], "assign a Tensor"),
    (mg.tensor([1, 2]), "requires grad"),
])
def test_assigning_data_refuses_what_pytorch_refuses(value, match):
    p = nn.Parameter(mg.ones(2))
    with pytest.raises(TypeError, match=match):
        p.data = value
    assert p.shape == (2,) and (p.numpy() == 1).all()


def test_gradient_still_flows_after_a_data_write_as_in_pytorch():
    torch = pytest.importorskip("torch")
    results = []
    for lib, make in ((mg, lambda: nn.Parameter(mg.tensor([1.0, 2.0]))),
                      (torch, lambda: torch.nn.Parameter(torch.tensor([1.0, 2.0])))):
        p = make()
        y = (p * 3.0).sum()
        p.data.mul_(10)                         # unrecorded: the backward does not see it
        y.backward()
        results.append((np.asarray(p.grad.tolist()), np.asarray(p.detach().tolist())))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
