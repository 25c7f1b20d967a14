"""Adam and AdamW (decoupled weight decay), with the AMSGrad variant; PyTorch update rules."""

from __future__ import annotations

from .. import _backend as B
from .._backend import cuda_graph, fused
from .optimizer import Optimizer, check_switches, state_dtype

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam with the PyTorch update rule.

    Per step ``t`` (counted per parameter, only when it has a gradient)::

        g = -grad if maximize else grad
        g = g + weight_decay * p                     # Adam; AdamW decays p instead: p *= 1 - lr*wd
        m = m + (1 - beta1) * (g - m)                # == beta1*m + (1-beta1)*g
        v = beta2 * v + (1 - beta2) * g * g
        v_hat = max(v_hat, v) if amsgrad else v
        p -= lr / (1 - beta1**t) * m / (sqrt(v_hat) / sqrt(1 - beta2**t) + eps)

    Args:
        params: Parameters or parameter-group dicts.
        lr: learning rate.
        betas: decay rates of the first and second moment.
        eps: added to the denominator for stability.
        weight_decay: L2 penalty added to the gradient (coupled, as in PyTorch's Adam), or
            decoupled as AdamW's with ``decoupled_weight_decay=True``.
        amsgrad: keep the running maximum of the second moment.
        maximize: ascend instead of descend.
        decoupled_weight_decay: AdamW's decay (``Adam(..., decoupled_weight_decay=True)`` is
            ``AdamW``, as in PyTorch).
        foreach, fused, capturable, differentiable: PyTorch's implementation switches,
            accepted: they change no value in PyTorch and there is one body here (a fused
            kernel on the GPU, which a CUDA graph captures as it is); ``differentiable=True``
            is refused (see ``check_switches``).
    """

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused=None,
                 decoupled_weight_decay: bool = False):
        name = type(self).__name__
        check_adam_args(name, lr, betas, eps, weight_decay)
        check_switches(name, foreach=foreach, fused=fused, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize,
                                      decoupled_weight_decay=bool(decoupled_weight_decay
                                                                  or self._decoupled)))

    def _update_group(self, group: dict, found_inf=None) -> None:
        lr = group["lr"]
        beta1, beta2 = group["betas"]
        amsgrad = group["amsgrad"]
        maximize, decoupled = group["maximize"], group["decoupled_weight_decay"]
        state = self.state
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            grad = -grad._data if maximize else grad._data  # a new array, as PyTorch's -grad
            data = p._data
            st = state.get(p)
            if st is None:
                xp, sd = B.get_array_module(data), state_dtype(data.dtype)
                st = state[p] = {"step": 0, "exp_avg": xp.zeros(data.shape, sd),
                                 "exp_avg_sq": xp.zeros(data.shape, sd)}
            t = _advance(st, data, found_inf)
            on_device = hasattr(t, "shape")
            # One body on both backends: a kernel on the GPU, its NumPy twin on the CPU.
            vmax = fused.adam_update(data, grad, st["exp_avg"], st["exp_avg_sq"],
                                     st.get("max_exp_avg_sq"), 1 if on_device else t, lr, beta1,
                                     beta2, group["eps"], group["weight_decay"], decoupled,
                                     amsgrad, found_inf,
                                     t if on_device else None)
            if amsgrad:
                st["max_exp_avg_sq"] = vmax
            p._version += 1


def check_adam_args(name: str, lr, betas, eps, weight_decay) -> None:
    """The argument checks of Adam and its variants (PyTorch's messages)."""
    if lr < 0:
        raise ValueError(f"{name}: invalid learning rate {lr} (must be >= 0)")
    if eps < 0:
        raise ValueError(f"{name}: invalid eps {eps} (must be >= 0)")
    if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"{name}: invalid betas {betas} (two values in [0, 1))")
    if weight_decay < 0:
        raise ValueError(f"{name}: invalid weight_decay {weight_decay} (must be >= 0)")


def _advance(st: dict, data, found_inf):
    """Count one step in ``st`` and return the count: a host int, or a 1-element int64 array
    when the count must live with the data (a sync-free scaler skips steps on the device; a
    captured step replays without Python, so a host count would be frozen at capture). It
    moves there in the capture's eager warm-up: a copy made while recording would be replayed
    too, resetting the count every step."""
    t = st["step"]
    if found_inf is not None or hasattr(t, "shape") or cuda_graph.recording():
        if not hasattr(t, "shape"):
            xp = B.get_array_module(data)
            with B.device_scope(data):
                t = st["step"] = xp.full(1, t, B.int64)
        t += 1 if found_inf is None else (found_inf.reshape(1) == 0)
        return t
    t = st["step"] = t + 1
    return t


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay``
    before the Adam step, instead of adding ``weight_decay * p`` to the gradient.

    Args:
        params: Parameters or parameter-group dicts.
        lr: learning rate.
        betas: decay rates of the first and second moment.
        eps: added to the denominator for stability.
        weight_decay: decoupled decay factor (default 1e-2, as in PyTorch).
        amsgrad: keep the running maximum of the second moment.
        maximize: ascend instead of descend.
        foreach, fused, capturable, differentiable: accepted, as ``Adam``'s.
    """

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach=None, capturable: bool = False, differentiable: bool = False,
                 fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)


def count_step(st: dict, data, found_inf):
    """:func:`_advance`, with a device count as a float64 0-d array ready for the formulas."""
    t = _advance(st, data, found_inf)
    return t if not hasattr(t, "shape") else t.reshape(()).astype("float64")
