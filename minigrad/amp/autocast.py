"""``autocast``: regions where ops run in the dtype the policy table chooses.

``with amp.autocast():`` (also a decorator, and PyTorch's ``torch.autocast`` argument order)
sets ``modes.autocast_state`` and ``modes.dispatch_policy`` with tokens on entry and resets them
on exit; the policy itself is ``minigrad.precision.autocast.AutocastPolicy``. The global switch
(MegEngine's ``amp.enabled = True``, PyTorch's ``set_autocast_enabled``) turns the same state on
in the current context until it is switched off.
"""

from __future__ import annotations

import functools

import numpy as np

from .._backend.dtypes import bfloat16, float16, float32, normalize_dtype
from ..core.modes import autocast_state as _state
from ..core.modes import dispatch_policy
from ..precision.autocast import (
    _DEVICE_DTYPE, RegionState, _device_type, _high_dtype, _inherit, _low_dtype, _op_names,
    is_autocast_enabled, make_policy,
)

__all__ = ["autocast", "clear_autocast_cache", "global_dtypes", "is_autocast_available",
           "set_autocast_enabled", "set_global_dtypes", "set_global_enabled"]


_TORCH_ORDER = ("device_type", "dtype", "enabled", "cache_enabled")
_MGE_ORDER = ("enabled", "dtype", "cache_enabled")


def _bind(args, kwargs):
    """Positional arguments in PyTorch's order when the first is a str (or None), else in
    MegEngine's / minigrad's order (``enabled`` first)."""
    order = _TORCH_ORDER if args and (args[0] is None or isinstance(args[0], str)) else _MGE_ORDER
    if len(args) > len(order):
        raise TypeError(f"autocast takes at most {len(order)} positional arguments "
                        f"({', '.join(order)}), got {len(args)}")
    for name, value in zip(order, args):
        if name in kwargs:
            raise TypeError(f"autocast got multiple values for argument {name!r}")
        kwargs[name] = value
    return kwargs


class autocast:
    """Run ops of a region in mixed precision, per the policy table.

    Usable as ``with amp.autocast():`` and as a decorator ``@amp.autocast()``; regions nest.
    Both spellings bind positional arguments: PyTorch's ``autocast("cuda", mg.float16)``
    (``device_type`` first, a str) and MegEngine's ``autocast(True, "float16")`` (``enabled``
    first).

    Args:
        device_type: PyTorch's ``"cpu"`` or ``"cuda"``. It picks the default ``dtype`` (bfloat16
            on the CPU, float16 on CUDA, as in PyTorch); the region applies to ops on every
            device, as every minigrad region does.
        dtype: the low-precision dtype, ``"float16"`` or ``"bfloat16"``; default float16
            (without ``device_type``). With ``enabled=False`` any dtype is accepted and ignored.
        enabled: False makes the region run everything in the inputs' dtypes, even inside an
            enabled region.
        cache_enabled: cast each float32 parameter once per region (see module docstring);
            None means True.
        fp32_ops: op names forced to float32 inside this region only.
        lower_ops: op names forced to the low-precision dtype inside this region only.
        low_prec_dtype: MegEngine's name for ``dtype`` (wins when given).
        high_prec_dtype: dtype of the "fp32" category (MegEngine's name); default float32.

    Example:
        >>> import minigrad as mg
        >>> from minigrad import amp
        >>> a, b = mg.ones(4, 4), mg.ones(4, 4)
        >>> with amp.autocast():
        ...     c = a @ b
        ...     with amp.autocast(enabled=False):
        ...         d = a @ b
        >>> str(c.dtype), str(d.dtype)
        ('float16', 'float32')
        >>> with mg.autocast("cpu"):           # PyTorch: bfloat16 by default on the CPU
        ...     str((a @ b).dtype)
        'bfloat16'
    """

    def __init__(self, *args, fp32_ops=(), lower_ops=(), low_prec_dtype=None,
                 high_prec_dtype=None, **kwargs):
        kw = _bind(args, kwargs)
        unknown = set(kw) - set(_TORCH_ORDER)
        if unknown:
            raise TypeError(f"autocast got unexpected keyword arguments {sorted(unknown)}")
        self.device_type = _device_type(kw.get("device_type"))
        enabled = kw.get("enabled", True)
        if not isinstance(enabled, (bool, int, np.bool_)):
            raise TypeError(f"autocast: enabled must be a bool, got {enabled!r}; pass a dtype "
                            "as dtype=..., or the device type first: autocast('cuda', dtype)")
        self.enabled = bool(enabled)
        dtype = low_prec_dtype if low_prec_dtype is not None else kw.get("dtype")
        if dtype is None:
            dtype = _DEVICE_DTYPE.get(self.device_type, float16)
        if self.enabled:
            self.dtype = _low_dtype(dtype)
        else:  # PyTorch's autocast(dtype=d, enabled=use_amp): d may be anything when off
            d = normalize_dtype(dtype)
            self.dtype = d if d in (float16, bfloat16) else None
        self.high_prec_dtype = _high_dtype(high_prec_dtype if high_prec_dtype is not None
                                           else float32)
        cache_enabled = kw.get("cache_enabled")
        self.cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        self.fp32_ops = _op_names(fp32_ops, "fp32_ops")
        self.lower_ops = _op_names(lower_ops, "lower_ops")
        both = set(self.fp32_ops) & set(self.lower_ops)
        if both:
            raise ValueError(f"autocast: ops {sorted(both)} are in both fp32_ops and lower_ops")
        self._tokens = []

    @property
    def low_prec_dtype(self):
        return self.dtype

    def __enter__(self):
        outer = _state.get()
        outer_cache = outer.cache if outer is not None else None
        fp32_ops, lower_ops = _inherit(outer, self.fp32_ops, self.lower_ops)
        owned = None
        if self.enabled:
            cache = outer_cache
            if cache is None and self.cache_enabled:
                cache = owned = {}
            pol = make_policy(self.dtype, self.high_prec_dtype,
                              cache if self.cache_enabled else None, fp32_ops, lower_ops)
        else:
            pol = None
        dtype = self.dtype
        if dtype is None:  # a disabled region with a non-low dtype keeps the outer one
            dtype = outer.dtype if outer is not None else float16
        st = RegionState(self.enabled, dtype, self.high_prec_dtype,
                    cache if self.enabled else outer_cache, fp32_ops, lower_ops)
        self._tokens.append((_state.set(st), dispatch_policy.set(pol), owned))
        return self

    def __exit__(self, *exc):
        state_token, policy_token, owned = self._tokens.pop()
        dispatch_policy.reset(policy_token)
        _state.reset(state_token)
        if owned is not None:
            owned.clear()
        return False

    def _clone(self) -> autocast:
        new = object.__new__(autocast)
        new.__dict__.update(self.__dict__)
        new._tokens = []
        return new

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast used as a decorator needs a callable, got "
                            f"{type(func).__name__}; use `with amp.autocast(...):` for a region")

        # A fresh region per call keeps the decorator re-entrant (recursion) and thread-safe.
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self._clone():
                return func(*args, **kwargs)
        return wrapper

    def __repr__(self) -> str:
        extra = f", device_type={self.device_type!r}" if self.device_type else ""
        if self.fp32_ops:
            extra += f", fp32_ops={list(self.fp32_ops)}"
        if self.lower_ops:
            extra += f", lower_ops={list(self.lower_ops)}"
        return f"autocast(enabled={self.enabled}, dtype={self.dtype}{extra})"


# ----------------------------------------------------------------- PyTorch's state functions
def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast(device_type)`` is supported: ``"cpu"`` and ``"cuda"``."""
    return isinstance(device_type, str) and device_type.split(":", 1)[0] in _DEVICE_DTYPE


def set_autocast_enabled(*args) -> None:
    """PyTorch's raw switch: ``set_autocast_enabled([device_type,] enabled)``.

    It is the global switch (``amp.enabled``); prefer ``with autocast():``, which restores the
    previous state on exit.
    """
    if len(args) == 2:
        _device_type(args[0])
        args = args[1:]
    if len(args) != 1:
        raise TypeError("set_autocast_enabled([device_type,] enabled) takes 1 or 2 arguments")
    set_global_enabled(bool(args[0]))


def clear_autocast_cache() -> None:
    """Drop every weight cast cached by the enclosing region (PyTorch's name)."""
    st = _state.get()
    if st is not None and st.cache is not None:
        st.cache.clear()


# ----------------------------------------------------------------- the global switch
class _Switch:
    """State of the global switch (MegEngine's ``amp.enabled``, PyTorch's
    ``set_autocast_enabled``): its dtypes, and the tokens of the modes it set, so switching off
    restores what was in force before it was switched on."""

    low = float16
    high = float32
    tokens: list = []


def set_global_enabled(flag: bool) -> None:
    """Turn autocast on (``True``) in the current context until switched off, or off."""
    if flag:
        st = _state.get()
        cache = st.cache if st is not None and st.cache is not None else {}
        _Switch.tokens.append((_state.set(RegionState(True, _Switch.low, _Switch.high, cache)),
                               dispatch_policy.set(make_policy(_Switch.low, _Switch.high, cache))))
        return
    st = _state.get()
    if st is not None and st.cache is not None:
        st.cache.clear()
    restored = False
    while _Switch.tokens:
        state_token, policy_token = _Switch.tokens.pop()
        try:
            dispatch_policy.reset(policy_token)
            _state.reset(state_token)
            restored = True
        except ValueError:  # switched on in another context (thread)
            _Switch.tokens.clear()
            restored = False
    if not restored:  # nothing of the switch's own to undo here: autocast off in this context
        _state.set(None)
        dispatch_policy.set(None)


def set_global_dtypes(low=None, high=None) -> None:
    """Set the global switch's dtypes (``"float16"``/``"bfloat16"``, ``"float32"``)."""
    if low is not None:
        _Switch.low = _low_dtype(low)
    if high is not None:
        _Switch.high = _high_dtype(high)
    if is_autocast_enabled():  # take effect now, as the switch is already on
        set_global_enabled(True)


def global_dtypes() -> tuple:
    """``(low, high)`` dtypes of the enclosing region, else of the global switch."""
    st = _state.get()
    return (_Switch.low, _Switch.high) if st is None else (st.dtype, st.high)
