"""MindSpore's ``Momentum`` optimizer: ``SGD`` with momentum under MindSpore's argument names."""

from __future__ import annotations

from .sgd import SGD

__all__ = ["Momentum"]


class Momentum(SGD):
    """``v = momentum * v + grad; p -= learning_rate * v`` (MindSpore ``nn.Momentum``).

    The same update as ``SGD(params, lr, momentum, weight_decay=..., nesterov=...)`` with
    ``dampening=0``; only the spelling differs.

    Args:
        params: parameters (e.g. ``net.trainable_params()``) or parameter groups.
        learning_rate: the step size.
        momentum: the momentum factor (>= 0).
        weight_decay: L2 penalty added to the gradient.
        loss_scale: gradients are divided by it before the update (MindSpore's fixed-scale
            training without a scaler); 1.0 leaves them alone.
        use_nesterov: Nesterov momentum.
    """

    def __init__(self, params, learning_rate: float, momentum: float, weight_decay: float = 0.0,
                 loss_scale: float = 1.0, use_nesterov: bool = False):
        if not loss_scale > 0:
            raise ValueError(f"Momentum: loss_scale must be > 0, got {loss_scale}")
        super().__init__(params, lr=learning_rate, momentum=momentum,
                         weight_decay=weight_decay, nesterov=use_nesterov)
        self.loss_scale = float(loss_scale)

    def step(self) -> "Momentum":
        if self.loss_scale != 1.0:
            inv = 1.0 / self.loss_scale
            for g in self.param_groups:
                for p in g["params"]:
                    if p.grad is not None:
                        p.grad = p.grad * inv
        return super().step()
