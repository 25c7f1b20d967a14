"""MindSpore/Apex optimisation levels: ``build_train_network`` and the loss-scale managers.

``build_train_network(network, optimizer, loss_fn=None, level)`` returns a one-step training
cell (``nn.TrainOneStepWithLossScaleCell``): ``loss = step(data, label)`` runs the forward, the
loss, the scaled backward, the overflow check, the update (skipped on overflow when the manager
drops overflowed updates) and the scale update. Levels (AMP_REFERENCE section 2):

====== ============================================ ================ =========================
level  network                                      weights          loss scaling (default)
====== ============================================ ================ =========================
O0     float32                                      float32          none (scale 1, no skip)
O1     float32 under ``autocast`` (op policy table) float32          DynamicLossScaleManager
O2     float16 (``to_float``), BatchNorm float32    fp16 + fp32      DynamicLossScaleManager
                                                    master copies
O3     float16 everywhere, BatchNorm too            fp16 + fp32      none (scale 1, no skip)
                                                    master copies
auto   O2 when the model is on a GPU, else O1
====== ============================================ ================ =========================

The loss itself is computed in float32 at every level: with a ``WithLossCell`` (or ``loss_fn``)
the loss module runs in float32 while the backbone runs in float16 -- a float16 loss would round
away exactly the small differences training is made of. O1 differs from MindSpore, which applies
no scaling by default at O1: float16 autocast without a scaler flushes small gradients to zero.

The managers are thin MindSpore-named fronts over ``GradScaler``: ``DynamicLossScaleManager``
is ``GradScaler(init_loss_scale, scale_factor, 1/scale_factor, scale_window, min_scale=1)``
(``scale = max(scale / factor, 1)`` on overflow, ``scale *= factor`` after ``scale_window`` clean
steps), ``FixedLossScaleManager`` a ``StaticGradScaler``. The overflow check, the skip (params
and optimizer state unchanged) and the telemetry are the scaler's.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _backend as B
from .._backend.dtypes import float16, float32, is_floating
from ..nn.cells import TrainOneStepWithLossScaleCell, WithLossCell
from ..nn.module import Module
from ..nn.norm import BatchNorm1d, BatchNorm2d
from ..tensor import Tensor
from . import module_precision  # noqa: F401 - registers the per-module precision policy
from .autocast import autocast
from .grad_scaler import GradScaler, StaticGradScaler
from .master_weights import MasterWeightOptimizer, master_weights

__all__ = ["DynamicLossScaleManager", "FixedLossScaleManager", "LossScaleManager",
           "build_train_network"]

_BN = (BatchNorm1d, BatchNorm2d)


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
        self.scaler._free_found.append(bool(overflow))
        self.scaler.update()

    def train_step(self, forward, optimizer, sens=None):
        """Run ``forward()`` (returning the loss), scaled backward, check, update.

        Args:
            forward: a callable returning the loss Tensor.
            optimizer: the optimizer to step.
            sens: a scale to use for this step instead of the manager's (MindSpore's per-call
                ``scaling_sens``); the manager's own scale is still updated by its rule.

        Returns:
            ``(loss, overflow)``.
        """
        scaler = self.scaler
        saved = None
        if sens is not None:
            s = float(sens.numpy().reshape(-1)[0]) if isinstance(sens, Tensor) else float(sens)
            if not s > 0 or not math.isfinite(s):
                raise ValueError(f"train step: scaling_sens must be finite and > 0, got {s}")
            saved, scaler._scale = scaler._scale, s
        try:
            loss = forward()
            if not isinstance(loss, Tensor) or loss.size != 1:
                what = f"shape {loss.shape}" if isinstance(loss, Tensor) else type(loss).__name__
                raise TypeError(f"train step: the network must return the loss (a one-element "
                                f"Tensor), got {what}; wrap the model with nn.WithLossCell(net, "
                                "loss_fn) or pass loss_fn to build_train_network")
            # A too-high scale overflowing in float16 is expected and handled (the step is
            # skipped, the scale backs off): no NumPy RuntimeWarning for it.
            with np.errstate(over="ignore", invalid="ignore"):
                scaler.scale(loss).backward()
            if self.drop_overflow_update:
                scaler.step(optimizer)    # skipped on inf/NaN: params and state unchanged
            else:
                scaler.unscale_(optimizer)
                optimizer.step()          # applied even when it overflowed (MindSpore semantics)
        finally:
            if saved is not None:
                scaler._scale = saved
        scaler.update()
        optimizer.zero_grad()
        return loss, scaler.last_step_skipped

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
        if scale_factor <= 1:
            raise ValueError(f"DynamicLossScaleManager: scale_factor must be > 1, got "
                             f"{scale_factor}")
        if scale_window < 1:
            raise ValueError(f"DynamicLossScaleManager: scale_window must be >= 1, got "
                             f"{scale_window}")
        self.scale_factor = scale_factor
        self.scale_window = int(scale_window)
        self.scaler = GradScaler(init_scale=init_loss_scale, growth_factor=scale_factor,
                                 backoff_factor=1.0 / scale_factor,
                                 growth_interval=int(scale_window), min_scale=1.0)


class FixedLossScaleManager(LossScaleManager):
    """MindSpore's fixed loss scale.

    Args:
        loss_scale: the scale (never changes).
        drop_overflow_update: skip updates whose gradients overflowed (else apply them).
    """

    def __init__(self, loss_scale: float = 128.0, drop_overflow_update: bool = True):
        self.scaler = StaticGradScaler(float(loss_scale))
        self.drop_overflow_update = bool(drop_overflow_update)


def _as_manager(scale_sense) -> LossScaleManager:
    """A manager from ``TrainOneStepWithLossScaleCell``'s ``scale_sense`` argument."""
    if scale_sense is None:
        return FixedLossScaleManager(1.0, drop_overflow_update=True)
    if isinstance(scale_sense, LossScaleManager):
        return scale_sense
    if isinstance(scale_sense, Tensor):
        return FixedLossScaleManager(float(scale_sense.numpy().reshape(-1)[0]), True)
    if isinstance(scale_sense, (int, float)):
        return FixedLossScaleManager(float(scale_sense), True)
    raise TypeError(f"scale_sense must be None, a Tensor, a number or a loss-scale manager, "
                    f"got {type(scale_sense).__name__}")


def _with_masters(optimizer):
    """Wrap ``optimizer`` in fp32 master weights if it holds low-precision parameters."""
    if isinstance(optimizer, MasterWeightOptimizer):
        return optimizer
    low = any(p.dtype in (B.float16, B.bfloat16) for g in optimizer.param_groups
              for p in g["params"])
    return master_weights(optimizer) if low else optimizer


# ---------------------------------------------------------------------------- O-levels
_LEVELS = {
    # level: (cast model to float16, keep BatchNorm float32, autocast, default manager)
    "O0": (False, False, False, lambda: FixedLossScaleManager(1.0, False)),
    "O1": (False, False, True, DynamicLossScaleManager),
    "O2": (True, True, False, DynamicLossScaleManager),
    "O3": (True, False, False, lambda: FixedLossScaleManager(1.0, False)),
}


def _resolve_level(level, network) -> str:
    if level == "auto":
        on_gpu = any(p.device != "cpu" for p in network.parameters())
        return "O2" if on_gpu else "O1"
    if level not in _LEVELS:
        raise ValueError(f"build_train_network: level must be one of {sorted(_LEVELS)} or "
                         f"'auto', got {level!r}")
    return level


def _cast_model(backbone: Module, dtype, keep_batchnorm_fp32: bool) -> dict:
    """Cast floating parameters/buffers to ``dtype`` in place, module by module. Skipped:
    BatchNorm layers when kept in float32, and sub-modules the user pinned to float32 with
    ``to_float``/``add_flags_recursive(fp32=True)`` (their own setting wins, so they compute in
    float32 and keep float32 weights). Returns ``{param: its previous float32 array}``."""
    pinned = set()
    for m in backbone.modules():
        if m is not backbone and m._precision_explicit and m._compute_dtype == float32:
            pinned.update(id(x) for x in m.modules())
    before = {}
    for m in backbone.modules():
        if id(m) in pinned or (keep_batchnorm_fp32 and isinstance(m, _BN)):
            continue
        for reg in (m._parameters, m._buffers):
            for t in reg.values():
                if t is None or not is_floating(t.dtype) or t.dtype == dtype \
                        or t.dtype == B.float64:
                    continue
                if reg is m._parameters:
                    before[t] = t.data
                t.data = t.data.astype(dtype)
                t._version += 1
                t.grad = None
    return before


def build_train_network(network, optimizer, loss_fn=None, level="O0", *,
                        keep_batchnorm_fp32=None, loss_scale_manager=None):
    """Build a one-step training cell at a MindSpore/Apex optimisation level.

    Args:
        network: the model, or a ``WithLossCell`` (or any module returning the loss) when
            ``loss_fn`` is None.
        optimizer: an optimizer over the model's parameters (created before this call; at
            O2/O3 it is wrapped with fp32 master weights).
        loss_fn: loss module or function ``loss_fn(output, label)``; None when ``network``
            already returns the loss.
        level: ``"O0"``, ``"O1"``, ``"O2"``, ``"O3"`` or ``"auto"`` (see the module docstring).
        keep_batchnorm_fp32: override the level's choice of BatchNorm precision (O2/O3).
        loss_scale_manager: a ``DynamicLossScaleManager``/``FixedLossScaleManager`` instead of
            the level's default.

    Returns:
        An ``nn.TrainOneStepWithLossScaleCell``: ``loss = step(*inputs, label)`` (an extra
        trailing ``scaling_sens`` Tensor sets this step's scale); ``step.overflow`` tells whether
        the last step overflowed, ``step.loss_scale`` is the current scale, ``step.optimizer``
        the (possibly master-weight) optimizer.

    Example:
        >>> import minigrad as mg, minigrad.nn as nn
        >>> from minigrad import amp
        >>> from minigrad.optimizer import SGD
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> step = amp.build_train_network(net, SGD(net.parameters(), lr=0.1), nn.MSELoss(),
        ...                                level="O2")
        >>> loss = step(mg.ones(2, 4), mg.zeros(2, 1))   # 2**24 * grad overflows float16
        >>> str(net[0].weight.dtype), str(loss.dtype), step.overflow, step.loss_scale
        ('float16', 'float32', True, 8388608.0)
    """
    level = _resolve_level(level, network)
    cast, keep_bn, use_autocast, default_manager = _LEVELS[level]
    if keep_batchnorm_fp32 is not None:
        keep_bn = bool(keep_batchnorm_fp32)
    if loss_fn is not None:
        backbone = network
        net_with_loss = WithLossCell(network, loss_fn)
    elif isinstance(network, WithLossCell):
        backbone, net_with_loss = network.backbone, network
    else:
        backbone = net_with_loss = network
    if cast:
        before = _cast_model(backbone, float16, keep_bn)
        backbone.to_float(float16)
        if net_with_loss is not backbone:
            # The loss cell computes in float32; the backbone's explicit float16 wins inside it.
            net_with_loss.to_float(float32)
        optimizer = master_weights(optimizer, fp32_values=before)
    manager = loss_scale_manager if loss_scale_manager is not None else default_manager()
    step = TrainOneStepWithLossScaleCell(net_with_loss, optimizer, scale_sense=manager)
    if use_autocast:
        step.autocast = autocast(dtype=float16)
    step.level = level
    return step
