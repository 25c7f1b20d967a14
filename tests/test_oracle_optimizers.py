"""Every optimizer against PyTorch on one gradient stream: 2-D float32, 0-d float32 and float64
parameters, momentum, dampening, Nesterov, weight decay, AMSGrad, gradients clipped by total norm
before each step. Parameters and optimizer state must agree. Skips without PyTorch."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.optimizer import SGD, Adam, AdamW, clip_grad_norm

torch = pytest.importorskip("torch")

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.05)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True)),
]
SHAPES = [((3, 4), np.float32), ((), np.float32), ((5,), np.float64)]


def _stream(steps=6):
    rng = np.random.default_rng(7)
    init = [rng.standard_normal(s).astype(d) for s, d in SHAPES]
    grads = [[(rng.standard_normal(s) * 3).astype(d) for s, d in SHAPES] for _ in range(steps)]
    return init, grads


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in
                                                  enumerate(CONFIGS)])
def test_optimizer_follows_pytorch(name, kw):
    init, grads = _stream()
    ours = [mg.Parameter(a.copy()) for a in init]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in init]
    opt = {"SGD": SGD, "Adam": Adam, "AdamW": AdamW}[name](ours, **kw)
    topt = getattr(torch.optim, name)(theirs, **kw)
    for step in grads:
        for p, t, g in zip(ours, theirs, step):
            p.grad = mg.tensor(g.copy())
            t.grad = torch.tensor(g.copy())
        n1 = clip_grad_norm(ours, 1.5)
        n2 = torch.nn.utils.clip_grad_norm_(theirs, 1.5)
        np.testing.assert_allclose(float(n1.item()), float(n2), rtol=1e-6)
        opt.step()
        topt.step()
    for p, t in zip(ours, theirs):
        assert p.dtype == str(t.dtype).replace("torch.", "")
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=2e-6, atol=1e-7)
    for p, t in zip(ours, theirs):
        mine, ref = opt.state.get(p, {}), topt.state[t]
        for key, value in ref.items():
            if value is None:            # PyTorch keeps momentum_buffer=None without momentum
                assert mine.get(key) is None
                continue
            ours_v = mine[key]
            ours_v = np.asarray(ours_v.numpy() if hasattr(ours_v, "numpy") else ours_v)
            np.testing.assert_allclose(np.asarray(ours_v, np.float64).reshape(-1),
                                       value.detach().numpy().astype(np.float64).reshape(-1),
                                       rtol=2e-6, atol=1e-7, err_msg=key)
