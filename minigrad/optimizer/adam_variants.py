"""Adam's relatives: Adamax (infinity norm), NAdam (Nesterov momentum) and RAdam (rectified
variance); PyTorch update rules and state names. One body for NumPy and CuPy
(``_elementwise``); the step count may live on the device (``adam._advance``), so every
bias correction is written to work on a host number or a 0-d device array alike.
"""

from __future__ import annotations

import numpy as np

from ._elementwise import Frame, frames, host_step, lerp
from .adam import check_adam_args, count_step
from .optimizer import Optimizer, check_switches

__all__ = ["Adamax", "NAdam", "RAdam"]


class Adamax(Optimizer):
    """Adamax: ``m = lerp(m, g, 1 - beta1)``; ``u = max(beta2 * u, |g| + eps)``;
    ``p -= lr / (1 - beta1 ** t) * m / u`` with ``g = grad + weight_decay * p``.

    Args:
        params: Parameters or parameter-group dicts.
        lr: learning rate (PyTorch's default 2e-3).
        betas: decay of the first moment and of the infinity norm.
        eps: added to ``|g|``.
        weight_decay: L2 penalty added to the gradient.
        maximize: ascend instead of descend.
        foreach, capturable, differentiable: PyTorch's implementation switches, accepted
            (they change no value); ``differentiable=True`` is refused (``check_switches``).
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):
        check_adam_args("Adamax", lr, betas, eps, weight_decay)
        check_switches("Adamax", foreach=foreach, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize))

    def _update_group(self, group: dict, found_inf=None) -> None:
        beta1, beta2 = group["betas"]
        for f in frames(group, found_inf):
            p = f.p
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": 0, "exp_avg": f.zeros(), "exp_inf": f.zeros()}
            t = count_step(st, p._data, found_inf)
            c, g = f.c, f.g
            m = lerp(st["exp_avg"], g, 1 - beta1, c)
            u = f.xp.maximum(st["exp_inf"] * c.type(beta2), f.xp.abs(g) + c.type(group["eps"]))
            f.store(st["exp_avg"], m)
            f.store(st["exp_inf"], u)
            clr = group["lr"] / (1 - beta1 ** t)
            f.commit(f.w + f.scalar(-clr) * m / u)


class NAdam(Optimizer):
    """NAdam (Dozat), PyTorch's rule: momentum ``mu_t = beta1 * (1 - 0.5 * 0.96 **
    (t * momentum_decay))``, its running product in ``mu_product`` (float32, as PyTorch keeps
    it), ``m``/``v`` as Adam's, and ``p -= lr * ((1 - mu_t) / (1 - prod_t) * g +
    mu_{t+1} / (1 - prod_{t+1}) * m) / (sqrt(v / (1 - beta2 ** t)) + eps)``.

    Args:
        params: Parameters or parameter-group dicts.
        lr: learning rate (PyTorch's default 2e-3).
        betas: decay of the first and second moment.
        eps: added to the denominator.
        weight_decay: L2 penalty on the gradient, or decoupled (``p *= 1 - lr * wd``) with
            ``decoupled_weight_decay``.
        momentum_decay: the ``psi`` of the momentum schedule.
        maximize: ascend instead of descend.
        foreach, capturable, differentiable: PyTorch's implementation switches, accepted
            (they change no value); ``differentiable=True`` is refused (``check_switches``).
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        check_adam_args("NAdam", lr, betas, eps, weight_decay)
        if momentum_decay < 0:
            raise ValueError(f"NAdam: invalid momentum_decay {momentum_decay} (must be >= 0)")
        check_switches("NAdam", foreach=foreach, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _update_group(self, group: dict, found_inf=None) -> None:
        beta1, beta2 = group["betas"]
        lr, wd, psi = group["lr"], group["weight_decay"], group["momentum_decay"]
        decoupled = group["decoupled_weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            f = Frame(p, found_inf, group["maximize"], 0.0 if decoupled else wd)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": 0, "mu_product": 1.0, "exp_avg": f.zeros(),
                                      "exp_avg_sq": f.zeros()}
            t = count_step(st, p._data, found_inf)
            c, g, xp = f.c, f.g, f.xp
            w = f.w * c.type(1 - lr * wd) if decoupled and wd != 0 else f.w
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
            old = st["mu_product"]
            prod = (np.float32(old) * np.float32(mu)) if host_step(t) else \
                xp.asarray(old, dtype=np.float32) * xp.asarray(mu).astype(np.float32)
            prod = f.keep(old, prod) if not host_step(t) else float(prod)
            prod_next = prod * mu_next
            m = lerp(st["exp_avg"], g, 1 - beta1, c)
            v = st["exp_avg_sq"] * c.type(beta2) + c.type(1 - beta2) * g * g
            f.store(st["exp_avg"], m)
            f.store(st["exp_avg_sq"], v)
            denom = xp.sqrt(v / f.scalar(1 - beta2 ** t)) + c.type(group["eps"])
            w = w + f.scalar(-lr * (1.0 - mu) / (1.0 - prod)) * g / denom
            w = w + f.scalar(-lr * mu_next / (1.0 - prod_next)) * m / denom
            st["mu_product"] = prod
            f.commit(w)


class RAdam(Optimizer):
    """RAdam (Liu et al.), PyTorch's rule: Adam's moments; while the variance of the adaptive
    step is intractable (``rho_t <= 5``) the step is ``lr * m_hat`` (SGD with momentum), after
    that ``lr * m_hat * r_t * sqrt(1 - beta2 ** t) / (sqrt(v) + eps)``.

    Args:
        params: Parameters or parameter-group dicts.
        lr: learning rate.
        betas: decay of the first and second moment.
        eps: added to the denominator.
        weight_decay: L2 penalty on the gradient, or decoupled with ``decoupled_weight_decay``.
        maximize: ascend instead of descend.
        foreach, capturable, differentiable: PyTorch's implementation switches, accepted
            (they change no value); ``differentiable=True`` is refused (``check_switches``).
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        check_adam_args("RAdam", lr, betas, eps, weight_decay)
        check_switches("RAdam", foreach=foreach, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _update_group(self, group: dict, found_inf=None) -> None:
        beta1, beta2 = group["betas"]
        lr, wd = group["lr"], group["weight_decay"]
        decoupled = group["decoupled_weight_decay"]
        rho_inf = 2.0 / (1.0 - beta2) - 1.0
        for p in group["params"]:
            if p.grad is None:
                continue
            f = Frame(p, found_inf, group["maximize"], 0.0 if decoupled else wd)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": 0, "exp_avg": f.zeros(), "exp_avg_sq": f.zeros()}
            t = count_step(st, p._data, found_inf)
            c, g, xp = f.c, f.g, f.xp
            w = f.w * c.type(1 - lr * wd) if decoupled and wd != 0 else f.w
            m = lerp(st["exp_avg"], g, 1 - beta1, c)
            v = st["exp_avg_sq"] * c.type(beta2) + c.type(1 - beta2) * g * g
            f.store(st["exp_avg"], m)
            f.store(st["exp_avg_sq"], v)
            bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
            m_hat = m / f.scalar(bc1)
            rho_t = rho_inf - 2 * t * (beta2 ** t) / bc2
            plain = m_hat * c.type(lr)
            if host_step(t) and rho_t <= 5.0:
                f.commit(w + c.type(-1.0) * plain)
                continue
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5 if host_step(t) else \
                xp.sqrt(xp.maximum((rho_t - 4) * (rho_t - 2) * rho_inf
                                   / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 0.0))
            adaptive = f.scalar(bc2 ** 0.5) / (xp.sqrt(v) + c.type(group["eps"]))
            step = plain * adaptive * f.scalar(rect)
            if not host_step(t):  # a device count: choose the branch on the device
                step = xp.where(rho_t > 5.0, step, plain)
            f.commit(w + c.type(-1.0) * step)
