"""MegEngine's custom ``Function`` protocol: ``MyFunction()(x)``, with ``forward(self, *tensors)``
and ``backward(self, *output_grads)`` on Tensors (MegEngine's ``megengine.autodiff.Function``
docstring example), beside minigrad's ``apply`` and PyTorch's static protocol."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp
from minigrad.autodiff import Function, GradManager, grad


class Sigmoid(Function):
    def forward(self, x):
        y = 1 / (1 + F.exp(-x))
        self.y = y
        return y

    def backward(self, dy):
        y = self.y
        return dy * y * (1 - y)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_megengines_docstring_example_trains():
    v = np.array([-2.0, 0.0, 1.5], np.float64)
    x = mg.tensor(v, requires_grad=True)
    gm = GradManager().attach([x])
    with gm:
        y = Sigmoid()(x)
        gm.backward(y.sum())
    np.testing.assert_allclose(y.numpy(), _sigmoid(v), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), _sigmoid(v) * (1 - _sigmoid(v)), rtol=1e-12)
    assert y.grad_fn is not None and y.dtype == mg.float64


def test_higher_order_gradients_are_refused_not_silently_wrong():
    # what forward stores on self has no graph, so a recorded backward would miss its terms
    x = mg.tensor([0.3, -1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Sigmoid.*no higher-order gradient.*save_for_backward"):
        grad((Sigmoid()(x) * x).sum(), [x], create_graph=True)
    (g,) = grad((Sigmoid()(x) * x).sum(), [x])          # first order is fine
    v = np.array([0.3, -1.0])
    s = _sigmoid(v)
    np.testing.assert_allclose(g.numpy(), s + v * s * (1 - s), rtol=1e-6)  # d(x sigmoid(x))


class SplitScale(Function):
    """Two inputs (one a plain number), two outputs, a None gradient."""

    def forward(self, a, b, k):
        self.k = k
        return a * k, b + 1

    def backward(self, da, db):
        return da * self.k, None, None


def test_several_inputs_and_outputs_and_none_gradients():
    a = mg.tensor([1.0, 2.0], requires_grad=True)
    b = mg.tensor([3.0], requires_grad=True)
    ya, yb = SplitScale()(a, b, 3.0)
    (ya.sum() + yb.sum()).backward()
    np.testing.assert_array_equal(ya.numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 3.0])
    assert b.grad is None


def test_forward_runs_under_autocast_and_unrecorded():
    class MatmulTwice(Function):
        def forward(self, a, w):
            self.a, self.w = a, w
            assert not a.requires_grad or mg.is_grad_enabled() is False
            return F.matmul(a, w)

        def backward(self, dy):
            return F.matmul(dy, self.w.T), F.matmul(self.a.T, dy)

    a = mg.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    w = mg.tensor(np.ones((3, 4), np.float32), requires_grad=True)
    with amp.autocast(dtype="float16"):
        y = MatmulTwice()(a, w)
    assert y.dtype == mg.float16        # the op inside was cast, as anywhere in the region
    y.astype("float32").sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 2.0, np.float32))


def test_no_grad_call_records_nothing():
    x = mg.tensor([1.0], requires_grad=True)
    with mg.no_grad():
        y = Sigmoid()(x)
    assert not y.requires_grad and y.grad_fn is None


def test_an_instance_is_used_once():
    f = Sigmoid()
    f(mg.tensor([0.0]))
    with pytest.raises(RuntimeError, match="used once.*Sigmoid\\(\\)\\(x\\)"):
        f(mg.tensor([0.0]))


def test_wrong_returns_are_named():
    class NotATensor(Function):
        def forward(self, x):
            return x.numpy()

    class TooManyGrads(Function):
        def forward(self, x):
            return x * 2

        def backward(self, dy):
            return dy, dy

    with pytest.raises(TypeError, match="NotATensor.forward returned a ndarray"):
        NotATensor()(mg.tensor([1.0]))
    x = mg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="TooManyGrads.backward returned 2 gradients for 1"):
        TooManyGrads()(x).sum().backward()


def test_pytorch_protocol_is_called_through_apply():
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(TypeError, match="Double.apply"):
        Double()(mg.tensor([1.0]))
    assert Double.apply(mg.tensor([1.0])).item() == 2.0
