"""In-place safety: views and aliases share a version counter, saved outputs are checked,
augmented assignment is in place with add_'s rules, ``.grad`` assignment checks the shape."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
import minigrad.nn as nn
from minigrad.optimizer import SGD

MODIFIED = "modified in place after the forward"


def _wx():
    w = mg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x = mg.tensor([5.0, 6.0, 7.0, 8.0])
    return w, x


@pytest.mark.parametrize("alias", [
    lambda x: x.reshape(2, 2),
    lambda x: x.view(4, 1),
    lambda x: x[1:3],
    lambda x: x[::2],
    lambda x: x[None],
    lambda x: x.reshape(2, 2).T,
    lambda x: x.reshape(2, 2).transpose(1, 0),
    lambda x: x.unsqueeze(0).squeeze(0),
    lambda x: x.flatten(),
    lambda x: F.split(x, 2)[1],
    lambda x: x.detach(),
    lambda x: x.reshape(2, 2)[0].detach(),
], ids=["reshape", "view", "slice", "step", "none", "T", "transpose", "squeeze", "flatten",
        "split", "detach", "view-of-view"])
def test_inplace_change_through_an_alias_is_caught(alias):
    w, x = _wx()
    y = (w * x).sum()      # mul saves x for dL/dw
    alias(x).mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()


def test_alias_made_before_the_forward_is_caught_too():
    w, x = _wx()
    v = x.reshape(2, 2)
    y = (w * x).sum()
    v.mul_(2)
    with pytest.raises(RuntimeError, match="an input of op 'mul'"):
        y.backward()


def test_changing_the_base_is_seen_by_a_saved_view():
    w, x = _wx()
    v = x[1:]
    y = (w[1:] * v).sum()   # mul saved the view v
    x.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()


def test_detached_saved_parameter():
    p = mg.Parameter(np.array([1.0, 2.0], np.float32))
    y = (p * p).sum()
    p.detach().mul_(3)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()


def test_copies_do_not_share_the_counter():
    w, x = _wx()
    y = (w * x).sum()
    x[[0, 1]].mul_(2)                  # advanced indexing copies
    x.reshape(2, 2).T.reshape(4).mul_(2)  # reshape of a non-contiguous view copies
    x.clone().mul_(2)
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), [5, 6, 7, 8])


def test_unrelated_inplace_change_leaves_backward_correct():
    w, x = _wx()
    other = mg.tensor([1.0, 1.0])
    y = (w * x).sum()
    other.mul_(5)
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), [5, 6, 7, 8])


def test_inplace_on_a_saved_output_is_caught():
    w = mg.tensor([0.5, 1.0], requires_grad=True)
    y = F.exp(w)                     # exp saves its output
    with mg.no_grad():
        y.mul_(0)
    with pytest.raises(RuntimeError, match="an output of op 'exp'"):
        y.sum().backward()


def test_inplace_on_a_view_of_a_saved_output_is_caught():
    w = mg.tensor([0.5, 1.0], requires_grad=True)
    y = F.sigmoid(w)
    with mg.no_grad():
        y[0:1].fill_(3.0)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


def test_saved_output_untouched_gives_the_right_gradient():
    w = mg.tensor([0.5, 1.0], requires_grad=True)
    F.exp(w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.exp([0.5, 1.0]), rtol=1e-6)


def test_version_counter_is_shared_and_counts():
    x = mg.zeros(4)
    v = x.reshape(2, 2)
    assert x._version == v._version == 0
    v.add_(1)
    assert x._version == v._version == 1
    x[0] = 5
    assert v._version == 2 and v.numpy()[0, 0] == 5


# ------------------------------------------------------------------ augmented assignment
def test_augmented_assignment_is_in_place_without_grad():
    t = mg.tensor([1.0, 2.0])
    alias = t
    data = t._data
    t += 1
    t *= 3
    t -= 1
    t /= 2
    assert t is alias and t._data is data and t._version == 4
    np.testing.assert_allclose(t.numpy(), [2.5, 4.0])


def test_param_inplace_under_no_grad_keeps_the_parameter():
    lin = nn.Linear(2, 2)
    w = lin.weight
    before = w.numpy().copy()
    with mg.no_grad():
        lin.weight *= 2
    assert lin.weight is w and isinstance(lin.weight, mg.Parameter)
    np.testing.assert_allclose(w.numpy(), before * 2)


def test_augmented_assignment_on_a_grad_leaf_while_recording_raises():
    p = mg.Parameter(np.ones(2, np.float32))
    with pytest.raises(RuntimeError, match="add_: in-place modification of a tensor that "
                                           "requires grad"):
        p += 1
    with pytest.raises(RuntimeError, match="mul_"):
        p *= 2
    np.testing.assert_allclose(p.numpy(), [1, 1])


def test_augmented_assignment_on_a_non_leaf_is_recorded_out_of_place():
    # minigrad does not record in-place ops: a non-leaf gets the recorded result (PyTorch's
    # gradient), and other references keep the old value.
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    h = w * w
    old = h
    h += w
    h *= 3
    assert h is not old
    np.testing.assert_allclose(old.numpy(), [1, 4])
    h.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 3 * (2 * np.array([1, 2]) + 1))


def test_accumulating_a_loss_into_a_plain_tensor_records():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    total = mg.zeros(())
    total += (w * w).sum()
    total.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2, 4])


def test_add_with_a_grad_operand_while_recording_raises():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    t = mg.zeros(2)
    with pytest.raises(RuntimeError, match="operand requires grad"):
        t.add_(w)


def test_inplace_dtype_and_shape_rules():
    i = mg.tensor([1, 2])
    with pytest.raises(TypeError, match=r"add_: result type float32 can't be cast .* int64"):
        i += 2.5
    with pytest.raises(TypeError, match="div_"):
        i /= 2
    i += 2
    np.testing.assert_array_equal(i.numpy(), [3, 4])
    h = mg.ones(2, dtype=mg.float16)
    h += mg.ones(2)              # float32 result into float16: same category, allowed
    assert h.dtype == mg.float16 and h.numpy().tolist() == [2, 2]
    with pytest.raises(ValueError, match=r"mul_: operand of shape \(3, 2\) does not broadcast "
                                         r"to the tensor's shape \(2,\)"):
        h *= mg.ones(3, 2)


# ------------------------------------------------------------------ grad assignment
def test_grad_assignment_checks_the_shape():
    p = mg.Parameter(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"shape \(3, 2\) .* shape \(2, 3\)"):
        p.grad = mg.ones(3, 2)
    with pytest.raises(TypeError, match="Tensor"):
        p.grad = np.ones((2, 3))
    p.grad = mg.ones(2, 3)
    SGD([p], lr=0.5).step()
    np.testing.assert_allclose(p.numpy(), np.full((2, 3), 0.5))
    p.grad = None
    assert p.grad is None


def test_engine_accumulates_grad_as_before():
    p = mg.Parameter(np.ones(3, np.float32))
    for _ in range(2):
        (p * 2).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [4, 4, 4])


def test_string_data_is_refused():
    with pytest.raises(TypeError, match="unsupported dtype"):
        mg.tensor(np.array(["a"]))
    with pytest.raises(TypeError, match="unsupported dtype"):
        mg.tensor(["a", "b"])


def test_add_alpha_keeps_the_operand_rules():
    t = mg.ones(2)
    t.add_(mg.tensor([1.0, 2.0]), alpha=2.0)
    np.testing.assert_allclose(t.numpy(), [3, 5])
    with pytest.raises(RuntimeError, match="operand requires grad"):
        t.add_(mg.tensor([1.0, 2.0], requires_grad=True), alpha=2.0)
