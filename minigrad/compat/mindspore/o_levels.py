"""MindSpore/Apex optimisation levels: ``build_train_network`` and the loss-scale managers.

``build_train_network(network, optimizer, loss_fn=None, level)`` returns a one-step training
cell, as MindSpore does: with loss scaling an ``nn.TrainOneStepWithLossScaleCell``
(``loss, overflow, scale = step(data, label)``), without (O0/O3 by default) an
``nn.TrainOneStepCell`` (``loss = step(data, label)``). A step runs the forward, the loss, the
scaled backward, the overflow check, the update (skipped on overflow) and the scale update.
Levels (AMP_REFERENCE section 2):

====== ============================================ ================ =========================
level  network                                      weights          loss scaling (default)
====== ============================================ ================ =========================
O0     float32                                      float32          none (scale 1)
O1     float32 under ``autocast`` (op policy table) float32          DynamicLossScaleManager
O2     float16 (``to_float``), BatchNorm float32    fp16 + fp32      DynamicLossScaleManager
                                                    master copies
O3     float16 everywhere, BatchNorm too            fp16 + fp32      none (scale 1)
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
and optimizer state unchanged) and the telemetry are the scaler's. Where MindSpore applies an
overflowed update anyway (``FixedLossScaleManager(drop_overflow_update=False)``, and the plain
``TrainOneStepCell`` of O0/O3), minigrad raises ``FloatingPointError`` with the parameters
unchanged instead of writing inf/NaN weights (invariant 9). That ``TrainOneStepCell(sens=S)``
(what ``FixedLossScaleManager(S, drop_overflow_update=False)`` builds) does not unscale, as in
MindSpore: the optimizer gets the gradients of ``S * loss`` and its ``loss_scale=S`` divides
them; the loss-scale cells (dynamic, or fixed dropping overflowed updates) unscale themselves.
"""

from __future__ import annotations



from ... import _backend as B
from ..._backend.dtypes import bfloat16, float16, float32, is_floating, normalize_dtype
from .cells import TrainOneStepCell, TrainOneStepWithLossScaleCell, WithLossCell
from ...nn.module import Module
from ...nn.norm import BatchNorm1d, BatchNorm2d
from ...amp.autocast import autocast
from ...amp.master_weights import master_weights
from .loss_scale import DynamicLossScaleManager

__all__ = ["build_train_network"]

_BN = (BatchNorm1d, BatchNorm2d)

_LEVELS = {
    # level: (model cast dtype, keep BatchNorm float32, autocast, default manager)
    "O0": (float32, False, False, None),
    "O1": (float32, False, True, DynamicLossScaleManager),
    "O2": (float16, True, False, DynamicLossScaleManager),
    "O3": (float16, False, False, None),
}
_BOOST_LEVELS = ("O0", "O1", "O2")


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
                    before[t] = t._data
                t._data = t._data.astype(dtype)
                t._version += 1
                t.grad = None
    return before


def build_train_network(network, optimizer, loss_fn=None, level="O0", boost_level="O0", *,
                        cast_model_type=None, keep_batchnorm_fp32=None, loss_scale_manager=None):
    """Build a one-step training cell at a MindSpore/Apex optimisation level.

    Args:
        network: the model, or a ``WithLossCell`` (or any module returning the loss) when
            ``loss_fn`` is None.
        optimizer: an optimizer over the model's parameters (created before this call; when the
            model is cast it is wrapped with fp32 master weights).
        loss_fn: loss module or function ``loss_fn(output, label)``; None when ``network``
            already returns the loss.
        level: ``"O0"``, ``"O1"``, ``"O2"``, ``"O3"`` or ``"auto"`` (see the module docstring).
        boost_level: MindSpore's ``"O0"``/``"O1"``/``"O2"`` boost modes (Ascend training
            tricks); accepted and validated, a documented no-op in minigrad.
        cast_model_type: ``float16``/``bfloat16`` casts the model to it, ``float32`` keeps it;
            None uses the level's choice.
        keep_batchnorm_fp32: override the level's choice of BatchNorm precision.
        loss_scale_manager: a ``DynamicLossScaleManager``/``FixedLossScaleManager`` instead of
            the level's default.

    Returns:
        As in MindSpore: when the manager has an update cell (a ``DynamicLossScaleManager``, or
        a ``FixedLossScaleManager`` dropping overflowed updates) an
        ``nn.TrainOneStepWithLossScaleCell`` whose call returns ``(loss, overflow, scale)``;
        otherwise (O0/O3 by default) an ``nn.TrainOneStepCell`` whose call returns the loss.
        An extra trailing Tensor in the call is that step's ``scaling_sens``; ``step.overflow``
        tells whether the last step overflowed, ``step.loss_scale`` is the current scale and
        ``step.optimizer`` the (possibly master-weight) optimizer.

    Example:
        >>> import minigrad as mg, minigrad.nn as nn
        >>> from minigrad import amp
        >>> from minigrad.optimizer import SGD
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> step = amp.build_train_network(net, SGD(net.parameters(), lr=0.1), nn.MSELoss(),
        ...                                level="O2")
        >>> loss, overflow, scale = step(mg.ones(2, 4), mg.zeros(2, 1))  # 2**24 overflows fp16
        >>> str(net[0].weight.dtype), str(loss.dtype), bool(overflow), float(scale)
        ('float16', 'float32', True, 8388608.0)
    """
    level = _resolve_level(level, network)
    if boost_level not in _BOOST_LEVELS:
        raise ValueError(f"build_train_network: boost_level must be one of {_BOOST_LEVELS}, got "
                         f"{boost_level!r}")
    cast, keep_bn, use_autocast, default_manager = _LEVELS[level]
    if cast_model_type is not None:
        cast = normalize_dtype(cast_model_type)
        if cast not in (float16, bfloat16, float32):
            raise ValueError(f"build_train_network: cast_model_type must be float16, bfloat16 "
                             f"or float32, got {cast}")
    if keep_batchnorm_fp32 is not None:
        keep_bn = bool(keep_batchnorm_fp32)
    if loss_fn is not None:
        backbone = network
        net_with_loss = WithLossCell(network, loss_fn)
    elif isinstance(network, WithLossCell):
        backbone, net_with_loss = network.backbone, network
    else:
        backbone = net_with_loss = network
    if cast != float32:
        before = _cast_model(backbone, cast, keep_bn)
        backbone.to_float(cast)
        if net_with_loss is not backbone:
            # The loss cell computes in float32; the backbone's explicit setting wins inside it.
            net_with_loss.to_float(float32)
        optimizer = master_weights(optimizer, fp32_values=before)
    manager = loss_scale_manager
    if manager is None and default_manager is not None:
        manager = default_manager()
    if manager is not None and manager.get_update_cell() is not None:
        step = TrainOneStepWithLossScaleCell(net_with_loss, optimizer, scale_sense=manager)
    else:
        sens = manager.get_loss_scale() if manager is not None else 1.0
        step = TrainOneStepCell(net_with_loss, optimizer, sens=sens)
    if use_autocast:
        step.autocast = autocast(dtype=float16)
    step.level = level
    return step
