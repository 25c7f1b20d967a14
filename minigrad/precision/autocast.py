"""The autocast policy: what ``Function.apply`` asks, in an autocast region, for each op's dtype.

A region (``minigrad.amp.autocast``) keeps its settings in ``modes.autocast_state``
(``RegionState``) and its ``AutocastPolicy`` in ``modes.dispatch_policy``, which
``Function.apply`` consults for every op. Both are set with tokens and reset on exit (also on
exceptions), so regions nest, are per-thread, and ``autocast(enabled=False)`` inside an enabled
region installs ``None`` -- really off.

The backward engine clears ``dispatch_policy`` while it runs, so backward replays the dtypes each
node recorded in forward (invariant 5) whether it runs inside or outside the region.

Weight-cast cache: inside the outermost region each float32 leaf tensor that requires grad
(a Parameter) is cast once per dtype and the cast node is shared by every op that needs it. An
entry is keyed by ``(id(tensor), dtype)`` and keeps a strong reference to the tensor (so the id
cannot be reused while cached). A hit is served only when the tensor's ``_version`` and data
buffer are unchanged, when grad mode is on only while the cast is a recorded node whose graph
was not freed by a backward (a cast made under ``no_grad`` is never served to a recorded op), and
when the cached cast still equals a cast of the current data: a raw write through
``p._data[...] = v`` bumps no version counter, and no check cheaper than reading every element
can see it. That check costs about one cast, so a hit saves graph nodes and memory (one low
precision copy and one gradient cast-back per parameter and region) rather than arithmetic. On
the GPU the comparison would need a host synchronisation (invariant 11), so a repeat use there
casts afresh instead. The cache is cleared when the outermost region exits.
"""

from __future__ import annotations

import copy
import functools
import warnings

import numpy as np

from .._backend import casts
from .._backend.dtypes import bfloat16, float16, float32, float64, normalize_dtype, widest_float
from ..core.function import Cast
from ..core.modes import autocast_state as _state
from ..core.modes import dispatch_policy, grad_enabled
from ..core.tensor import Tensor
from . import policy as _policy
from .policy import Category

__all__ = ["AutocastPolicy", "RegionState", "captured_state", "get_autocast_dtype",
           "is_autocast_enabled", "make_policy", "replay_state"]

_FLOATS = frozenset({float16, bfloat16, float32})  # float64 is an explicit user choice: left alone
_ALL_FLOATS = (float16, bfloat16, float32, float64)
_PROMOTABLE = {d: frozenset(_ALL_FLOATS) - {d} for d in _ALL_FLOATS}
# The categories the fast path compares by identity (module globals: one cached load each).
_LOWER, _FP32, _PROMOTE, _LOWER_INPUT, _FP32_WARN = (
    Category.LOWER, Category.FP32, Category.PROMOTE, Category.LOWER_INPUT, Category.FP32_WARN)
_PROMOTE_REASON = {d: f"autocast:{_PROMOTE}({d})" for d in _ALL_FLOATS}
_R_FP32_WARN = f"autocast:{_FP32_WARN}({float32})"


class RegionState:
    """Settings of the innermost region; ``cache`` is the outermost enabled region's cache and
    ``fp32_ops``/``lower_ops`` the region overrides in force (inherited by nested regions)."""

    __slots__ = ("cache", "dtype", "enabled", "fp32_ops", "high", "lower_ops")

    def __init__(self, enabled, dtype, high, cache, fp32_ops=(), lower_ops=()):
        self.enabled = enabled
        self.dtype = dtype
        self.high = high
        self.cache = cache
        self.fp32_ops = fp32_ops
        self.lower_ops = lower_ops


def _inherit(outer, fp32_ops, lower_ops):
    """Overrides of a nested region: the outer region's, with this region's winning."""
    if outer is None or not (outer.fp32_ops or outer.lower_ops):
        return fp32_ops, lower_ops
    f = (set(outer.fp32_ops) - set(lower_ops)) | set(fp32_ops)
    lo = (set(outer.lower_ops) - set(fp32_ops)) | set(lower_ops)
    return tuple(sorted(f)), tuple(sorted(lo))


_bce_warned = [False]


def is_autocast_enabled(device_type=None) -> bool:
    """Whether ops issued here run under an enabled autocast region (or ``amp.enabled``).

    ``device_type`` (PyTorch's argument) is checked; minigrad's regions cover every device.
    """
    _device_type(device_type)
    st = _state.get()
    return st is not None and st.enabled


def get_autocast_dtype(device_type=None):
    """The low-precision dtype of the innermost region.

    Outside any region: PyTorch's default for ``device_type`` (bfloat16 on ``"cpu"``, float16
    on ``"cuda"``), float16 without one.
    """
    kind = _device_type(device_type)
    st = _state.get()
    if st is None:
        return _DEVICE_DTYPE.get(kind, float16)
    return st.dtype


@functools.lru_cache(maxsize=16)
def _reasons(low, high) -> tuple:
    """The ``amp_reason`` strings of the casting categories (built once: formatting a NumPy
    dtype costs microseconds, and a policy is made for every region)."""
    return (f"autocast:{_LOWER}({low})", f"autocast:{_FP32}({high})",
            f"autocast:{_LOWER_INPUT}({low}, params {high})")


class AutocastPolicy:
    """The object installed in ``dispatch_policy``; ``cast_inputs`` is on every op's hot path.

    ``categories`` is the merged table (global + region overrides, ``policy.merged_table``): op
    name -> ``Category``, pass-through rows omitted, computed once per region, so a pass-through
    op costs one dict lookup and the others one to five identity comparisons.
    """

    __slots__ = (
        "_high_set",
        "_low_set",
        "_r_high",
        "_r_lin",
        "_r_low",
        "cache",
        "categories",
        "high",
        "low",
    )

    def __init__(self, categories: dict, low, high, cache):
        self.categories = categories
        self.low = low
        self.high = high
        self.cache = cache
        self._low_set = _FLOATS - {low}     # dtypes the LOWER category casts down
        self._high_set = _FLOATS - {high}   # dtypes the FP32 category casts up
        self._r_low, self._r_high, self._r_lin = _reasons(low, high)

    def cast_inputs(self, fn_cls, inputs):
        """Return ``(inputs, compute_dtype, reason)`` for op ``fn_cls`` per the table."""
        cat = self.categories.get(fn_cls.name)
        if cat is None:
            return inputs, None, None
        if cat is _LOWER:
            return self._cast_all(inputs, self.low, self._low_set), self.low, self._r_low
        if cat is _FP32:
            return self._cast_all(inputs, self.high, self._high_set), self.high, self._r_high
        if cat is _PROMOTE:
            return self._promote(inputs)
        if cat is _LOWER_INPUT:
            return self._lower_input(inputs), self.low, self._r_lin
        _warn_bce(fn_cls.name)  # FP32_WARN, the one category left
        return self._cast_all(inputs, self.high, self._high_set), self.high, _R_FP32_WARN

    def _cast_all(self, inputs, target, castable):
        out = None
        for i, x in enumerate(inputs):
            if isinstance(x, Tensor) and x._data.dtype in castable:
                if out is None:
                    out = list(inputs)
                out[i] = self._cast(x, target)
        return inputs if out is None else tuple(out)

    def _promote(self, inputs):
        first = None
        for x in inputs:
            if isinstance(x, Tensor):
                d = x._data.dtype
                if first is None:
                    first = d
                elif d is not first and d != first:
                    break
        else:  # zero or one tensor, or all of one dtype: nothing to promote
            return inputs, first, None
        target = widest_float([x._data.dtype for x in inputs if isinstance(x, Tensor)])
        if target is None:
            return inputs, None, None
        return (self._cast_all(inputs, target, _PROMOTABLE[target]), target,
                _PROMOTE_REASON[target])

    def _lower_input(self, inputs):
        out = list(inputs)
        for i, x in enumerate(inputs):
            if isinstance(x, Tensor):
                if i == 0:
                    if x._data.dtype in self._low_set:
                        out[0] = self._cast(x, self.low)
                elif x._data.dtype in self._high_set:
                    out[i] = self._cast(x, self.high)
        return tuple(out)

    def _cast(self, x, target):
        cache = self.cache
        if cache is None or x.creator is not None or not x.requires_grad \
                or x._data.dtype != float32:
            return Cast.float_cast(x, target)
        key = (id(x), target)
        entry = cache.get(key)
        if entry is not None:
            src, version, data, out = entry
            if src is x and version == x._version and data is x._data \
                    and (not grad_enabled.get()
                         or (out.creator is not None and out.creator.inputs is not None)) \
                    and _same_cast(data, out._data):
                return out
        out = Cast.float_cast(x, target)
        cache[key] = (x, x._version, x._data, out)
        return out


def _same_cast(src, cached) -> bool:
    """Whether ``cached`` still is the cast of ``src`` (a raw ``p._data`` write leaves no trace).

    Compared bitwise, so NaN payloads and signed zeros count. GPU arrays answer False: comparing
    would wait on the device (invariant 11), so the GPU recasts on every repeat use.
    """
    if type(src) is not np.ndarray:
        return False
    bits = np.dtype(f"u{cached.dtype.itemsize}")
    return bool(np.array_equal(casts.astype(src, cached.dtype).view(bits), cached.view(bits)))


def _warn_bce(name):
    if not _bce_warned[0]:
        _bce_warned[0] = True
        warnings.warn(
            f"{name} on probabilities is unsafe in float16 (log of values rounded to 0 or 1); "
            "autocast runs it in float32. Prefer binary_cross_entropy_with_logits, which is "
            "numerically stable and also autocasts to float32.", UserWarning, stacklevel=4)


_DEVICE_DTYPE = {"cpu": bfloat16, "cuda": float16}  # PyTorch's defaults per device type


def _device_type(device_type):
    if device_type is None:
        return None
    if not isinstance(device_type, str):
        raise TypeError(f"autocast: device_type must be a str ('cpu' or 'cuda'), got "
                        f"{type(device_type).__name__}")
    kind = device_type.split(":", 1)[0]
    if kind not in _DEVICE_DTYPE:
        raise ValueError(f"autocast: unsupported device_type {device_type!r}; minigrad has "
                         "'cpu' and 'cuda'")
    return kind


def _low_dtype(dtype):
    d = normalize_dtype(dtype)
    if d not in (float16, bfloat16):
        raise ValueError(f"autocast: dtype must be 'float16' or 'bfloat16', got {dtype!r} "
                         "(any dtype is accepted with enabled=False)")
    return d


def _high_dtype(dtype):
    # MegEngine passes high_prec_dtype through unchecked; any floating dtype is meaningful here
    # (float16 runs the "fp32" category in half precision, as MegEngine would).
    d = normalize_dtype(dtype)
    if d not in _ALL_FLOATS:
        raise ValueError(f"autocast: high_prec_dtype must be a floating dtype ('float32', "
                         f"'float64', 'float16', 'bfloat16'), got {dtype!r}")
    return d


def _op_names(names, what):
    if isinstance(names, str):
        names = (names,)
    names = tuple(sorted(names))
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"autocast: {what} must be op names (strings), got {n!r}")
        if n in _policy._NEVER_CAST:
            raise ValueError(f"autocast: {what} cannot contain {n!r}: autocast inserts that "
                             "op itself")
        _policy.check_op_name(n, f"autocast({what}=...)")
    return names


def make_policy(dtype, high, cache, fp32_ops=(), lower_ops=()) -> AutocastPolicy:
    """An ``AutocastPolicy`` over the current table (used by regions and the global switch)."""
    return AutocastPolicy(_policy.merged_table(fp32_ops, lower_ops), dtype, high, cache)


# ----------------------------------------------------------------- replaying a region's state
def captured_state() -> tuple:
    """``(autocast state, dispatch policy)`` in force, for replaying later (checkpoint
    recompute, ``custom_bwd``)."""
    return _state.get(), dispatch_policy.get()


class replay_state:
    """Context manager that reinstalls a ``captured_state()``, with a fresh weight-cast cache.

    The captured region may have exited (its cache cleared); a fresh cache scoped to the replay
    keeps its casts from outliving it. ``wrap`` (optional) maps the replayed policy to the one
    installed, e.g. to substitute inputs during a checkpoint recompute.
    """

    def __init__(self, captured, wrap=None):
        self.state, self.policy = captured
        self.wrap = wrap

    def __enter__(self):
        st, pol = self.state, self.policy
        if getattr(pol, "cache", None) is not None:
            cache = {}
            pol = copy.copy(pol)
            pol.cache = cache
            st = RegionState(st.enabled, st.dtype, st.high, cache, st.fp32_ops, st.lower_ops) \
                if st is not None else None
        if self.wrap is not None:
            pol = self.wrap(pol)
        self._tokens = (_state.set(st), dispatch_policy.set(pol))
        return self

    def __exit__(self, *exc):
        state_token, policy_token = self._tokens
        dispatch_policy.reset(policy_token)
        _state.reset(state_token)
        return False
