"""Cycles from the base or peak rates (closed forms, as PyTorch's): warm restarts,
``CyclicLR`` and ``OneCycleLR``, with the momentum they cycle too."""

from __future__ import annotations

import math

from .base import LRScheduler, _per_group

class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from ``base_lr`` to ``eta_min`` over ``T_i`` epochs, then a restart;
    ``T_0`` epochs first, each period ``T_mult`` times the last. ``step(epoch)`` accepts a
    fractional epoch (``epoch + batch / n_batches``), as PyTorch's does. Not chainable (PyTorch's
    neither): the rate comes from ``base_lr``."""

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if T_0 <= 0 or int(T_0) != T_0:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_0 must be a positive integer, "
                             f"got {T_0}")
        if T_mult < 1 or int(T_mult) != T_mult:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, "
                             f"got {T_mult}")
        self.T_0 = int(T_0)
        self.T_i = int(T_0)
        self.T_mult = int(T_mult)
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        cos = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * cos / 2 for base in self.base_lrs]

    def step(self, epoch=None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts: epoch must be >= 0, got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._set(self.get_lr())


class CyclicLR(LRScheduler):
    """The cyclical learning rate policy (PyTorch's ``CyclicLR``): per step, the rate goes from
    ``base_lr`` up to ``max_lr`` over ``step_size_up`` steps and back over ``step_size_down``,
    the amplitude scaled by ``mode`` (or ``scale_fn``); with ``cycle_momentum`` the momentum (or
    Adam's ``beta1``) moves the opposite way between ``max_momentum`` and ``base_momentum``.
    Not chainable (PyTorch's neither): it overwrites the rate.

    Args:
        optimizer: the optimizer (its ``lr`` is set to ``base_lr``).
        base_lr, max_lr: the cycle's bounds (one, or one per group).
        step_size_up: steps of the rising half.
        step_size_down: steps of the falling half (default: ``step_size_up``).
        mode: ``"triangular"`` (constant amplitude), ``"triangular2"`` (halved each cycle) or
            ``"exp_range"`` (times ``gamma ** step``).
        gamma: the ``"exp_range"`` base.
        scale_fn: a custom amplitude ``f(x)`` in [0, 1] (overrides ``mode``).
        scale_mode: ``f``'s argument: ``"cycle"`` (the cycle number) or ``"iterations"``.
        cycle_momentum: cycle ``momentum`` / ``betas[0]`` too (the optimizer must have one).
        base_momentum, max_momentum: the momentum range (one, or one per group).
        last_epoch: the index of the last step (-1: start).
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn=None, scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1):
        groups = optimizer.param_groups
        n = len(groups)
        base_lrs = _per_group(base_lr, n, "base_lr")
        if last_epoch == -1:
            for group, lr in zip(groups, base_lrs):
                group["lr"] = lr
        self.max_lrs = _per_group(max_lr, n, "max_lr")
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode {mode!r} is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        # the built-in modes fix their argument, as PyTorch's do
        if scale_fn is None:
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.scale_mode = scale_mode
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer, "CyclicLR")
            self.base_momentums = _per_group(base_momentum, n, "base_momentum")
            self.max_momentums = _per_group(max_momentum, n, "max_momentum")
            if last_epoch == -1:
                for g, lo, hi in zip(groups, self.base_momentums, self.max_momentums):
                    _set_momentum(g, hi, self.use_beta1)
                    g["max_momentum"], g["base_momentum"] = hi, lo
        super().__init__(optimizer, last_epoch)
        # after the first step, as PyTorch: that one used initial_lr (base_lr unless another
        # scheduler set initial_lr before)
        self.base_lrs = base_lrs

    def scale_fn(self, x) -> float:
        """The amplitude factor at ``x`` (a cycle number or a step, per ``scale_mode``)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def _position(self, epoch):
        """(the height within the cycle in [0, 1], the amplitude factor) at ``epoch``."""
        cycle = math.floor(1 + epoch / self.total_size)
        x = 1.0 + epoch / self.total_size - cycle
        if x <= self.step_ratio:
            height = x / self.step_ratio
        else:
            height = (x - 1) / (self.step_ratio - 1)
        return height, self.scale_fn(cycle if self.scale_mode == "cycle" else epoch)

    def lrs_at(self, epoch) -> list:
        height, amp = self._position(epoch)
        return [base + (top - base) * height * amp
                for base, top in zip(self.base_lrs, self.max_lrs)]

    def get_lr(self):
        if self.cycle_momentum:
            height, amp = self._position(self.last_epoch)
            for g, lo, hi in zip(self.optimizer.param_groups, self.base_momentums,
                                 self.max_momentums):
                _set_momentum(g, hi - (hi - lo) * height * amp, self.use_beta1)
        return self.lrs_at(self.last_epoch)

    def state_dict(self) -> dict:
        state = super().state_dict()
        state.pop("_scale_fn_custom", None)  # never overwrite the function of the loader
        return state


class OneCycleLR(LRScheduler):
    """The 1cycle policy (PyTorch's ``OneCycleLR``): per step, the learning rate rises from
    ``max_lr / div_factor`` to ``max_lr`` over ``pct_start`` of the steps, then anneals to
    ``initial_lr / final_div_factor`` (three phases with ``three_phase``); with
    ``cycle_momentum`` the momentum (or Adam's ``beta1``) moves the opposite way between
    ``max_momentum`` and ``base_momentum``. Not chainable (PyTorch's neither).

    Args:
        optimizer: the optimizer (its groups get ``initial_lr``, ``max_lr``, ``min_lr``).
        max_lr: the peak learning rate (one, or one per group).
        total_steps: the number of steps; or give ``epochs`` and ``steps_per_epoch``.
        pct_start: the fraction of steps spent rising.
        anneal_strategy: ``"cos"`` or ``"linear"``.
        cycle_momentum: cycle ``momentum`` / ``betas[0]`` too (the optimizer must have one).
        base_momentum, max_momentum: the momentum range (one, or one per group).
        div_factor: ``initial_lr = max_lr / div_factor``.
        final_div_factor: ``min_lr = initial_lr / final_div_factor``.
        three_phase: rise, fall back to ``initial_lr``, then anneal to ``min_lr``.
        last_epoch: the index of the last step (-1: start).
    """

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
            total_steps = int(epochs) * int(steps_per_epoch)
        if int(total_steps) <= 0:
            raise ValueError(f"OneCycleLR: total_steps must be positive, got {total_steps}")
        if not 0.0 <= pct_start <= 1.0:
            raise ValueError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self.total_steps = int(total_steps)
        self.anneal_strategy = anneal_strategy
        groups = optimizer.param_groups
        n = len(groups)
        max_lrs = _per_group(max_lr, n, "max_lr")
        if last_epoch == -1:
            for g, m in zip(groups, max_lrs):
                g["initial_lr"] = m / div_factor
                g["max_lr"] = m
                g["min_lr"] = g["initial_lr"] / final_div_factor
        t = float(pct_start * self.total_steps)
        if three_phase:
            self._phases = [(t - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (2 * t - 2, "max_lr", "initial_lr", "base_momentum",
                             "max_momentum"),
                            (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                             "max_momentum")]
        else:
            self._phases = [(t - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (self.total_steps - 1, "max_lr", "min_lr", "base_momentum",
                             "max_momentum")]
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer, "OneCycleLR")
            if last_epoch == -1:
                for g, lo, hi in zip(groups, _per_group(base_momentum, n, "base_momentum"),
                                     _per_group(max_momentum, n, "max_momentum")):
                    _set_momentum(g, hi, self.use_beta1)
                    g["max_momentum"], g["base_momentum"] = hi, lo
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _at(self, group, step):
        begin = 0.0
        for i, (end_step, lo, hi, mlo, mhi) in enumerate(self._phases):
            if step <= end_step or i == len(self._phases) - 1:
                pct = (step - begin) / (end_step - begin)
                mom = self._anneal(group[mlo], group[mhi], pct) if self.cycle_momentum else None
                return self._anneal(group[lo], group[hi], pct), mom
            begin = end_step
        raise AssertionError("unreachable")  # pragma: no cover

    def _check(self, epoch) -> None:
        if epoch > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {epoch} times; the total number of "
                             f"steps is {self.total_steps}")

    def lrs_at(self, epoch) -> list:
        self._check(epoch)
        return [self._at(g, epoch)[0] for g in self.optimizer.param_groups]

    def get_lr(self):
        self._check(self.last_epoch)
        lrs = []
        for g in self.optimizer.param_groups:
            lr, mom = self._at(g, self.last_epoch)
            if self.cycle_momentum:
                _set_momentum(g, mom, self.use_beta1)
            lrs.append(lr)
        return lrs


def _uses_beta1(optimizer, who) -> bool:
    defaults = optimizer.defaults
    if "momentum" not in defaults and "betas" not in defaults:
        raise ValueError(f"{who}: optimizer must support momentum or beta1 with "
                         "cycle_momentum enabled")
    return "betas" in defaults


def _set_momentum(group, value, use_beta1):
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value
