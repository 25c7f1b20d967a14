"""MindSpore's loss-scale managers and update cells: thin MindSpore-named fronts over
``amp.GradScaler``.

``DynamicLossScaleManager`` is ``GradScaler(init_loss_scale, scale_factor, 1/scale_factor,
scale_window, min_scale=1)`` (``scale = max(scale / factor, 1)`` on overflow, ``scale *= factor``
after ``scale_window`` clean steps), ``FixedLossScaleManager`` a ``StaticGradScaler``. The
overflow check, the skip (params and optimizer state unchanged) and the telemetry are the
scaler's.
"""

from __future__ import annotations

import math

import numpy as np

from ... import _backend as B
from ...amp.grad_scaler import GradScaler, StaticGradScaler
from ...amp.master_weights import MasterWeightOptimizer, master_weights
from ...core.tensor import Tensor

__all__ = ["DynamicLossScaleManager", "DynamicLossScaleUpdateCell", "FixedLossScaleManager",
           "FixedLossScaleUpdateCell", "LossScaleManager", "feed_overflow"]


def _number(value, what: str) -> float:
    """A finite positive float from a number or a one-element Tensor."""
    v = float(value.numpy().reshape(-1)[0]) if isinstance(value, Tensor) else float(value)
    if not v > 0 or not math.isfinite(v):
        raise ValueError(f"{what} must be finite and > 0, got {v}")
    return v


def _checked_loss(loss):
    if not isinstance(loss, Tensor) or loss.size != 1:
        what = f"shape {loss.shape}" if isinstance(loss, Tensor) else type(loss).__name__
        raise TypeError(f"train step: the network must return the loss (a one-element "
                        f"Tensor), got {what}; wrap the model with nn.WithLossCell(net, "
                        "loss_fn) or pass loss_fn to build_train_network")
    return loss


def feed_overflow(scaler: GradScaler, overflow: bool) -> None:
    """End one iteration of ``scaler`` that did (not) overflow, by the scaler's own update rule.

    MindSpore reports the overflow flag itself (``update_loss_scale(overflow)``,
    ``DynamicLossScaler.adjust(grads_finite)``); ``GradScaler`` learns it from the gradients it
    unscales. So the flag goes in through the public API: ``unscale`` of a one-element probe
    whose gradient is inf (overflow) or 0, then ``update()``.
    """
    probe = Tensor._make(np.zeros(1, np.float32), False, None, 0)
    probe.grad = Tensor._make(np.full(1, np.inf if overflow else 0.0, np.float32), False, None, 0)
    scaler.unscale([probe])
    scaler.update()


class LossScaleManager:
    """Base of the loss-scale managers: owns a ``GradScaler`` and runs one scaled step."""

    scaler: GradScaler
    drop_overflow_update = True

    def get_loss_scale(self) -> float:
        """The current loss scale."""
        return self.scaler.get_scale()

    def get_drop_overflow_update(self) -> bool:
        """Whether an update whose gradients overflowed is skipped."""
        return self.drop_overflow_update

    def update_loss_scale(self, overflow: bool) -> None:
        """Apply the update rule for one iteration that did (not) overflow (MindSpore API)."""
        feed_overflow(self.scaler, bool(overflow))

    def get_update_cell(self):
        """MindSpore: the cell that updates the scale (None when nothing is checked)."""
        raise NotImplementedError

    def train_step(self, forward, optimizer, sens=None):
        """Run ``forward()`` (returning the loss), scaled backward, check, update.

        As in MindSpore, a manager that drops overflowed updates (``TrainOneStepWithLossScaleCell``)
        unscales the gradients before the optimizer; one that does not
        (``drop_overflow_update=False``: ``TrainOneStepCell``) hands them over scaled, for the
        optimizer's ``loss_scale`` to divide.

        Args:
            forward: a callable returning the loss Tensor.
            optimizer: the optimizer to step.
            sens: a scale to use for this step instead of the manager's (MindSpore's per-call
                ``scaling_sens``); the step then runs on a ``StaticGradScaler(sens)`` and its
                overflow flag still drives the manager's own rule.

        Returns:
            ``(loss, overflow)``.

        Raises:
            FloatingPointError: the gradients overflowed and ``drop_overflow_update`` is False.
                MindSpore would write the inf/NaN into the weights; minigrad leaves parameters
                and optimizer state unchanged and refuses (invariant 9).
        """
        if not self.drop_overflow_update:
            return self._sens_step(forward, optimizer, sens)
        scaler = self.scaler if sens is None else StaticGradScaler(
            _number(sens, "train step: scaling_sens"))
        loss = _checked_loss(forward())
        # A too-high scale overflowing in float16 is expected and handled (the step is
        # skipped, the scale backs off): no NumPy RuntimeWarning for it.
        with np.errstate(over="ignore", invalid="ignore"):
            scaler.scale(loss).backward()
        scaler.step(optimizer)            # skipped on inf/NaN: params and state unchanged
        scaler.update()
        optimizer.zero_grad()
        overflow = scaler.last_step_skipped
        if scaler is not self.scaler:
            feed_overflow(self.scaler, overflow)
        return loss, overflow

    def _sens_step(self, forward, optimizer, sens):
        """MindSpore's ``TrainOneStepCell(net, opt, sens)`` (what ``drop_overflow_update=False``
        builds): the gradients of ``loss * sens`` reach the optimizer as they are, and the
        optimizer's own ``loss_scale`` divides them (``Momentum(..., loss_scale=sens)``, as
        MindSpore's docs pair them). Unscaling here too would make every update ``sens`` times
        too small. The step is still checked: a scaler of scale 1 (it divides by 1) skips an
        update whose gradients hold inf/NaN, and the step then raises (below)."""
        s = self.get_loss_scale() if sens is None else _number(sens, "train step: sens")
        loss = _checked_loss(forward())
        check = StaticGradScaler(1.0)
        scaled = loss.astype(B.float32) if loss.dtype in (B.float16, B.bfloat16) else loss
        with np.errstate(over="ignore", invalid="ignore"):
            check.scale(scaled * s).backward()
        check.step(optimizer)             # skipped on inf/NaN: params and state unchanged
        check.update()
        optimizer.zero_grad()
        overflow = check.last_step_skipped
        if overflow:
            raise FloatingPointError(
                f"{type(self).__name__}(drop_overflow_update=False): this step's gradients "
                f"contain inf/NaN (loss {float(loss.numpy().reshape(-1)[0]):g}, scale "
                f"{s:g}). MindSpore would write them into the weights; minigrad "
                "refuses and left the parameters and optimizer state unchanged. Use "
                "drop_overflow_update=True to skip such steps, or a DynamicLossScaleManager")
        return loss, overflow

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(loss_scale={self.get_loss_scale():g}, "
                f"drop_overflow_update={self.drop_overflow_update})")


class DynamicLossScaleManager(LossScaleManager):
    """MindSpore's dynamic loss scale.

    Args:
        init_loss_scale: the starting scale.
        scale_factor: divide by it on overflow (never below 1), multiply after
            ``scale_window`` consecutive clean steps.
        scale_window: clean steps between growths.
    """

    def __init__(self, init_loss_scale: float = 2.0 ** 24, scale_factor: float = 2,
                 scale_window: int = 2000):
        name = type(self).__name__
        if scale_factor <= 1:
            raise ValueError(f"{name}: scale_factor must be > 1, got {scale_factor}")
        if scale_window < 1:
            raise ValueError(f"{name}: scale_window must be >= 1, got {scale_window}")
        self.scale_factor = scale_factor
        self.scale_window = int(scale_window)
        self.scaler = GradScaler(init_scale=_number(init_loss_scale, f"{name}: loss scale"),
                                 growth_factor=scale_factor, backoff_factor=1.0 / scale_factor,
                                 growth_interval=int(scale_window), min_scale=1.0)

    def get_update_cell(self) -> "DynamicLossScaleUpdateCell":
        """A ``DynamicLossScaleUpdateCell`` sharing this manager's scale and counter."""
        cell = DynamicLossScaleUpdateCell.__new__(DynamicLossScaleUpdateCell)
        cell.__dict__.update(self.__dict__)
        return cell


class FixedLossScaleManager(LossScaleManager):
    """MindSpore's fixed loss scale.

    Args:
        loss_scale: the scale (never changes).
        drop_overflow_update: True skips updates whose gradients overflowed; False (MindSpore:
            apply them anyway) raises ``FloatingPointError`` instead of writing inf/NaN weights.
    """

    def __init__(self, loss_scale: float = 128.0, drop_overflow_update: bool = True):
        self.scaler = StaticGradScaler(_number(loss_scale, f"{type(self).__name__}: loss scale"))
        self.drop_overflow_update = bool(drop_overflow_update)

    def get_update_cell(self):
        """``FixedLossScaleUpdateCell`` when overflowed updates are dropped, else None (MindSpore
        then builds a plain ``TrainOneStepCell``)."""
        if not self.drop_overflow_update:
            return None
        cell = FixedLossScaleUpdateCell.__new__(FixedLossScaleUpdateCell)
        cell.__dict__.update(self.__dict__)
        return cell


class _UpdateCell:
    """MindSpore's update cells: ``cell(loss_scale, overflow)`` applies the rule for one step
    (writing the new scale into the ``loss_scale`` Tensor when one is given) and returns
    ``overflow``. They are managers too, so ``TrainOneStepWithLossScaleCell(scale_sense=cell)``
    works as in MindSpore."""

    def __call__(self, loss_scale=None, overflow=False):
        flag = bool(overflow.item()) if isinstance(overflow, Tensor) else bool(overflow)
        self.update_loss_scale(flag)
        if isinstance(loss_scale, Tensor):
            loss_scale._data[...] = self.get_loss_scale()
            loss_scale._version += 1
        return overflow

    def get_update_cell(self):
        return self


class DynamicLossScaleUpdateCell(_UpdateCell, DynamicLossScaleManager):
    """MindSpore ``nn.DynamicLossScaleUpdateCell(loss_scale_value, scale_factor, scale_window)``."""

    def __init__(self, loss_scale_value, scale_factor, scale_window):
        super().__init__(loss_scale_value, scale_factor, scale_window)


class FixedLossScaleUpdateCell(_UpdateCell, FixedLossScaleManager):
    """MindSpore ``nn.FixedLossScaleUpdateCell(loss_scale_value)``: the scale never changes."""

    def __init__(self, loss_scale_value):
        super().__init__(loss_scale_value, drop_overflow_update=True)


def _as_manager(scale_sense) -> LossScaleManager:
    """A manager from ``TrainOneStepWithLossScaleCell``'s ``scale_sense`` argument."""
    if scale_sense is None:
        return FixedLossScaleManager(1.0, drop_overflow_update=True)
    if isinstance(scale_sense, LossScaleManager):
        return scale_sense
    if isinstance(scale_sense, (Tensor, int, float)):
        return FixedLossScaleManager(scale_sense, True)
    raise TypeError(f"scale_sense must be None, a Tensor, a number or a loss-scale manager, "
                    f"got {type(scale_sense).__name__}")


def _with_masters(optimizer):
    """Wrap ``optimizer`` in fp32 master weights if it holds low-precision parameters."""
    if isinstance(optimizer, MasterWeightOptimizer):
        return optimizer
    low = any(p.dtype in (B.float16, B.bfloat16) for g in optimizer.param_groups
              for p in g["params"])
    return master_weights(optimizer) if low else optimizer
