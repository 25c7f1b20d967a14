"""Testing helpers: the shared float64 finite-difference ``gradcheck`` used for every op."""

from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck"]


def _as_inputs(inputs, device):
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            x = x.numpy()
        a = np.asarray(x)
        if a.dtype.kind == "f":
            out.append(Tensor(a.astype(np.float64), device=device, requires_grad=True))
        else:
            out.append(Tensor(a, device=device))
    return out


def _projected(fn, tensors, weights_seed):
    out = fn(*tensors)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    rng = np.random.default_rng(weights_seed)
    total = None
    for o in outs:
        if not isinstance(o, Tensor) or o.dtype.kind != "f":
            continue
        r = Tensor(rng.standard_normal(o.shape), device=o.device)
        term = (o * r).sum()
        total = term if total is None else total + term
    if total is None:
        raise ValueError("gradcheck: the function returned no floating Tensor")
    return total


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-4, max_dense=600, directions=6,
              seed=0, device="cpu", create_graph=False):
    """Check ``fn``'s analytic gradients against central differences in float64.

    Floating inputs are converted to float64 Tensors requiring grad; integer inputs are passed
    through. The outputs are projected on fixed random weights, so every output element counts.
    Inputs with at most ``max_dense`` elements in total are checked element by element; larger
    ones with ``directions`` random directional derivatives.

    Returns:
        True; raises ``AssertionError`` naming the input and the worst element otherwise.
    """
    from ..autodiff import grad

    tensors = _as_inputs(inputs, device)
    diff = [t for t in tensors if t.requires_grad]
    loss = _projected(fn, tensors, seed)
    analytic = grad(loss, diff, create_graph=create_graph, allow_unused=True)
    analytic = [np.zeros(t.shape) if g is None else np.asarray(g.numpy(), np.float64)
                for t, g in zip(diff, analytic)]

    def value():
        return float(_projected(fn, tensors, seed).item())

    total = sum(t.size for t in diff)
    rng = np.random.default_rng(seed + 1)
    if total <= max_dense:
        for k, t in enumerate(diff):
            flat = t._data.reshape(-1)
            numeric = np.zeros(t.size)
            for i in range(t.size):
                orig = flat[i].item()
                flat[i] = orig + eps
                up = value()
                flat[i] = orig - eps
                down = value()
                flat[i] = orig
                numeric[i] = (up - down) / (2 * eps)
            a = analytic[k].reshape(-1)
            bad = np.abs(a - numeric) > atol + rtol * np.abs(numeric)
            if bad.any():
                i = int(np.argmax(np.abs(a - numeric)))
                raise AssertionError(
                    f"gradcheck: input {k} (shape {t.shape}) element {i}: analytic {a[i]:.8g} vs "
                    f"numeric {numeric[i]:.8g} ({int(bad.sum())} of {t.size} elements differ)")
        return True
    for _ in range(directions):
        vs = [rng.standard_normal(t.shape) for t in diff]
        origs = [t._data.copy() for t in diff]
        for t, v, o in zip(diff, vs, origs):
            t._data[...] = o + eps * v
        up = value()
        for t, v, o in zip(diff, vs, origs):
            t._data[...] = o - eps * v
        down = value()
        for t, o in zip(diff, origs):
            t._data[...] = o
        numeric = (up - down) / (2 * eps)
        a = float(sum((g * v).sum() for g, v in zip(analytic, vs)))
        if abs(a - numeric) > atol + rtol * abs(numeric) + 1e-6 * total ** 0.5:
            raise AssertionError(
                f"gradcheck: directional derivative analytic {a:.10g} vs numeric {numeric:.10g}")
    return True


def gradgradcheck(fn, inputs, **kwargs):
    """Check second derivatives: ``gradcheck`` of the (projected) first gradient of ``fn``."""
    from ..autodiff import grad

    def first_grad(*xs):
        diff = [x for x in xs if x.requires_grad]
        loss = _projected(fn, xs, 123)
        gs = grad(loss, diff, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grad, inputs, **kwargs)
