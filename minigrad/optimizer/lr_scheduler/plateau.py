"""``ReduceLROnPlateau``: scale the current rate when a metric stops improving."""

from __future__ import annotations

import math

from .base import LRScheduler, _per_group

class ReduceLROnPlateau(LRScheduler):
    """Divide the learning rate by ``1 / factor`` when ``metrics`` (passed to ``step``) has not
    improved for ``patience`` epochs (PyTorch's ``ReduceLROnPlateau``).

    An ``LRScheduler``, as in PyTorch 2.2+ (code that tells schedulers apart with ``isinstance``
    sees the same), but with no closed form and no construction step: the rate changes only
    when ``step(metrics)`` says so, and ``get_lr()`` raises.

    Args:
        optimizer: the optimizer.
        mode: ``"min"`` (lower is better) or ``"max"``.
        factor: the multiplier of a reduction (< 1).
        patience: epochs without improvement tolerated before reducing.
        threshold: the smallest change that counts as an improvement.
        threshold_mode: ``"rel"`` (relative to the best) or ``"abs"``.
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: the floor (one, or one per group).
        eps: a reduction smaller than this is not applied.
    """

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr=0.0, eps: float = 1e-8):
        # no LRScheduler.__init__: no initial_lr and no construction step (nor in PyTorch)
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau: factor should be < 1.0")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown ('min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode {threshold_mode!r} is unknown "
                             "('rel' or 'abs')")
        self.optimizer = optimizer
        self.min_lrs = _per_group(min_lr, len(optimizer.param_groups), "min_lr")
        self.factor = factor
        self.patience = patience
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.mode = mode
        self.cooldown = cooldown
        self.eps = eps
        self.cooldown_counter = 0
        self.num_bad_epochs = 0
        self.best = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def is_better(self, a, best) -> bool:
        rel = self.threshold_mode == "rel"
        if self.mode == "min":
            return a < best * (1.0 - self.threshold) if rel else a < best - self.threshold
        return a > best * (self.threshold + 1.0) if rel else a > best + self.threshold

    def step(self, metrics, epoch=None) -> None:
        """Record this epoch's ``metrics`` (a number or one-element Tensor) and reduce the
        learning rate when it has stalled."""
        current = float(metrics.item() if hasattr(metrics, "item") else metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for g, floor in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(g["lr"])
                new = max(old * self.factor, floor)
                if old - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_lr(self) -> list:
        raise NotImplementedError("ReduceLROnPlateau.get_lr(): its rates change only in "
                                  "step(metrics); read them with get_last_lr()")

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state from ``state_dict()``; the optimizer's rates are left as they are
        (PyTorch's: they are in the optimizer's own state)."""
        self.__dict__.update(state_dict)
