"""Learning-rate schedulers with PyTorch's formulas (closed forms of them).

Each scheduler sets ``group["lr"]`` for every parameter group on ``step()``. Construction records
``initial_lr`` in each group and performs the first ``step()``, so after ``__init__`` the
optimizer already holds the epoch-0 learning rate, as in PyTorch. The closed forms are used
(``lr = f(base_lr, last_epoch)``), which equal PyTorch's recursive updates up to float rounding;
stacking two schedulers on one optimizer therefore does not chain them (``SequentialLR``
hands over from one to the next). ``MultiplicativeLR`` and ``ReduceLROnPlateau`` have no closed
form and read the optimizer's current learning rate, as PyTorch's do.
"""

from __future__ import annotations

import bisect
import math

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "CosineAnnealingLR", "LambdaLR",
           "LinearWarmup", "ExponentialLR", "ConstantLR", "LinearLR", "PolynomialLR",
           "MultiplicativeLR", "SequentialLR", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "ReduceLROnPlateau"]


class LRScheduler:
    """Base class: ``step()``, ``get_last_lr()``, ``state_dict()``/``load_state_dict()``.

    Subclasses implement ``_lr(epoch, base_lr)`` returning the learning rate for ``epoch``
    (or ``lrs_at(epoch)`` for all groups at once). A user subclass may instead override
    PyTorch's ``get_lr()`` (the learning rates for ``self.last_epoch``, read from
    ``self.base_lrs``); ``step()`` uses it.
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

    def lrs_at(self, epoch: int) -> list:
        """The learning rates of every parameter group at ``epoch`` (the closed form)."""
        return [self._lr(epoch, base) for base in self.base_lrs]

    def get_lr(self) -> list:
        """The learning rates for ``self.last_epoch`` (PyTorch's hook)."""
        return self.lrs_at(self.last_epoch)

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or iteration), or go to ``epoch``, and write the new learning
        rates."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        self._set(self.get_lr())

    def _set(self, lrs) -> None:
        lrs = [float(lr) for lr in lrs]
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = lrs

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

    def lrs_at(self, epoch: int) -> list:
        return [base * fn(epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]


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


class ExponentialLR(LRScheduler):
    """``lr = base_lr * gamma ** epoch``."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _lr(self, epoch, base_lr):
        return base_lr * self.gamma ** epoch


class ConstantLR(LRScheduler):
    """``lr = base_lr * factor`` until ``total_iters``, then ``base_lr``."""

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if not 0.0 <= factor <= 1.0:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor = factor
        self.total_iters = int(total_iters)
        super().__init__(optimizer, last_epoch)

    def _lr(self, epoch, base_lr):
        return base_lr * (self.factor if epoch < self.total_iters else 1.0)


class LinearLR(LRScheduler):
    """The factor goes linearly from ``start_factor`` to ``end_factor`` over ``total_iters``
    steps, then stays: ``lr = base_lr * (start + (end - start) * min(epoch, total) / total)``.
    """

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

    def _lr(self, epoch, base_lr):
        frac = min(epoch, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * frac)


class PolynomialLR(LRScheduler):
    """``lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power``."""

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters = int(total_iters)
        self.power = power
        super().__init__(optimizer, last_epoch)

    def _lr(self, epoch, base_lr):
        return base_lr * (1.0 - min(epoch, self.total_iters) / self.total_iters) ** self.power


class MultiplicativeLR(LRScheduler):
    """Multiply the current learning rate by ``lr_lambda(epoch)`` at each step after the
    first (one function, or one per parameter group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        n = len(optimizer.param_groups)
        fns = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(fns) != n:
            raise ValueError(f"MultiplicativeLR: {len(fns)} lr_lambdas for {n} param groups")
        self.lr_lambdas = fns
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch > 0:
            return [g["lr"] * fn(self.last_epoch) for g, fn in zip(groups, self.lr_lambdas)]
        return [g["lr"] for g in groups]


class SequentialLR(LRScheduler):
    """``schedulers[i]`` from ``milestones[i - 1]`` on, each counting its epochs from its own
    milestone: ``lr(epoch) = schedulers[i].lr(epoch - milestones[i - 1])``.

    Args:
        optimizer: the optimizer every scheduler drives.
        schedulers: the schedulers, in order.
        milestones: the epochs where the next scheduler takes over (one fewer than
            ``schedulers``).
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("SequentialLR expects at least one scheduler")
        for i, sch in enumerate(schedulers):
            if sch.optimizer is not optimizer:
                raise ValueError(f"SequentialLR: scheduler {i} drives another optimizer")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need "
                             f"{len(schedulers) - 1} milestones, got {len(milestones)}")
        self._schedulers = schedulers
        self.milestones = [int(m) for m in milestones]
        for group in optimizer.param_groups:  # undo the schedulers' own first steps
            group["lr"] = group.get("initial_lr", group["lr"])
        super().__init__(optimizer, last_epoch)

    def lrs_at(self, epoch):
        i = bisect.bisect_right(self.milestones, epoch)
        local = epoch - self.milestones[i - 1] if i else epoch
        sch = self._schedulers[i]
        sch.last_epoch = local
        return sch.lrs_at(local)

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        for sch, st in zip(self._schedulers, state.pop("_schedulers")):
            sch.__dict__.update(st)
        super().load_state_dict(state)


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from ``base_lr`` to ``eta_min`` over ``T_i`` epochs, then a restart;
    ``T_0`` epochs first, each period ``T_mult`` times the last. ``step(epoch)`` accepts a
    fractional epoch (``epoch + batch / n_batches``), as PyTorch's does."""

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

    def step(self, epoch=None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
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
        cos = (1.0 + math.cos(math.pi * self.T_cur / self.T_i)) / 2.0
        self._set([self.eta_min + (base - self.eta_min) * cos for base in self.base_lrs])


class OneCycleLR(LRScheduler):
    """The 1cycle policy (PyTorch's ``OneCycleLR``): per step, the learning rate rises from
    ``max_lr / div_factor`` to ``max_lr`` over ``pct_start`` of the steps, then anneals to
    ``initial_lr / final_div_factor`` (three phases with ``three_phase``); with
    ``cycle_momentum`` the momentum (or Adam's ``beta1``) moves the opposite way between
    ``max_momentum`` and ``base_momentum``.

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
            defaults = optimizer.defaults
            if "momentum" not in defaults and "betas" not in defaults:
                raise ValueError("OneCycleLR: optimizer must support momentum or beta1 with "
                                 "cycle_momentum enabled")
            self.use_beta1 = "betas" in defaults
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

    def lrs_at(self, epoch):
        if epoch > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {epoch} times; the total number of "
                             f"steps is {self.total_steps}")
        return [self._at(g, epoch)[0] for g in self.optimizer.param_groups]

    def step(self, epoch=None) -> None:
        super().step(epoch)
        if self.cycle_momentum:
            for g in self.optimizer.param_groups:
                _set_momentum(g, self._at(g, self.last_epoch)[1], self.use_beta1)


def _per_group(value, n, what):
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"expected {n} values of {what}, got {len(value)}")
        return list(value)
    return [value] * n


def _set_momentum(group, value, use_beta1):
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class ReduceLROnPlateau:
    """Divide the learning rate by ``1 / factor`` when ``metrics`` (passed to ``step``) has not
    improved for ``patience`` epochs (PyTorch's ``ReduceLROnPlateau``).

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

    def get_last_lr(self) -> list:
        return list(self._last_lr)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
