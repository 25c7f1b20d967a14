"""Automatic mixed precision: ``autocast`` regions driven by the op policy table, the weight-cast
cache, and loss scaling (``GradScaler``, ``StaticGradScaler``).

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
which turns autocast on in the current context until ``amp.enabled = False``.

The table lives in :mod:`minigrad.amp.policy` (``amp.policy.get/set/reset/table``).
"""

import sys
import types

from . import policy
from .autocast import (
    _Global, _state, autocast, clear_autocast_cache, get_autocast_dtype, is_autocast_available,
    is_autocast_enabled, set_autocast_enabled,
)
from .custom import custom_bwd, custom_fwd
from .grad_scaler import GradScaler, StaticGradScaler
from .master_weights import master_weights
from .o_levels import DynamicLossScaleManager, FixedLossScaleManager, build_train_network
from .advisor import PolicyAdvice, suggest_policy
from .debug import AmpOverflowError, AmpOverflowWarning, OverflowReport, debug_overflow
from .telemetry import GradStats, grad_stats, plot_scaler, scaler_summary
from .trace import Trace, trace
from .mindspore import (DynamicLossScaler, StaticLossScaler, all_finite, auto_mixed_precision,
                        custom_mixed_precision, get_black_list, get_white_list)
from .megengine import convert_module_format, convert_tensor_format, tensor_format

__all__ = [
    "DynamicLossScaleManager",
    "FixedLossScaleManager",
    "build_train_network",
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
    "enabled",
    "get_autocast_dtype",
    "high_prec_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
    "low_prec_dtype",
    "policy",
    "set_autocast_enabled",
    # MindSpore (amp/mindspore.py)
    "DynamicLossScaler",
    "StaticLossScaler",
    "all_finite",
    "auto_mixed_precision",
    "custom_mixed_precision",
    "get_black_list",
    "get_white_list",
    # MegEngine (amp/megengine.py)
    "convert_module_format",
    "convert_tensor_format",
    "tensor_format",
]


class _AmpModule(types.ModuleType):
    """Module type whose ``enabled``/``low_prec_dtype``/``high_prec_dtype`` act when assigned."""

    @property
    def enabled(self) -> bool:
        """Whether autocast is on in the current context (region or global switch)."""
        return is_autocast_enabled()

    @enabled.setter
    def enabled(self, flag) -> None:
        _Global.set_enabled(bool(flag))

    @property
    def low_prec_dtype(self):
        """dtype of the "lower" ops: the enclosing region's, else the global switch's.

        Assigning sets the global switch's (``"float16"`` or ``"bfloat16"``).
        """
        st = _state.get()
        return _Global.low if st is None else st.dtype

    @low_prec_dtype.setter
    def low_prec_dtype(self, dtype) -> None:
        _Global.set_dtypes(low=dtype)

    @property
    def high_prec_dtype(self):
        """dtype of the "fp32" ops: the enclosing region's, else the global switch's."""
        st = _state.get()
        return _Global.high if st is None else st.high

    @high_prec_dtype.setter
    def high_prec_dtype(self, dtype) -> None:
        _Global.set_dtypes(high=dtype)


sys.modules[__name__].__class__ = _AmpModule
