"""Schedulers of schedulers: ``SequentialLR`` hands over at milestones, ``ChainedScheduler``
steps several at once."""

from __future__ import annotations

import bisect

from .base import LRScheduler, _current_lrs
from .plateau import ReduceLROnPlateau

def _check_schedulers(who, schedulers, optimizer) -> None:
    if not schedulers:
        raise ValueError(f"{who} expects at least one scheduler")
    for i, sch in enumerate(schedulers):
        if not hasattr(sch, "optimizer"):
            raise TypeError(f"{who}: scheduler {i} ({type(sch).__name__}) has no optimizer")
        if isinstance(sch, ReduceLROnPlateau):
            raise ValueError(f"{who} does not support ReduceLROnPlateau (scheduler {i}): its "
                             "step() needs the metric")
        if sch.optimizer is not optimizer:
            raise ValueError(f"{who}: scheduler {i} ({type(sch).__name__}) drives another "
                             "optimizer")


def _rewind(sch) -> None:
    """Take back one epoch from ``sch`` (from each scheduler inside a ``SequentialLR`` or
    ``ChainedScheduler``): their constructions counted epoch 0, which ``SequentialLR`` replays."""
    if hasattr(sch, "_schedulers"):
        for inner in sch._schedulers:
            _rewind(inner)
    elif hasattr(sch, "last_epoch"):
        sch.last_epoch -= 1


class _Compound(LRScheduler):
    """Base of the schedulers that drive others (``self._schedulers``): their state holds the
    inner schedulers' states."""

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        for inner, st in zip(self._schedulers, state.pop("_schedulers"), strict=True):
            inner.load_state_dict(st)
        super().load_state_dict(state)  # last: the container's rates are the ones in use


class SequentialLR(_Compound):
    """``schedulers[i]`` drives the learning rate from ``milestones[i - 1]`` on, PyTorch's rules:
    at its milestone a scheduler restarts at its epoch 0 (its closed form there, where it has
    one), then steps on from the rate it finds.

    Args:
        optimizer: the optimizer every scheduler drives.
        schedulers: the schedulers, in order.
        milestones: the epochs where the next scheduler takes over (one fewer than
            ``schedulers``).
        last_epoch: the index of the last epoch (-1: start).
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        schedulers = list(schedulers)
        _check_schedulers("SequentialLR", schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need "
                             f"{len(schedulers) - 1} milestones, got {len(milestones)}")
        self._schedulers = schedulers
        self.milestones = [int(m) for m in milestones]
        self.optimizer = optimizer
        self.last_epoch = last_epoch + 1
        # undo the schedulers' own construction steps; the first one's is replayed below
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        _rewind(self)
        first = self._schedulers[bisect.bisect_right(self.milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self, epoch=None) -> None:
        """Advance one epoch, or go to ``epoch`` (the active scheduler's closed form there)."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        i = bisect.bisect_right(self.milestones, self.last_epoch)
        sch = self._schedulers[i]
        start = self.milestones[i - 1] if i else 0
        if epoch is not None:
            sch._update_lr(self.last_epoch - start)
        elif i and start == self.last_epoch:
            sch._update_lr(0)
        else:
            sch.step()
        self._last_lr = sch.get_last_lr()

    def lrs_at(self, epoch) -> list:
        """The active scheduler's closed form at ``epoch``, counted from its milestone."""
        i = bisect.bisect_right(self.milestones, epoch)
        return self._schedulers[i].lrs_at(epoch - self.milestones[i - 1] if i else epoch)


class ChainedScheduler(_Compound):
    """Step several schedulers of one optimizer together, each in list order on the rate the
    previous one left (PyTorch's ``ChainedScheduler``): chainable rules compound.

    Args:
        schedulers: the schedulers (already constructed: their first steps are done).
        optimizer: the optimizer they drive (default: the first scheduler's).
    """

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if optimizer is None and schedulers:
            optimizer = schedulers[0].optimizer
        _check_schedulers("ChainedScheduler", schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _current_lrs(optimizer)

    def step(self) -> None:
        """Step every scheduler once, in order."""
        for sch in self._schedulers:
            sch.step()
        self._last_lr = _current_lrs(self.optimizer)

