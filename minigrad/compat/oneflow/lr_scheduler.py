"""OneFlow's ``oneflow.optim.lr_scheduler.CosineDecayLR`` and ``WarmUpLR``, attached to
``minigrad.optim.lr_scheduler`` (``minigrad.optimizer.lr_scheduler``): closed forms on
minigrad's scheduler base, counting ``last_step`` (OneFlow's name for ``last_epoch``).

Example:
    >>> import minigrad as mg
    >>> from minigrad.optim import SGD, lr_scheduler
    >>> opt = SGD([mg.Parameter([1.0])], lr=0.001)
    >>> cosine = lr_scheduler.CosineDecayLR(opt, decay_steps=5, alpha=0.1)
    >>> warm = lr_scheduler.WarmUpLR(cosine, warmup_factor=0.5, warmup_iters=2)
    >>> lrs = [opt.param_groups[0]["lr"]] + [warm.step() or opt.param_groups[0]["lr"]
    ...                                       for _ in range(3)]
    >>> [round(lr, 6) for lr in lrs]
    [0.0005, 0.000595, 0.000689, 0.000411]
"""

from __future__ import annotations

import math

from ...optimizer import lr_scheduler as _lr

__all__ = ["CosineDecayLR", "WarmUpLR"]


class _LastStep:
    """``last_step``: OneFlow's name of ``last_epoch``."""

    @property
    def last_step(self) -> int:
        return self.last_epoch

    @last_step.setter
    def last_step(self, value) -> None:
        self.last_epoch = value


class CosineDecayLR(_LastStep, _lr.LRScheduler):
    """``lr = base_lr * ((1 - alpha) * (1 + cos(pi * step / decay_steps)) / 2 + alpha)`` up to
    ``decay_steps``, then ``base_lr * alpha`` (no restart, unlike ``CosineAnnealingLR``).

    Args:
        optimizer: the optimizer.
        decay_steps: steps of the decay (> 0).
        alpha: the final learning rate as a fraction of the initial one.
        last_step: the index of the last step (-1: start).
        verbose: accepted (minigrad prints nothing).
    """

    def __init__(self, optimizer, decay_steps: int, alpha: float = 0.0, last_step: int = -1,
                 verbose: bool = False):
        if decay_steps <= 0:
            raise ValueError(f"CosineDecayLR: decay_steps must be greater than zero, got "
                             f"{decay_steps}")
        self.decay_steps = decay_steps
        self.alpha = alpha
        super().__init__(optimizer, last_epoch=last_step)

    def _lr(self, step, base_lr):
        if step >= self.decay_steps:
            return base_lr * self.alpha
        cos_decay = 0.5 * (1 + math.cos(math.pi * step / self.decay_steps))
        return base_lr * ((1 - self.alpha) * cos_decay + self.alpha)


class WarmUpLR(_LastStep, _lr.LRScheduler):
    """Warm-up for ``warmup_iters`` steps in front of a scheduler (or of the optimizer's
    constant learning rate), OneFlow's rule.

    During warm-up the factor on the initial learning rate is ``warmup_factor`` (``"constant"``)
    or rises linearly from ``warmup_factor`` towards the wrapped scheduler's factor at step
    ``warmup_iters`` (``"linear"``; towards 1 with ``warmup_prefix`` or without a scheduler).
    Afterwards the wrapped scheduler's learning rate applies, at the same step count, or counted
    from the end of the warm-up with ``warmup_prefix=True``.

    Args:
        scheduler_or_optimizer: a minigrad scheduler (closed form) or an optimizer.
        warmup_factor: the factor at step 0.
        warmup_iters: the warm-up length in steps.
        warmup_method: ``"linear"`` or ``"constant"``.
        warmup_prefix: start the wrapped scheduler after the warm-up instead of under it.
        last_step: the index of the last step (-1: start).
        verbose: accepted (minigrad prints nothing).
    """

    def __init__(self, scheduler_or_optimizer, warmup_factor: float = 1.0 / 3,
                 warmup_iters: int = 5, warmup_method: str = "linear",
                 warmup_prefix: bool = False, last_step: int = -1, verbose: bool = False):
        if warmup_method not in ("linear", "constant"):
            raise ValueError(f"'warmup_method' must be 'linear' or 'constant', but got "
                             f"{warmup_method}")
        if isinstance(scheduler_or_optimizer, _lr.LRScheduler):
            self.scheduler = scheduler_or_optimizer
            optimizer = scheduler_or_optimizer.optimizer
        elif hasattr(scheduler_or_optimizer, "param_groups"):
            self.scheduler = None
            optimizer = scheduler_or_optimizer
        else:
            raise ValueError(f"'scheduler_or_optimizer' must be a LRScheduler or an Optimizer, "
                             f"but got {type(scheduler_or_optimizer)}")
        if self.scheduler is None and warmup_iters <= 0:
            raise ValueError("When 'scheduler_or_optimizer' is an optimizer warmup_iters can't "
                             "be equal to 0")
        self.warmup_factor = warmup_factor
        self.warmup_iters = int(warmup_iters)
        self.warmup_method = warmup_method
        self.warmup_prefix = bool(warmup_prefix)
        super().__init__(optimizer, last_epoch=last_step)

    def lrs_at(self, step):
        if step < self.warmup_iters:
            if self.warmup_method == "constant":
                return [base * self.warmup_factor for base in self.base_lrs]
            if self.scheduler is not None and not self.warmup_prefix:
                ends = [lr / base for lr, base in
                        zip(self.scheduler.lrs_at(self.warmup_iters), self.base_lrs)]
            else:
                ends = [1.0] * len(self.base_lrs)
            frac = step / self.warmup_iters
            return [base * (self.warmup_factor + (end - self.warmup_factor) * frac)
                    for base, end in zip(self.base_lrs, ends)]
        if self.scheduler is None:
            return list(self.base_lrs)
        local = step - self.warmup_iters if self.warmup_prefix else step
        self.scheduler.last_epoch = local
        return self.scheduler.lrs_at(local)


WarmupLR = WarmUpLR  # OneFlow's class name (WarmUpLR is the name it exports)
