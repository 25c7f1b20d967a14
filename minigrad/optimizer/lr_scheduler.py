"""Learning-rate schedulers with PyTorch's formulas (closed forms of them).

Each scheduler sets ``group["lr"]`` for every parameter group on ``step()``. Construction records
``initial_lr`` in each group and performs the first ``step()``, so after ``__init__`` the
optimizer already holds the epoch-0 learning rate, as in PyTorch. The closed forms are used
(``lr = f(base_lr, last_epoch)``), which equal PyTorch's recursive updates up to float rounding;
stacking two schedulers on one optimizer therefore does not chain them.
"""

from __future__ import annotations

import bisect
import math

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "CosineAnnealingLR", "LambdaLR",
           "LinearWarmup"]


class LRScheduler:
    """Base class: ``step()``, ``get_last_lr()``, ``state_dict()``/``load_state_dict()``.

    Subclasses implement ``_factor(epoch, base_lr)`` returning the learning rate for ``epoch``.
    """

    def __init__(self, optimizer, last_epoch: int = -1):
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{type(self).__name__}: param group {i} has no 'initial_lr'; "
                               "resume with last_epoch=-1 or load the scheduler's state_dict")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self.step()

    def _lr(self, epoch: int, base_lr: float) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def step(self) -> None:
        """Advance one epoch (or iteration) and write the new learning rates."""
        self.last_epoch += 1
        lrs = [self._lr(self.last_epoch, base) for base in self.base_lrs]
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = lrs

    def get_last_lr(self) -> list:
        """The learning rates set by the last ``step()``, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """Everything but the optimizer and callables (plain data, ``mg.save``-able)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()
                if k != "optimizer" and not callable(v)
                and not (isinstance(v, list) and v and callable(v[0]))}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state from :meth:`state_dict` and re-apply the learning rates."""
        self.__dict__.update(state_dict)
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr


class StepLR(LRScheduler):
    """``lr = base_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        if step_size <= 0:
            raise ValueError(f"StepLR: step_size must be positive, got {step_size}")
        self.step_size = int(step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _lr(self, epoch, base_lr):
        return base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """``lr = base_lr * gamma ** (number of milestones <= epoch)``."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _lr(self, epoch, base_lr):
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class CosineAnnealingLR(LRScheduler):
    """``lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``.

    Past ``T_max`` the cosine continues (the learning rate rises again), as in PyTorch.
    """

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        if T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be positive, got {T_max}")
        self.T_max = int(T_max)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def _lr(self, epoch, base_lr):
        cos = (1.0 + math.cos(math.pi * epoch / self.T_max)) / 2.0
        return self.eta_min + (base_lr - self.eta_min) * cos


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)``; one function, or one per parameter group.

    The functions are not part of ``state_dict()``: recreate the scheduler with them, then load.
    """

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"LambdaLR: {len(lr_lambda)} lr_lambdas for {n} param groups")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def step(self) -> None:
        self.last_epoch += 1
        lrs = [base * fn(self.last_epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = lrs


class LinearWarmup(LRScheduler):
    """Linear warm-up from ``start_factor * base_lr`` to ``base_lr`` over ``warmup_steps`` steps.

    ``lr = base_lr * (start_factor + (1 - start_factor) * min(epoch, warmup_steps) /
    warmup_steps)`` -- PyTorch's ``LinearLR(start_factor, end_factor=1.0, total_iters)``.
    Call ``step()`` once per iteration.
    """

    def __init__(self, optimizer, warmup_steps: int, start_factor: float = 1.0 / 3,
                 last_epoch: int = -1):
        if warmup_steps <= 0:
            raise ValueError(f"LinearWarmup: warmup_steps must be positive, got {warmup_steps}")
        if not 0.0 < start_factor <= 1.0:
            raise ValueError(f"LinearWarmup: start_factor must be in (0, 1], got {start_factor}")
        self.warmup_steps = int(warmup_steps)
        self.start_factor = float(start_factor)
        super().__init__(optimizer, last_epoch)

    def _lr(self, epoch, base_lr):
        frac = min(epoch, self.warmup_steps) / self.warmup_steps
        return base_lr * (self.start_factor + (1.0 - self.start_factor) * frac)
