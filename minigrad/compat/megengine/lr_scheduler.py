"""MegEngine's ``megengine.optimizer.LRScheduler`` and ``MultiStepLR``, attached to
``minigrad.optimizer``: minigrad's schedulers counting ``current_epoch`` (MegEngine's name for
``last_epoch``).

Example:
    >>> import minigrad as mg
    >>> from minigrad import optimizer
    >>> opt = optimizer.SGD([mg.Parameter([1.0])], lr=0.1)
    >>> sched = optimizer.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)
    >>> [round(opt.param_groups[0]["lr"], 4) for _ in range(5) if sched.step() is None]
    [0.1, 0.05, 0.05, 0.025, 0.025]
"""

from __future__ import annotations

from ...optimizer import lr_scheduler as _lr

__all__ = ["LRScheduler", "MultiStepLR"]


class _CurrentEpoch:
    """``current_epoch``: MegEngine's name of ``last_epoch``."""

    @property
    def current_epoch(self) -> int:
        return self.last_epoch

    @current_epoch.setter
    def current_epoch(self, value) -> None:
        self.last_epoch = value


class LRScheduler(_CurrentEpoch, _lr.LRScheduler):
    """MegEngine's scheduler base: ``LRScheduler(optimizer, current_epoch=-1)``; subclasses
    override ``get_lr()`` (the learning rates for ``self.current_epoch``, from
    ``self.base_lrs``)."""

    def __init__(self, optimizer, current_epoch: int = -1):
        super().__init__(optimizer, last_epoch=current_epoch)


class MultiStepLR(_CurrentEpoch, _lr.MultiStepLR):
    """``MultiStepLR(optimizer, milestones, gamma=0.1, current_epoch=-1)``: the learning rate
    times ``gamma`` at each milestone (milestones must be increasing, as MegEngine checks)."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, current_epoch: int = -1):
        if list(milestones) != sorted(milestones):
            raise ValueError(f"Milestones should be a list of increasing integers. Got "
                             f"{milestones}")
        super().__init__(optimizer, milestones, gamma, last_epoch=current_epoch)
