"""The scheduler base: epochs, the first step, state dicts and the current rates."""

from __future__ import annotations

import warnings

class LRScheduler:
    """Base class: ``step()``, ``get_last_lr()``, ``state_dict()``/``load_state_dict()``.

    A subclass gives the learning rates of a step in one of two ways:

    * ``get_lr()`` (PyTorch's hook): the new rates for ``self.last_epoch``, computed from the
      optimizer's current ``group["lr"]`` (a chainable rule) or from ``self.base_lrs``.
      ``self._is_initial`` is true during the construction step.
    * ``_lr(epoch, base_lr)`` or ``lrs_at(epoch)``: a closed form; ``get_lr()`` defaults to it.

    A chainable built-in scheduler (``_chainable = True``) has both: ``get_lr()`` for ``step()``
    and the closed form for ``step(epoch)``, as PyTorch's ``_get_closed_form_lr``.
    """

    _chainable = False  # True: step(epoch) uses lrs_at, step() the recursive get_lr
    _is_initial = False  # True only during the construction step (PyTorch's _initial_mode)
    _in_step = False  # a chainable get_lr() called outside step() is not the rate in use

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
        self._last_lr = _current_lrs(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """The construction step (``SequentialLR`` repeats it when a scheduler takes over at
        epoch 0): chainable rules keep the optimizer's rate on it, as PyTorch's do."""
        self._is_initial = True
        try:
            self.step()
        finally:
            del self._is_initial  # back to the class default, and out of state_dict()

    def _lr(self, epoch, base_lr: float) -> float:
        raise NotImplementedError(f"{type(self).__name__} has no closed form; override "
                                  "get_lr(), _lr(epoch, base_lr) or lrs_at(epoch)")

    def lrs_at(self, epoch) -> list:
        """The learning rates of every parameter group at ``epoch`` by the closed form (for a
        chainable scheduler: what it alone would set)."""
        return [self._lr(epoch, base) for base in self.base_lrs]

    def get_lr(self) -> list:
        """The learning rates for ``self.last_epoch`` (PyTorch's hook, called by ``step()``);
        read the rates in use with :meth:`get_last_lr`."""
        return self.lrs_at(self.last_epoch)

    def step(self, epoch=None) -> None:
        """Advance one epoch (or iteration), or go to ``epoch``, and write the new learning
        rates."""
        self._update_lr(epoch)

    def _update_lr(self, epoch=None) -> None:
        self._in_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                lrs = self.get_lr()
            else:
                self.last_epoch = epoch
                lrs = self.lrs_at(epoch) if self._chainable else self.get_lr()
        finally:
            del self._in_step
        self._set(lrs)

    def _set(self, lrs) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs, strict=True):
            group["lr"] = float(lr)
        self._last_lr = _current_lrs(self.optimizer)

    def _warn_outside_step(self) -> None:
        if not self._in_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()` (get_lr() computes the next step's update).",
                          UserWarning, stacklevel=3)

    def _current(self) -> list:
        """The optimizer's rates, unchanged (a chainable rule's step without an update)."""
        return _current_lrs(self.optimizer)

    def get_last_lr(self) -> list:
        """The learning rates set by the last ``step()``, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """Everything but the optimizer and callables (plain data, ``mg.save``-able)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()
                if k != "optimizer" and not callable(v) and not isinstance(v, LRScheduler)
                and not (isinstance(v, list) and v and (callable(v[0])
                                                        or isinstance(v[0], LRScheduler)))}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state from :meth:`state_dict` and re-apply the learning rates (so the
        chainable rules continue from them even without the optimizer's state)."""
        self.__dict__.update(state_dict)
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr


def _current_lrs(optimizer) -> list:
    return [group["lr"] for group in optimizer.param_groups]

def _per_group(value, n, what):
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"expected {n} values of {what}, got {len(value)}")
        return list(value)
    return [value] * n

