"""Adam and AdamW (decoupled weight decay), with the AMSGrad variant; PyTorch update rules."""

from __future__ import annotations

import math

from .. import _backend as B
from .._backend import fused
from .optimizer import Optimizer, state_dtype

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam with the PyTorch update rule.

    Per step ``t`` (counted per parameter, only when it has a gradient)::

        g = grad + weight_decay * p                  # Adam; AdamW decays p instead: p *= 1 - lr*wd
        m = m + (1 - beta1) * (g - m)                # == beta1*m + (1-beta1)*g
        v = beta2 * v + (1 - beta2) * g * g
        v_hat = max(v_hat, v) if amsgrad else v
        p -= lr / (1 - beta1**t) * m / (sqrt(v_hat) / sqrt(1 - beta2**t) + eps)

    Args:
        params: Parameters or parameter-group dicts.
        lr: learning rate.
        betas: decay rates of the first and second moment.
        eps: added to the denominator for stability.
        weight_decay: L2 penalty added to the gradient (coupled, as in PyTorch's Adam).
        amsgrad: keep the running maximum of the second moment.
    """

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False):
        name = type(self).__name__
        if lr < 0:
            raise ValueError(f"{name}: invalid learning rate {lr} (must be >= 0)")
        if eps < 0:
            raise ValueError(f"{name}: invalid eps {eps} (must be >= 0)")
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"{name}: invalid betas {betas} (two values in [0, 1))")
        if weight_decay < 0:
            raise ValueError(f"{name}: invalid weight_decay {weight_decay} (must be >= 0)")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad))

    def _update_group(self, group: dict, found_inf=None) -> None:
        lr = group["lr"]
        beta1, beta2 = group["betas"]
        eps = group["eps"]
        wd = group["weight_decay"]
        amsgrad = group["amsgrad"]
        decoupled = self._decoupled
        state = self.state
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            data = p.data
            xp = B.get_array_module(data)
            sd = state_dtype(data.dtype)
            low = data.dtype != sd
            st = state.get(p)
            if st is None:
                st = state[p] = {"step": 0, "exp_avg": xp.zeros(data.shape, sd),
                                 "exp_avg_sq": xp.zeros(data.shape, sd)}
                if amsgrad:
                    st["max_exp_avg_sq"] = xp.zeros(data.shape, sd)
            if found_inf is not None:  # GPU, sync-free scaler: count the step on the device
                t = st["step"]
                if not hasattr(t, "shape"):
                    with data.device:
                        t = st["step"] = xp.full(1, t, B.int64)
                t += found_inf.reshape(1) == 0
            else:
                t = st["step"] = st["step"] + 1
            if fused.use_fused(data):  # GPU: the whole update is one kernel (_backend/fused.py)
                dev_t = t if found_inf is not None else None
                vmax = fused.adam_update(data, grad.data, st["exp_avg"], st["exp_avg_sq"],
                                         st.get("max_exp_avg_sq"), 1 if dev_t is not None else t,
                                         lr, beta1, beta2, eps, wd, decoupled, amsgrad,
                                         found_inf, dev_t)
                if amsgrad:
                    st["max_exp_avg_sq"] = vmax
                p._version += 1
                continue
            w = data.astype(sd) if low else data
            g = grad.data
            if g.dtype != sd:
                g = g.astype(sd)
            if wd != 0:
                if decoupled:
                    w *= 1.0 - lr * wd
                else:
                    g = g + wd * w
            m = st["exp_avg"]
            v = st["exp_avg_sq"]
            # PyTorch updates m with lerp(m, g, 1 - beta1): m + (1 - beta1) * (g - m).
            m += (1.0 - beta1) * (g - m)
            v *= beta2
            v += (1.0 - beta2) * (g * g)
            if amsgrad:
                vmax = st.get("max_exp_avg_sq")
                if vmax is None:  # amsgrad switched on after the first steps
                    vmax = st["max_exp_avg_sq"] = v.copy()
                xp.maximum(vmax, v, out=vmax)
                v = vmax
            step_size = lr / (1.0 - beta1 ** t)
            denom = xp.sqrt(v)
            denom /= math.sqrt(1.0 - beta2 ** t)
            denom += eps
            upd = m / denom
            upd *= step_size
            w -= upd
            if low:
                xp.copyto(data, w, casting="unsafe")
            p._version += 1


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
    """

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad)
