"""Per-module precision: the policy behind ``Module.to_float`` / ``add_flags_recursive``.

MindSpore configures precision per Cell: ``net.add_flags_recursive(fp16=True)`` runs every op of
``net`` in float16, and a child that set ``fp32=True`` itself keeps float32. In minigrad the
setting is data on the module (``_compute_dtype``); this module turns it into behaviour.
``Module.__call__`` asks :func:`precision_policy` for the policy of a module that has a compute
dtype.

Inside such a module every op runs in the module's dtype:

* every floating input (float16/bfloat16/float32; float64 is an explicit user choice and left
  alone) is cast to it, parameters through the autocast weight-cast cache, so a float32 weight is
  cast once per forward however many ops use it;
* ``batch_norm`` (its ``Category.LOWER_INPUT`` row in the policy table) casts only its data
  input: its weight, bias and running statistics keep their own dtype (float32 unless the model
  itself was cast, as O3 does), and it computes statistics in float32;
* reductions still accumulate in float32 (the kernels do that for every dtype, invariant 3);
* the ops autocast inserts itself (``cast``, ``to_device``, ``clone``) are never cast.

Nesting is resolved at call time: a module's policy replaces its caller's for the duration of
its forward (set and reset with a token), so the nearest module with a setting wins.
"""

from __future__ import annotations

from .._backend.dtypes import float32
from ..core.tensor import Tensor
from . import policy as _policy
from .autocast import AutocastPolicy
from .policy import Category

__all__ = ["ModulePrecisionPolicy", "precision_policy"]

_LOWER, _LOWER_INPUT = Category.LOWER, Category.LOWER_INPUT

_table_memo: list = [None, None]  # [policy table version, table]


def _module_table() -> dict:
    """Op name -> Category inside a module with a compute dtype: the policy table's
    ``LOWER_INPUT`` rows, ``PASSTHROUGH`` for the ops never cast; anything not listed (every
    other op, user ops too) is ``LOWER``: all its floating inputs are cast.

    Memoised per version of the policy table (``policy.set`` bumps it).
    """
    if _table_memo[0] == _policy._version:
        return _table_memo[1]
    table = {n: Category.PASSTHROUGH for n in _policy._NEVER_CAST | {"detach"}}
    for name, cat in _policy.table().items():
        if cat is _LOWER_INPUT:
            table[name] = cat
    _table_memo[:] = [_policy._version, table]
    return table


class ModulePrecisionPolicy(AutocastPolicy):
    """Run every op in one dtype (``low``); see the module docstring for the exceptions.

    Reuses ``AutocastPolicy``'s casting and weight-cast cache; only the per-op decision differs
    (autocast consults the category table, a module setting casts everything).
    """

    __slots__ = ()

    def __init__(self, dtype, cache):
        super().__init__(_module_table(), dtype, float32, cache)
        self._r_low = f"module:{dtype}"
        self._r_lin = f"module:{dtype}(data input only)"

    def cast_inputs(self, fn_cls, inputs):
        """Return ``(inputs, compute_dtype, reason)`` for op ``fn_cls``."""
        cat = self.categories.get(fn_cls.name, _LOWER)
        if cat is _LOWER:
            return self._cast_all(inputs, self.low, self._low_set), self.low, self._r_low
        if cat is _LOWER_INPUT:
            x = inputs[0] if inputs else None
            if isinstance(x, Tensor) and x._data.dtype in self._low_set:
                inputs = (self._cast(x, self.low),) + tuple(inputs[1:])
            return inputs, self.low, self._r_lin
        return inputs, None, None  # PASSTHROUGH

    def cast_value(self, x):
        """Cast one floating Tensor (a module's input) to this policy's dtype."""
        if x._data.dtype in self._low_set:
            return self._cast(x, self.low)
        return x


def precision_policy(dtype, current):
    """The factory ``Module.__call__`` uses: a policy for ``dtype`` under policy ``current``.

    Returns:
        ``(policy, owned_cache)``: ``current`` itself when it already is a module policy of
        ``dtype`` (nested layers of one fp16 network cost one ContextVar set); otherwise a new
        policy sharing the caller's weight-cast cache, or owning a fresh one (``owned_cache``,
        cleared by the caller when the outermost such module returns, so each forward casts
        each weight once).
    """
    if type(current) is ModulePrecisionPolicy and current.low == dtype:
        return current, None
    cache = getattr(current, "cache", None)
    owned = None
    if cache is None:
        cache = owned = {}
    return ModulePrecisionPolicy(dtype, cache), owned
