"""The autodiff engine end to end: deep graphs, graph freeing, double backward, grad modes,
GradManager and ``autodiff.grad``."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad.autodiff import GradManager, grad
from minigrad.testing import gradgradcheck


def test_deep_chain_has_no_recursion_limit():
    x = mg.tensor([1.0], dtype=mg.float64, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0001 ** 10_000], rtol=1e-9)


def test_backward_twice_on_freed_graph_raises():
    x = mg.tensor([2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_retain_graph_allows_twice_and_accumulates():
    x = mg.tensor([2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 12.0])


GRADGRAD = [
    ("mul", lambda a, b: a * b, 2), ("div", lambda a, b: a / b, 2),
    ("exp", F.exp, 1), ("log", F.log, 1), ("sin", F.sin, 1), ("tanh", F.tanh, 1),
    ("sigmoid", F.sigmoid, 1), ("pow", lambda a, b: F.pow(a, b), 2),
    ("pow_scalar", lambda a: a ** 3, 1), ("sqrt", F.sqrt, 1),
    ("matmul", lambda a, b: F.matmul(a, b), 2), ("sum", lambda a: F.sum(a * a, 0), 1),
    ("softplus", F.softplus, 1), ("gelu", F.gelu, 1), ("gelu_tanh", lambda a: F.gelu(a, "tanh"), 1),
    ("silu", F.silu, 1), ("erf", F.erf, 1), ("logsumexp", lambda a: F.logsumexp(a, 1), 1),
    ("var", lambda a: F.var(a, 0), 1), ("std", lambda a: F.std(a, 1), 1),
    ("norm", lambda a: F.norm(a, 2, 1), 1), ("prod", lambda a: F.prod(a, 1), 1),
    ("max", lambda a: F.max(a, 1) ** 2, 1), ("where", lambda a: F.where(a > 1.0, a * a, a), 1),
    ("getitem", lambda a: a[[0, 0, 2]] ** 2, 1), ("cumsum", lambda a: F.cumsum(a, 1) ** 2, 1),
    ("gather", lambda a: F.gather(a, 1, np.array([[0, 0], [1, 2], [2, 2]])) ** 2, 1),
]


@pytest.mark.parametrize("name,fn,n", GRADGRAD, ids=[g[0] for g in GRADGRAD])
def test_second_derivatives(name, fn, n, rng):
    ins = [rng.uniform(0.5, 2.0, (3, 3)) for _ in range(n)]
    assert gradgradcheck(fn, ins)


def test_second_derivative_values():
    x = mg.tensor([3.0], dtype=mg.float64, requires_grad=True)
    (g,) = grad((x ** 3).sum(), [x], create_graph=True)
    (gg,) = grad(g.sum(), [x])
    assert g.item() == pytest.approx(27.0) and gg.item() == pytest.approx(18.0)


def test_inplace_modification_of_saved_input_raises():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with mg.no_grad():
        x.add_(1)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_inplace_on_grad_tensor_while_recording_raises():
    x = mg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        x.mul_(2)


def test_grad_modes_nest_decorate_and_survive_exceptions():
    x = mg.tensor([1.0], requires_grad=True)
    with mg.no_grad():
        assert not (x * 2).requires_grad
        with mg.enable_grad():
            assert (x * 2).requires_grad
            with mg.no_grad():
                assert not mg.is_grad_enabled()
            assert mg.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad

    @mg.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad and mg.is_grad_enabled()
    with pytest.raises(ZeroDivisionError), mg.no_grad():
        assert not mg.is_grad_enabled()
        raise ZeroDivisionError
    assert mg.is_grad_enabled()

    @mg.no_grad()
    def boom():
        raise KeyError

    with pytest.raises(KeyError):
        boom()
    assert mg.is_grad_enabled()


# --------------------------------------------------------------------------- GradManager
def test_gm_accumulates_over_two_backwards():
    w = mg.Parameter([1.0, 2.0])
    gm = GradManager().attach([w])
    for _ in range(2):
        with gm:
            gm.backward((w * w).sum())
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 8.0])


def test_gm_callbacks_and_replacement():
    w = mg.Parameter([1.0, 2.0])
    seen = []

    def cb(param, g):
        seen.append((param, g.numpy().copy()))
        return g * 10

    gm = GradManager().attach(w, callbacks=[cb])
    with gm:
        gm.backward((w * 3).sum())
    assert seen[0][0] is w and seen[0][1].tolist() == [3.0, 3.0]
    np.testing.assert_array_equal(w.grad.numpy(), [30.0, 30.0])


def test_gm_attach_twice_is_same_manager_and_no_duplicates():
    w = mg.Parameter([1.0])
    gm = GradManager()
    assert gm.attach([w]) is gm and gm.attach([w]) is gm
    assert len(gm.attached_tensors()) == 1
    with gm:
        gm.backward((w * 2).sum())
    assert w.grad.item() == 2.0  # not doubled by the repeated attach


def test_gm_errors():
    w = mg.Parameter([1.0, 2.0])
    gm = GradManager().attach([w])
    y = (w * 2).sum()
    with pytest.raises(RuntimeError, match="not recording"):
        gm.backward(y)
    with gm:
        gm.backward(w * 2)                    # MegEngine: a non-scalar y is seeded with ones
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])
    w.grad = None
    with pytest.raises(RuntimeError, match="pass dy"):
        (w * 2).backward()                    # Tensor.backward keeps PyTorch's rule
    with gm, pytest.raises(ValueError, match="dy has shape"):
        gm.backward(w * 2, mg.ones(3))
    with gm:
        gm.backward(w * 2, mg.tensor([1.0, 0.5]))
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 1.0])


def test_gm_only_attached_tensors_receive_grad():
    w = mg.Parameter([1.0])
    v = mg.Parameter([2.0])
    gm = GradManager().attach([w])
    with gm:
        gm.backward((w * v).sum())
    assert w.grad.item() == 2.0 and v.grad is None


# --------------------------------------------------------------------------- grad()
def test_grad_create_graph_gradient_penalty():
    w = mg.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=mg.float64, requires_grad=True)
    x = mg.tensor([[0.3, -0.7]], dtype=mg.float64, requires_grad=True)
    out = F.tanh(x @ w).sum()
    (gx,) = grad(out, [x], create_graph=True)
    penalty = (gx * gx).sum()
    (gw,) = grad(penalty, [w])
    # finite-difference reference for d penalty / d w
    def pen(wv):
        wt = mg.tensor(wv, dtype=mg.float64)
        xt = mg.tensor(x.numpy(), dtype=mg.float64, requires_grad=True)
        (g,) = grad(F.tanh(xt @ wt).sum(), [xt])
        return float((g.numpy() ** 2).sum())
    eps, num = 1e-6, np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            d = np.zeros((2, 2))
            d[i, j] = eps
            num[i, j] = (pen(w.numpy() + d) - pen(w.numpy() - d)) / (2 * eps)
    np.testing.assert_allclose(gw.numpy(), num, rtol=1e-5, atol=1e-8)


def test_grad_allow_unused_and_no_accumulation():
    a = mg.tensor([1.0], requires_grad=True)
    b = mg.tensor([2.0], requires_grad=True)
    ga, gb = grad((a * 3).sum(), [a, b], allow_unused=True)
    assert ga.item() == 3.0 and gb is None and a.grad is None
    with pytest.raises(RuntimeError, match="allow_unused"):
        grad((a * 3).sum(), [a, b], allow_unused=False)
