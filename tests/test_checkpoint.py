"""Activation checkpointing (``minigrad.utils.checkpoint``): same values and gradients as the
plain block, one recorded node instead of the block's graph, and a recompute that replays the
forward's autocast state and random draws (AMP_REFERENCE section 4 line 7)."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp, nn
from minigrad._backend import random as mg_random
from minigrad.autodiff import GradManager
from minigrad.core.modes import dispatch_hooks
from minigrad.utils.checkpoint import checkpoint, checkpoint_sequential


def _block(p=0.0):
    mg.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(p), nn.Linear(8, 4))


def _grads(model, x):
    out = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
    for p in model.parameters():
        p.grad = None
    x.grad = None
    return out


def _run(model, x, use_ckpt, region):
    state = mg_random.get_state()
    with region():
        y = checkpoint(model, x) if use_ckpt else model(x)
    mg_random.set_state(state)
    (y.astype("float32") ** 2).sum().backward()
    return y


@pytest.mark.parametrize("region", [
    lambda: amp.autocast(enabled=False), lambda: amp.autocast(),
    lambda: amp.autocast("cpu"), lambda: amp.autocast(fp32_ops=["linear"])])
@pytest.mark.parametrize("p", [0.0, 0.5])
def test_same_values_and_gradients_as_the_plain_block(region, p):
    model = _block(p)
    x = mg.randn(3, 4, requires_grad=True)
    y_ref = _run(model, x, False, region)
    g_ref = _grads(model, x)
    y = _run(model, x, True, region)
    assert y.dtype == y_ref.dtype
    np.testing.assert_array_equal(y.numpy(), y_ref.numpy())
    for a, b in zip(_grads(model, x), g_ref):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def _dtypes_of_backward_matmuls(loss):
    seen = []

    def hook(phase, fn, inputs, outputs):
        if phase == "forward" and fn.name == "linear":
            seen.append(outputs[0].dtype)

    token = dispatch_hooks.set((hook,))
    try:
        loss.backward()
    finally:
        dispatch_hooks.reset(token)
    return seen


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_recompute_runs_in_the_forward_autocast_state_wherever_backward_runs(dtype):
    model = _block()
    x = mg.randn(3, 4, requires_grad=True)
    with amp.autocast(dtype=dtype):
        loss = checkpoint(model, x).astype("float32").sum()
        with amp.autocast(enabled=False):
            inner = checkpoint(model, x).sum()
    # backward outside any region: the recompute is lower precision all the same ...
    low = mg.float16 if dtype == "float16" else mg.bfloat16
    assert _dtypes_of_backward_matmuls(loss) == [low] * 2
    # ... and a block checkpointed with autocast off recomputes in float32, even inside one
    with amp.autocast(dtype=dtype):
        assert _dtypes_of_backward_matmuls(inner) == [np.dtype("float32")] * 2


def test_one_node_stands_for_the_block_and_parameters_are_its_inputs():
    model = _block()
    x = mg.randn(2, 4, requires_grad=True)
    y = checkpoint(model, x)
    node = y.creator
    assert node.name == "checkpoint"
    ids = {id(t) for t in node.inputs}
    assert ids == {id(x)} | {id(p) for p in model.parameters()}


def test_closure_captured_tensors_get_gradients():
    a = mg.tensor([1.0, 2.0], requires_grad=True)
    b = (a * 3).sum()                          # an activation captured by the closure
    x = mg.tensor([0.5, -1.0], requires_grad=True)
    y = checkpoint(lambda t: t * b + a, x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [9.0, 9.0])
    np.testing.assert_allclose(a.grad.numpy(), 1 + 3 * (0.5 - 1.0))


def test_grad_and_grad_manager_and_tuple_outputs():
    model = _block()
    x = mg.randn(2, 4, requires_grad=True)

    def two(t):
        h = model(t)
        return h, F.relu(h)

    h, r = checkpoint(two, x)
    gs = mg.autograd.grad((h.sum() + r.sum()), model.parameters())
    ref = mg.autograd.grad((model(x).sum() + F.relu(model(x)).sum()), model.parameters())
    for g, e in zip(gs, ref):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)
    assert x.grad is None                      # grad() returns, never accumulates
    gm = GradManager().attach(model.parameters())
    with gm:
        gm.backward(checkpoint(model, x).sum())
    np.testing.assert_allclose(model[0].weight.grad.numpy(),
                               mg.autograd.grad(model(x).sum(), [model[0].weight])[0].numpy(),
                               rtol=1e-6)


def test_refusals():
    model = _block()
    x = mg.randn(2, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="double backward"):
        mg.autograd.grad(checkpoint(model, x).sum(), [x], create_graph=True)
    y = checkpoint(model, x)
    with mg.no_grad():
        model[0].weight.add_(1.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()
    with pytest.raises(TypeError, match="Tensor"):
        checkpoint(lambda t: 3, x)


def test_no_grad_mode_just_calls():
    model = _block()
    with mg.no_grad():
        y = checkpoint(model, mg.randn(2, 4))
    assert y.creator is None


@pytest.mark.parametrize("segments", [1, 2, 4])
def test_checkpoint_sequential_matches_the_model(segments):
    model = _block()
    x = mg.randn(3, 4, requires_grad=True)
    model(x).sum().backward()
    ref = _grads(model, x)
    y = checkpoint_sequential(model, segments, x)
    np.testing.assert_allclose(y.numpy(), model(x).numpy(), rtol=1e-6)
    y.sum().backward()
    for a, b in zip(_grads(model, x), ref):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(model, 9, x)


# ----------------------------------------------------------------------------- regressions
def _lin_grads(run):
    mg.manual_seed(0)
    lin = mg.nn.Linear(2, 3)
    x = mg.tensor(np.arange(6, dtype=np.float32).reshape(3, 2), requires_grad=True)
    (run(lin, x) ** 2).sum().backward()
    return [lin.weight.grad.numpy(), lin.bias.grad.numpy(), x.grad.numpy()]


def test_nested_checkpoints_keep_every_gradient():
    plain = _lin_grads(lambda lin, x: lin(x))
    nested = _lin_grads(lambda lin, x: checkpoint(lambda t: checkpoint(lin, t), x))
    for a, b in zip(plain, nested):
        np.testing.assert_allclose(b, a, rtol=1e-6)


def test_an_input_changed_in_place_after_the_forward_raises_even_without_grad():
    lin = mg.nn.Linear(1, 1, bias=False)
    x = mg.ones(2, 1)                   # requires no grad: the recompute still reads it
    y = checkpoint(lin, x)
    x.mul_(10.0)
    with pytest.raises(RuntimeError, match="modified in place after the forward"):
        y.sum().backward()


def test_an_unused_output_leaves_its_parameters_without_gradient():
    a, b = mg.nn.Linear(2, 2), mg.nn.Linear(2, 2)
    x = mg.randn(3, 2, requires_grad=True)
    o1, _ = checkpoint(lambda t: (a(t), b(t)), x)
    o1.sum().backward()
    assert a.weight.grad is not None and b.weight.grad is None and b.bias.grad is None


def test_detached_and_passed_through_outputs_stay_as_they_are():
    lin = mg.nn.Linear(2, 2)
    x = mg.randn(3, 2, requires_grad=True)
    assert not checkpoint(lambda t: lin(t).detach(), x).requires_grad
    a, b = checkpoint(lambda t: (lin(t), lin(t).detach()), x)
    assert a.requires_grad and not b.requires_grad
    a.sum().backward()
    assert lin.weight.grad is not None and x.grad is not None
    assert checkpoint(lambda t: t, x) is x          # an input handed back is that input
