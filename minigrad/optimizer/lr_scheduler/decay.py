"""The decays: chainable (each step scales the optimizer's current rate) like PyTorch's,
with closed forms for ``step(epoch)``; ``LambdaLR`` from the base rates."""

from __future__ import annotations

import bisect
import math

from .base import LRScheduler

class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs (closed form:
    ``base_lr * gamma ** (epoch // step_size)``)."""

    _chainable = True

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        if step_size <= 0:
            raise ValueError(f"StepLR: step_size must be positive, got {step_size}")
        self.step_size = int(step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _lr(self, epoch, base_lr):
        return base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone (a milestone listed twice
    counts twice; closed form: ``base_lr * gamma ** (number of milestones <= epoch)``)."""

    _chainable = True

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        hits = self.milestones.count(self.last_epoch)
        if not hits:
            return self._current()
        return [g["lr"] * self.gamma ** hits for g in self.optimizer.param_groups]

    def _lr(self, epoch, base_lr):
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing towards ``eta_min`` over ``T_max`` epochs, PyTorch's recursive rule
    (closed form: ``eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``).

    Past ``T_max`` the cosine continues (the learning rate rises again), as in PyTorch.
    """

    _chainable = True

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        if T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be positive, got {T_max}")
        self.T_max = int(T_max)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return self._current()
        epoch, t_max, eta_min = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if (epoch - 1 - t_max) % (2 * t_max) == 0:
            # the trough: the ratio below would divide by zero, so step up by the half-period
            return [g["lr"] + (base - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
                    for base, g in zip(self.base_lrs, groups)]
        ratio = ((1 + math.cos(math.pi * epoch / t_max))
                 / (1 + math.cos(math.pi * (epoch - 1) / t_max)))
        return [ratio * (g["lr"] - eta_min) + eta_min for g in groups]

    def _lr(self, epoch, base_lr):
        return (self.eta_min
                + (base_lr - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2)


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)``; one function, or one per parameter group.

    Not chainable (PyTorch's neither): it overwrites the rate from ``base_lr``. The functions
    are not part of ``state_dict()``: recreate the scheduler with them, then load.
    """

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.lr_lambdas = _lambdas(lr_lambda, optimizer, "LambdaLR")
        super().__init__(optimizer, last_epoch)

    def lrs_at(self, epoch) -> list:
        return [base * fn(epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]


def _lambdas(lr_lambda, optimizer, who) -> list:
    n = len(optimizer.param_groups)
    fns = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
    if len(fns) != n:
        raise ValueError(f"{who}: {len(fns)} lr_lambdas for {n} param groups")
    for fn in fns:
        if not callable(fn):
            raise TypeError(f"{who}: lr_lambda should be a function, got {type(fn).__name__}")
    return fns


class LinearLR(LRScheduler):
    """The factor goes linearly from ``start_factor`` to ``end_factor`` over ``total_iters``
    steps, then stays; chainable (closed form:
    ``base_lr * (start + (end - start) * min(epoch, total) / total)``).
    """

    _chainable = True

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if not 0.0 < start_factor <= 1.0:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0.0 <= end_factor <= 1.0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = int(total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        # the ratio of this step's factor to the last one's
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [g["lr"] * ratio for g in groups]

    def _lr(self, epoch, base_lr):
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                          * min(self.total_iters, epoch) / self.total_iters)


class LinearWarmup(LinearLR):
    """Linear warm-up from ``start_factor * base_lr`` to ``base_lr`` over ``warmup_steps`` steps:
    PyTorch's ``LinearLR(start_factor, end_factor=1.0, total_iters=warmup_steps)``.
    Call ``step()`` once per iteration.
    """

    def __init__(self, optimizer, warmup_steps: int, start_factor: float = 1.0 / 3,
                 last_epoch: int = -1):
        if warmup_steps <= 0:
            raise ValueError(f"LinearWarmup: warmup_steps must be positive, got {warmup_steps}")
        if not 0.0 < start_factor <= 1.0:
            raise ValueError(f"LinearWarmup: start_factor must be in (0, 1], got {start_factor}")
        self.warmup_steps = int(warmup_steps)
        super().__init__(optimizer, float(start_factor), 1.0, self.warmup_steps, last_epoch)


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch (closed form:
    ``base_lr * gamma ** epoch``)."""

    _chainable = True

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return self._current()
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _lr(self, epoch, base_lr):
        return base_lr * self.gamma ** epoch


class ConstantLR(LRScheduler):
    """Multiply the learning rate by ``factor`` at epoch 0 and divide it back at
    ``total_iters`` (closed form: ``base_lr * factor`` until ``total_iters``, then ``base_lr``).
    """

    _chainable = True

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if not 0.0 <= factor <= 1.0:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor = factor
        self.total_iters = int(total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch != self.total_iters:
            return self._current()
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _lr(self, epoch, base_lr):
        return base_lr * (self.factor + (epoch >= self.total_iters) * (1 - self.factor))


class PolynomialLR(LRScheduler):
    """Polynomial decay to zero over ``total_iters`` epochs, PyTorch's recursive rule (closed
    form: ``base_lr * (1 - min(epoch, total_iters) / total_iters) ** power``)."""

    _chainable = True

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters = int(total_iters)
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        epoch, total = self.last_epoch, self.total_iters
        decay = ((1.0 - epoch / total) / (1.0 - (epoch - 1) / total)) ** self.power
        return [g["lr"] * decay for g in self.optimizer.param_groups]

    def _lr(self, epoch, base_lr):
        return base_lr * (1.0 - min(self.total_iters, epoch) / self.total_iters) ** self.power


class MultiplicativeLR(LRScheduler):
    """Multiply the current learning rate by ``lr_lambda(epoch)`` at each step after the
    construction (one function, or one per parameter group); no closed form."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.lr_lambdas = _lambdas(lr_lambda, optimizer, "MultiplicativeLR")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return self._current()
        return [g["lr"] * fn(self.last_epoch)
                for g, fn in zip(self.optimizer.param_groups, self.lr_lambdas)]
