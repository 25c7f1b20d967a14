"""Under float16 autocast, what an op saves for backward stays in the dtype it ran in: every
activation-sized floating array saved by a "lower" op (and the data-sized ones of batch_norm)
is float16. Only per-row / per-channel statistics may be float32, and on the CPU the float32
operand copies of conv2d and linear (``_cpu_float32_operand``)."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
import minigrad.nn as nn
from minigrad import amp
from minigrad._backend import kernels
from minigrad.amp import policy


def _functions(root):
    """Every Function recorded under ``root`` (iterative walk)."""
    seen, stack, out = set(), [root.creator], []
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        out.append(fn)
        stack.extend(x.creator for x in fn.inputs or () if isinstance(x, mg.Tensor))
    return out


def _is_statistic(a):
    return a.ndim <= 1 or a.shape[-1] == 1


def _cpu_float32_operand(fn, a):
    """The one exception: on the CPU, where float16 products run in float32 (invariant 4),
    conv2d and linear keep the float32 operands they converted in forward (im2col columns; x
    and the weight), beside their float16 inputs and within the byte limit of a kept im2col
    matrix, so that backward converts nothing again."""
    first = [s for s in fn.saved[:2] if hasattr(s, "dtype")]
    return (fn.name in ("conv2d", "linear") and type(a) is np.ndarray and a.dtype == np.float32
            and kernels.emulates_low_precision(a) and a.nbytes <= kernels.im2col_keep_bytes(a)
            and all(s.dtype == np.float16 for s in first))


def _wide_saved(root):
    """(op, dtype, shape) of each saved float array of a lower op that is not float16."""
    bad, lower_ops = [], 0
    for fn in _functions(root):
        cat = policy.get(fn.name)
        if cat not in ("lower", "lower_input"):
            continue
        lower_ops += 1
        for a in fn.saved or ():
            a = a._data if isinstance(a, mg.Tensor) else a
            if a is None or a.dtype == bool or np.issubdtype(a.dtype, np.integer):
                continue
            if a.dtype != np.float16 and not _is_statistic(a) and not _cpu_float32_operand(fn, a):
                bad.append((fn.name, str(a.dtype), a.shape))
    assert lower_ops, "no lower op was recorded: the test checks nothing"
    return bad


def _x(*shape, seed=0):
    return mg.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32),
                     requires_grad=True)


def _mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)), _x(8, 6)


def _convnet():
    return (nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, padding=1, groups=2),
                          nn.Flatten(), nn.Linear(4 * 3 * 3, 3)), _x(4, 2, 6, 6))


@pytest.mark.parametrize("make", [_mlp, _convnet])
def test_model_step_saves_float16_activations(make):
    mg.manual_seed(0)
    model, x = make()
    y = mg.tensor(np.arange(x.shape[0]) % 3)
    with amp.autocast():
        loss = nn.CrossEntropyLoss()(model(x), y)
    assert _wide_saved(loss) == []
    loss.backward()   # the graph still differentiates
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"dropout_p": 0.25}, {"mask": True}])
def test_attention_saves_no_float32_probabilities(kw):
    q, k, v = _x(2, 3, 5, 8, seed=1), _x(2, 3, 5, 8, seed=2), _x(2, 3, 5, 8, seed=3)
    if kw.pop("mask", False):
        kw["attn_mask"] = _x(5, 5, seed=4)
    with amp.autocast():
        out = F.scaled_dot_product_attention(q, k, v, **kw).float().sum()
    assert _wide_saved(out) == []
    out.backward()
    assert q.grad is not None and v.grad is not None


def test_other_lower_ops_save_float16():
    x1, w1 = _x(2, 3, 10), _x(4, 3, 3, seed=5)
    xt, wt = _x(2, 3, 5, 5, seed=6), _x(3, 2, 3, 3, seed=7)
    a, b = _x(2, 4, 5, seed=8), _x(2, 5, 3, seed=9)
    with amp.autocast():
        out = (F.conv1d(x1, w1).float().sum() + F.conv_transpose2d(xt, wt).float().sum()
               + F.bmm(a, b).float().sum() + F.einsum("bij,bjk->bik", a, b).float().sum())
    assert _wide_saved(out) == []
