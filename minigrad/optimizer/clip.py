"""Gradient clipping by total norm and by value.

Both replace ``p.grad`` with a new Tensor instead of writing into it: the engine may hand the
same gradient array to several parameters (``a + b`` gives both the same ``dy``), and scaling it
in place would scale it once per owner.
"""

from __future__ import annotations

import math

from .. import _backend as B
from ..core.tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_value"]

_make = Tensor._make


def _with_grads(params):
    if isinstance(params, Tensor):
        params = [params]
    return [p for p in params if p.grad is not None]


def clip_grad_norm(params, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False) -> Tensor:
    """Scale gradients so that their total norm is at most ``max_norm`` (PyTorch semantics).

    The total norm is the ``norm_type``-norm of the per-parameter norms, each computed in float32
    (float64 for a float64 gradient) whatever the gradient's dtype, the total in float64 when
    any gradient is float64 (else float32), on the gradients' device and without a host
    synchronisation. Gradients are multiplied by ``min(max_norm / (total + 1e-6), 1)``, the
    factor rounded to float32 (float64 for float64 gradients) first, as PyTorch's ``mul_``.

    A non-finite total norm is not special-cased, exactly like PyTorch: a NaN norm makes every
    gradient NaN, an infinite norm zeroes the finite entries and turns infinite ones into NaN.
    Under AMP the GradScaler then skips the step; pass ``error_if_nonfinite=True`` to raise
    instead (this synchronises with the device).

    Args:
        params: a Tensor or an iterable of Tensors; those without ``.grad`` are ignored.
        max_norm: the largest allowed total norm.
        norm_type: the p of the p-norm; ``float("inf")`` for the max-abs norm.
        error_if_nonfinite: raise RuntimeError when the total norm is inf or NaN.

    Returns:
        The total norm before clipping, as a 0-d Tensor: float64 when a gradient is float64
        (as PyTorch), else float32 (PyTorch's is float16 for float16 gradients).
    """
    params = _with_grads(params)
    norm_type = float(norm_type)
    if not params:
        return Tensor._make(B.np.zeros((), B.float32), False, None, 0)
    xp = B.get_array_module(params[0].grad._data)
    # As PyTorch: each gradient's norm in its own precision (float32 at least: invariant 3),
    # the total in the widest of them (float64 as soon as one gradient is float64)
    accs = [B.float64 if p.grad.dtype == B.float64 else B.float32 for p in params]
    acc = B.float64 if B.float64 in accs else B.float32
    if math.isinf(norm_type):
        per = [xp.max(xp.abs(p.grad._data)).astype(a) if p.grad.size else xp.zeros((), a)
               for p, a in zip(params, accs)]
        total = xp.max(xp.stack([x.astype(acc) for x in per]))
    else:
        per = [xp.linalg.norm(p.grad._data.astype(a, copy=False).ravel(), ord=norm_type)
               for p, a in zip(params, accs)]
        total = xp.linalg.norm(xp.stack([xp.asarray(x, dtype=acc) for x in per]), ord=norm_type)
    total = xp.asarray(total, dtype=acc)  # NumPy reductions return scalars, keep an array
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(
            f"clip_grad_norm: the total {norm_type}-norm of the gradients is {float(total)}; "
            "pass error_if_nonfinite=False to clip anyway (or check for overflow / use a "
            "GradScaler)")
    coef = xp.asarray(xp.minimum(max_norm / (total + 1e-6), 1.0), dtype=acc)
    for p, a in zip(params, accs):
        g = p.grad._data
        # the factor rounded to the gradient's compute precision first, as PyTorch's ``mul_``
        scaled = (g * coef.astype(a)).astype(g.dtype, copy=False)
        p.grad = _make(xp.asarray(scaled), False, None, 0)  # 0-d: an array, not a scalar
    return _make(total, False, None, 0)


def clip_grad_value(params, clip_value: float) -> None:
    """Clamp every gradient entry into ``[-clip_value, clip_value]``.

    Args:
        params: a Tensor or an iterable of Tensors; those without ``.grad`` are ignored.
        clip_value: the largest allowed magnitude (must be >= 0).
    """
    if clip_value < 0:
        raise ValueError(f"clip_grad_value: clip_value must be >= 0, got {clip_value}")
    for p in _with_grads(params):
        g = p.grad._data
        xp = B.get_array_module(g)
        p.grad = _make(xp.asarray(xp.clip(g, -clip_value, clip_value)), False, None, 0)
