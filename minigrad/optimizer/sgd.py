"""Stochastic gradient descent: momentum, dampening, weight decay, Nesterov (PyTorch rule)."""

from __future__ import annotations

from .._backend import fused
from .optimizer import Optimizer, check_switches

__all__ = ["SGD"]


class SGD(Optimizer):
    """SGD with the PyTorch update rule.

    ``g = grad + weight_decay * p``; with momentum, ``buf = g`` on the first step and
    ``buf = momentum * buf + (1 - dampening) * g`` afterwards, then ``g = g + momentum * buf``
    (Nesterov) or ``g = buf``; finally ``p -= lr * g``. With ``maximize`` the gradient is
    negated first.

    Args:
        params: Parameters or parameter-group dicts.
        lr: learning rate.
        momentum: momentum factor (0 disables the buffer).
        dampening: dampening of the momentum.
        weight_decay: L2 penalty added to the gradient.
        nesterov: Nesterov momentum (needs momentum > 0 and dampening == 0).
        maximize: ascend instead of descend.
        foreach, fused, differentiable: PyTorch's implementation switches, accepted: they
            change no value in PyTorch and there is one body here (a fused kernel on the GPU);
            ``differentiable=True`` is refused (see ``check_switches``).

    Example:
        >>> import minigrad as mg
        >>> from minigrad.optimizer import SGD
        >>> w = mg.Parameter([1.0, 2.0])
        >>> w.grad = mg.tensor([0.5, 0.5])
        >>> _ = SGD([w], lr=0.1).step().clear_grad()
        >>> w.numpy().tolist()
        [0.949999988079071, 1.9500000476837158]
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach=None, differentiable: bool = False, fused=None):
        check_switches("SGD", foreach=foreach, fused=fused, differentiable=differentiable)
        if lr < 0:
            raise ValueError(f"SGD: invalid learning rate {lr} (must be >= 0)")
        if momentum < 0:
            raise ValueError(f"SGD: invalid momentum {momentum} (must be >= 0)")
        if weight_decay < 0:
            raise ValueError(f"SGD: invalid weight_decay {weight_decay} (must be >= 0)")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov=True needs momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update_group(self, group: dict, found_inf=None) -> None:
        state = self.state
        hyper = (group["lr"], group["momentum"], group["dampening"], group["weight_decay"],
                 group["nesterov"])
        maximize = group["maximize"]
        ready = []  # GPU parameters past their first step: one multi-tensor launch for all
        grads = []
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            grad = -grad._data if maximize else grad._data  # a new array, as PyTorch's -grad
            st = state.get(p)
            if fused.use_fused(p._data) and (st is not None or hyper[1] == 0):
                ready.append(p)
                grads.append(grad)
                continue
            # One body on both backends: a kernel on the GPU, its NumPy twin on the CPU.
            buf = fused.sgd_update(p._data, grad, None if st is None else
                                   st["momentum_buffer"], *hyper, found_inf)
            if buf is not None and st is None:
                state[p] = {"momentum_buffer": buf}
            p._version += 1
        if ready:
            fused.sgd_update_many([p._data for p in ready], grads,
                                  [state[p]["momentum_buffer"] for p in ready]
                                  if hyper[1] != 0 else None, *hyper, found_inf)
            for p in ready:
                p._version += 1
