"""Automatic mixed precision: ``autocast`` regions driven by the op policy table, the weight-cast
cache, loss scaling (``GradScaler``, ``StaticGradScaler``), master weights and AMP debugging.

PyTorch style::

    from minigrad import amp
    scaler = amp.GradScaler()
    with amp.autocast():                 # or amp.autocast(dtype="bfloat16")
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()

MegEngine style: ``@amp.autocast()`` on the train step, ``scaler.backward(gm, loss)``, or the
global switch ``amp.enabled = True`` (with ``amp.low_prec_dtype`` / ``amp.high_prec_dtype``),
which turns autocast on in the current context until ``amp.enabled = False``. That switch and
the MindSpore names (``amp.DynamicLossScaler``, ``amp.build_train_network``, ...) are attached by
``minigrad.compat``.

The table lives in :mod:`minigrad.precision.policy` (``amp.policy.get/set/reset/table``).
"""

from ..precision import policy
from ..precision.autocast import get_autocast_dtype, is_autocast_enabled
from .autocast import (
    autocast, clear_autocast_cache, is_autocast_available, set_autocast_enabled,
)
from .custom import custom_bwd, custom_fwd
from .grad_scaler import GradScaler, StaticGradScaler
from .master_weights import master_weights
from .advisor import PolicyAdvice, suggest_policy
from .debug import AmpOverflowError, AmpOverflowWarning, OverflowReport, debug_overflow
from .telemetry import GradStats, grad_stats, plot_scaler, scaler_summary
from .trace import Trace, trace

__all__ = [
    "master_weights",
    "AmpOverflowError",
    "AmpOverflowWarning",
    "GradStats",
    "OverflowReport",
    "PolicyAdvice",
    "Trace",
    "debug_overflow",
    "grad_stats",
    "plot_scaler",
    "scaler_summary",
    "suggest_policy",
    "trace",
    "GradScaler",
    "StaticGradScaler",
    "autocast",
    "clear_autocast_cache",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
    "policy",
    "set_autocast_enabled",
]
