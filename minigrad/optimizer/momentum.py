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
        loss_scale: gradients are divided by it before the update, as in MindSpore: pair it
            with ``FixedLossScaleManager(loss_scale, drop_overflow_update=False)`` (or
            ``TrainOneStepCell(..., sens=loss_scale)``), whose cell hands the optimizer the
            scaled gradients; 1.0 leaves them alone.
        use_nesterov: Nesterov momentum.
    """

    def __init__(self, params, learning_rate: float, momentum: float, weight_decay: float = 0.0,
                 loss_scale: float = 1.0, use_nesterov: bool = False):
        if not loss_scale > 0:
            raise ValueError(f"Momentum: loss_scale must be > 0, got {loss_scale}")
        super().__init__(params, lr=learning_rate, momentum=momentum,
                         weight_decay=weight_decay, nesterov=use_nesterov)
        self._loss_scale = float(loss_scale)

    @property
    def loss_scale(self) -> float:
        """The scale ``step`` divides the gradients by (MindSpore's ``loss_scale``)."""
        return self._loss_scale
