"""Learning-rate schedulers with PyTorch's update rules, chainable as PyTorch's are.

Each scheduler sets ``group["lr"]`` for every parameter group on ``step()``. Construction records
``initial_lr`` in each group and performs the first ``step()``, so after ``__init__`` the
optimizer already holds the epoch-0 learning rate, as in PyTorch.

Like PyTorch's, most schedulers are *chainable*: ``step()`` updates the optimizer's current
``group["lr"]`` by a factor (``StepLR`` multiplies it by ``gamma`` every ``step_size`` steps,
``ExponentialLR`` every step, ``CosineAnnealingLR`` by the ratio of two cosines, ...), so several
schedulers stepped on one optimizer compound: a ``LinearLR`` warm-up and an ``ExponentialLR``
multiply (``ChainedScheduler`` steps a list of them). ``LambdaLR``, ``CosineAnnealingWarmRestarts``,
``CyclicLR`` and ``OneCycleLR`` compute the rate from the base (or peak) rates instead, as
PyTorch's do, so they overwrite what a scheduler stepped before them wrote. ``step(epoch)`` with an
explicit epoch uses the scheduler's closed form (``lrs_at``) where PyTorch has one.
``SequentialLR`` hands over from one scheduler to the next; ``MultiplicativeLR`` and
``ReduceLROnPlateau`` scale the current rate.

Example:
    >>> import minigrad as mg
    >>> from minigrad.optimizer import SGD, lr_scheduler
    >>> opt = SGD([mg.Parameter([1.0])], lr=1.0)
    >>> warm = lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)
    >>> decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    >>> lrs = [opt.param_groups[0]["lr"]]
    >>> for _ in range(3):
    ...     warm.step(); decay.step(); lrs.append(opt.param_groups[0]["lr"])
    >>> lrs
    [0.5, 0.375, 0.25, 0.125]
"""

from .base import LRScheduler
from .compound import ChainedScheduler, SequentialLR
from .cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from .decay import (ConstantLR, CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR,
                    LinearWarmup, MultiplicativeLR, MultiStepLR, PolynomialLR, StepLR)
from .plateau import ReduceLROnPlateau

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "CosineAnnealingLR", "LambdaLR",
           "LinearWarmup", "ExponentialLR", "ConstantLR", "LinearLR", "PolynomialLR",
           "MultiplicativeLR", "SequentialLR", "ChainedScheduler", "CosineAnnealingWarmRestarts",
           "CyclicLR", "OneCycleLR", "ReduceLROnPlateau"]
