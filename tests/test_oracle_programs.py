"""Short programs run in minigrad and in PyTorch with only the library swapped: in-place writes
through views and aliases, version checks, leaf gradients. Both must raise, or both must give
equal gradients (a false alarm fails like a wrong value). Skips without PyTorch."""

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")


def _leaf(lib, values):
    return lib.tensor(np.array(values, np.float32), requires_grad=True)


def _const(lib, values):
    return lib.tensor(np.array(values, np.float32))


# Each program takes the library and returns the tensors whose .grad to compare.
def p_view_write_after_mul(lib):
    w, x = _leaf(lib, [1.0, 2.0, 3.0, 4.0]), _const(lib, [1.0, 2.0, 3.0, 4.0])
    y = (w * x).sum()
    with lib.no_grad():
        x.reshape(2, 2).mul_(2.0)           # x is saved for dw: must raise
    y.backward()
    return [w]


def p_slice_write_of_unused_factor(lib):
    w, x = _leaf(lib, [1.0, 2.0, 3.0]), _const(lib, [2.0, 3.0, 4.0])
    y = (w * x).sum()
    with lib.no_grad():
        w[1:].mul_(2.0)                     # w is not read by dw: fine
    y.backward()
    return [w]


def p_detach_shares_version(lib):
    w = _leaf(lib, [1.0, 2.0])
    y = (w * w).sum()
    w.detach().mul_(3.0)                    # an alias of w: must raise
    y.backward()
    return [w]


def p_exp_output_modified(lib):
    w = _leaf(lib, [0.5, 1.0])
    e = w.exp()
    y = e.sum()
    with lib.no_grad():
        e.mul_(2.0)                         # exp saves its output: must raise
    y.backward()
    return [w]


def p_relu_then_clone_modified(lib):
    w = _leaf(lib, [-1.0, 2.0])
    r = lib.nn.functional.relu(w)
    c = r.clone()
    with lib.no_grad():
        c.mul_(5.0)                         # a copy: fine
    (r * 2.0).sum().backward()
    return [w]


def p_accumulate_two_backwards(lib):
    w = _leaf(lib, [1.0, 2.0])
    (w * 3.0).sum().backward()
    (w * w).sum().backward()                # gradients accumulate
    return [w]


def p_grad_written_in_place(lib):
    a, b = _leaf(lib, [1.0, 2.0]), _leaf(lib, [3.0, 4.0])
    ((a + b) * _const(lib, [2.0, 5.0])).sum().backward()
    a.grad.mul_(0.5)                        # one leaf's gradient only
    return [a, b]


def p_transpose_view_write(lib):
    w, x = _leaf(lib, [[1.0, 2.0], [3.0, 4.0]]), _const(lib, [[1.0, 0.0], [2.0, 1.0]])
    y = (x @ w).sum()                       # x is saved for dw
    with lib.no_grad():
        x.T.mul_(2.0)
    y.backward()
    return [w]


def p_linear_weight_changed_first_layer(lib):
    x = _const(lib, [[1.0, 2.0]])
    w, b = _leaf(lib, [[0.5, -1.0]]), _leaf(lib, [0.1])
    y = lib.nn.functional.linear(x, w, b).sum()
    with lib.no_grad():
        w.mul_(2.0)                         # dW needs x only: fine
    y.backward()
    return [w, b]


def p_sum_then_grad_in_place(lib):
    p = _leaf(lib, [1.0, 2.0, 3.0])
    p.sum().backward()
    p.grad.mul_(0.5)                        # a writable gradient
    return [p]


def p_unsqueeze_squeeze_alias(lib):
    w, x = _leaf(lib, [1.0, 2.0]), _const(lib, [3.0, 4.0])
    y = (w * x).sum()
    with lib.no_grad():
        x.unsqueeze(0).squeeze(0).add_(1.0)  # still x: must raise
    y.backward()
    return [w]


def p_parameter_of_a_tensor(lib):
    t = _const(lib, [1.0, 2.0])
    p = lib.nn.Parameter(t)
    y = (p * p).sum()
    with lib.no_grad():
        t.mul_(2.0)                         # p shares t: must raise
    y.backward()
    return [p]


PROGRAMS = [v for k, v in sorted(globals().items()) if k.startswith("p_")]


def _run(program, lib):
    try:
        return None, [t.grad for t in program(lib)]
    except RuntimeError as e:
        return e, None


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__[2:])
def test_program_agrees_with_pytorch(program):
    e_mg, g_mg = _run(program, mg)
    e_pt, g_pt = _run(program, torch)
    assert (e_mg is None) == (e_pt is None), (
        f"minigrad {'raised: ' + str(e_mg) if e_mg else 'computed'}; PyTorch "
        f"{'raised: ' + str(e_pt) if e_pt else 'computed'}")
    if e_mg is None:
        for m, p in zip(g_mg, g_pt):
            assert (m is None) == (p is None)
            if m is not None:
                np.testing.assert_allclose(m.numpy(), p.detach().numpy(), rtol=1e-6)
