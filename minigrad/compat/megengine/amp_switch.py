"""MegEngine's global AMP switch: ``amp.enabled = True`` and ``amp.low_prec_dtype`` /
``amp.high_prec_dtype``, which act when assigned.

A module attribute can act on assignment only through its module's class, so :func:`install`
gives ``minigrad.amp`` a subclass of ``ModuleType`` with these three properties; they call
``amp.autocast``'s ``set_global_*`` functions, the one mechanism behind the switch.
"""

from __future__ import annotations

import types

from ...amp.autocast import global_dtypes, set_global_dtypes, set_global_enabled
from ...precision.autocast import is_autocast_enabled

__all__ = ["install"]


class _AmpModule(types.ModuleType):
    """Module type whose ``enabled``/``low_prec_dtype``/``high_prec_dtype`` act when assigned."""

    @property
    def enabled(self) -> bool:
        """Whether autocast is on in the current context (region or global switch)."""
        return is_autocast_enabled()

    @enabled.setter
    def enabled(self, flag) -> None:
        set_global_enabled(bool(flag))

    @property
    def low_prec_dtype(self):
        """dtype of the "lower" ops: the enclosing region's, else the global switch's.

        Assigning sets the global switch's (``"float16"`` or ``"bfloat16"``).
        """
        return global_dtypes()[0]

    @low_prec_dtype.setter
    def low_prec_dtype(self, dtype) -> None:
        set_global_dtypes(low=dtype)

    @property
    def high_prec_dtype(self):
        """dtype of the "fp32" ops: the enclosing region's, else the global switch's."""
        return global_dtypes()[1]

    @high_prec_dtype.setter
    def high_prec_dtype(self, dtype) -> None:
        set_global_dtypes(high=dtype)


def install(amp_module: types.ModuleType) -> None:
    """Give ``minigrad.amp`` the switch's properties (and list them in its ``__all__``)."""
    amp_module.__class__ = _AmpModule
    amp_module.__all__ = [*amp_module.__all__, "enabled", "high_prec_dtype", "low_prec_dtype"]
