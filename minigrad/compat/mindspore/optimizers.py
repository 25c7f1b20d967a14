"""MindSpore's optimizers, attached to ``minigrad.nn``: ``nn.SGD``, ``nn.Momentum`` and
``nn.Adam`` with MindSpore's signatures, over minigrad's ``SGD``, ``Momentum`` and ``Adam``.

What MindSpore adds to them: ``optimizer(grads)`` applies one update with the gradients given
in the order of ``optimizer.parameters`` (MindSpore's functional training step,
``grads = grad_fn(...); optimizer(grads)``), and ``loss_scale`` divides the gradients before
the update (the base ``Optimizer``'s ``_loss_scale``, which ``Momentum`` uses too).

Example:
    >>> import minigrad as mg
    >>> from minigrad import nn
    >>> w = mg.Parameter([1.0, 2.0])
    >>> opt = nn.SGD([w], learning_rate=0.5)
    >>> opt((mg.tensor([1.0, 1.0]),))
    True
    >>> w.numpy().tolist()
    [0.5, 1.5]
"""

from __future__ import annotations

from ...core.tensor import Tensor
from ...optimizer import adam as _adam
from ...optimizer import momentum as _momentum
from ...optimizer import sgd as _sgd

__all__ = ["SGD", "Momentum", "Adam"]


def _learning_rate(value, name):
    """A MindSpore ``learning_rate`` as a number (a float, int or one-element Tensor)."""
    if isinstance(value, Tensor):
        if value.size != 1:
            raise NotImplementedError(
                f"{name}: a learning_rate Tensor with {value.size} values (one per step) is "
                "not supported; pass a number and drive it with a scheduler from "
                "minigrad.optim.lr_scheduler")
        return float(value.numpy().reshape(-1)[0])
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise NotImplementedError(
        f"{name}: learning_rate {type(value).__name__} (a list or LearningRateSchedule) is not "
        "supported; pass a number and drive it with a scheduler from minigrad.optim.lr_scheduler")


def _loss_scale(value, name) -> float:
    if not value > 0:
        raise ValueError(f"{name}: loss_scale must be > 0, got {value}")
    return float(value)


class _Callable:
    """MindSpore's optimizer protocol: ``parameters`` and ``optimizer(grads)``."""

    @property
    def parameters(self) -> tuple:
        """Every parameter, group by group (the order ``optimizer(grads)`` expects)."""
        return tuple(p for g in self.param_groups for p in g["params"])

    def __call__(self, gradients):
        """Apply one update with ``gradients`` (one per parameter, in the order of
        ``parameters``; None skips a parameter). Returns True, as MindSpore's does."""
        params = self.parameters
        gradients = tuple(gradients)
        if len(gradients) != len(params):
            raise ValueError(f"{type(self).__name__}: got {len(gradients)} gradients for "
                             f"{len(params)} parameters; pass one per optimizer.parameters "
                             "entry, in that order")
        for p, g in zip(params, gradients):
            p.grad = g
        self.step()
        return True


class SGD(_Callable, _sgd.SGD):
    """MindSpore's ``nn.SGD(params, learning_rate=0.1, momentum=0.0, dampening=0.0,
    weight_decay=0.0, nesterov=False, loss_scale=1.0)``: PyTorch's SGD rule (the first step's
    buffer is the gradient), gradients divided by ``loss_scale``."""

    def __init__(self, params, learning_rate=0.1, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 loss_scale: float = 1.0):
        super().__init__(params, lr=_learning_rate(learning_rate, "SGD"), momentum=momentum,
                         dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
        self._loss_scale = _loss_scale(loss_scale, "SGD")


class Momentum(_Callable, _momentum.Momentum):
    """MindSpore's ``nn.Momentum(params, learning_rate, momentum, weight_decay=0.0,
    loss_scale=1.0, use_nesterov=False)``: ``minigrad.optimizer.Momentum``, callable."""

    def __init__(self, params, learning_rate, momentum: float, weight_decay: float = 0.0,
                 loss_scale: float = 1.0, use_nesterov: bool = False):
        super().__init__(params, _learning_rate(learning_rate, "Momentum"), momentum,
                         weight_decay=weight_decay, loss_scale=loss_scale,
                         use_nesterov=use_nesterov)


class Adam(_Callable, _adam.Adam):
    """MindSpore's ``nn.Adam(params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
    use_locking=False, use_nesterov=False, weight_decay=0.0, loss_scale=1.0,
    use_amsgrad=False)``: the update of MindSpore's documented formula, which is PyTorch's Adam
    (L2 ``weight_decay`` added to the gradient), gradients divided by ``loss_scale``.

    ``use_locking`` changes nothing in one process; ``use_nesterov=True`` (MindSpore's
    Nesterov-accelerated Adam kernel) is refused rather than ignored.
    """

    def __init__(self, params, learning_rate=1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, use_locking: bool = False, use_nesterov: bool = False,
                 weight_decay: float = 0.0, loss_scale: float = 1.0, use_amsgrad: bool = False,
                 use_lazy: bool = False, use_offload: bool = False):
        if use_nesterov:
            raise NotImplementedError("Adam(use_nesterov=True) is not supported (MindSpore's "
                                      "Nesterov-accelerated Adam); minigrad.optim.NAdam is "
                                      "PyTorch's, a different rule")
        if use_lazy or use_offload:
            raise NotImplementedError("Adam(use_lazy=/use_offload=True) are for sparse and "
                                      "host-offloaded parameters, which minigrad does not have")
        super().__init__(params, lr=_learning_rate(learning_rate, "Adam"),
                         betas=(beta1, beta2), eps=eps, weight_decay=weight_decay,
                         amsgrad=use_amsgrad)
        self._loss_scale = _loss_scale(loss_scale, "Adam")
