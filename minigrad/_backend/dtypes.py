"""dtype aliases and dtype rules shared by every layer.

dtypes are plain ``numpy.dtype`` objects, so ``t.dtype == mg.float16`` and ``t.dtype == "float16"``
both work. bfloat16 comes from ``ml_dtypes`` (NumPy has none of its own; CuPy 14 accepts it too).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)

_FLOATS = (float16, bfloat16, float32, float64)
_LOW = (float16, bfloat16)
_BY_NAME = {
    "float16": float16, "half": float16, "fp16": float16,
    "bfloat16": bfloat16, "bf16": bfloat16,
    "float32": float32, "float": float32, "fp32": float32,
    "float64": float64, "double": float64,
    "int8": int8, "int16": int16, "int32": int32, "int64": int64, "long": int64,
    "uint8": uint8, "bool": bool_,
}


def normalize_dtype(dtype) -> np.dtype | None:
    """Turn a dtype spelling (``"float16"``, ``mg.bfloat16``, ``np.float32``) into a numpy dtype."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        try:
            return _BY_NAME[dtype]
        except KeyError:
            raise TypeError(
                f"unknown dtype {dtype!r}: use one of {sorted(_BY_NAME)}") from None
    return np.dtype(dtype)


def is_floating(dtype) -> bool:
    """True for float16/bfloat16/float32/float64 (bfloat16's numpy kind is not 'f')."""
    return dtype in _FLOATS


def is_numeric(dtype) -> bool:
    """bool, integer or floating (bfloat16 included): what a tensor may hold."""
    return np.dtype(dtype).kind in "biuf" or is_floating(dtype)


def is_low_precision(dtype) -> bool:
    """True for the two AMP dtypes, float16 and bfloat16."""
    return dtype in _LOW


def acc_dtype(dtype) -> np.dtype:
    """The accumulation dtype (invariant 3): float64 stays, every other dtype float32. Ops,
    fused kernels and optimizer state all use this one rule."""
    return float64 if dtype == float64 else float32


def widest_float(dtypes) -> np.dtype:
    """The widest floating dtype among ``dtypes``; float16 with bfloat16 widens to float32."""
    widest = None
    for d in dtypes:
        if d not in _FLOATS or d == widest:
            continue
        if widest is None:
            widest = d
        elif d.itemsize > widest.itemsize:
            widest = d
        elif d.itemsize == widest.itemsize:  # float16 vs bfloat16: neither holds the other
            widest = float32
    return widest


def finfo(dtype):
    """``numpy.finfo`` that also understands bfloat16."""
    return ml_dtypes.finfo(normalize_dtype(dtype))


# ----------------------------------------------------------------------------- default dtype
# The default dtype of each category, indexed by ``category()``: bool, int64 and the default
# floating dtype, float32 unless ``set_default_dtype`` changed it. This list is the ONE place the
# default float lives: every creation function, ``tensor(1.5)``, the layers' parameters and the
# promotion rule below read ``_CATEGORY_DEFAULT[2]``. It is module state here, not a ContextVar in
# ``minigrad.core.modes``, because (a) the promotion rule of this floor needs it and
# ``minigrad._backend`` cannot import upward, and (b) PyTorch's default dtype is one setting for
# the whole process, not a scoped mode: a ContextVar set in the main thread would not be seen by
# threads started later (a data loader's workers would make float32 again). It is a mutable
# one-item slot so readers index it instead of copying a module global that later goes stale.
_CATEGORY_DEFAULT = [bool_, int64, float32]


def get_default_dtype() -> np.dtype:
    """The default floating dtype: float32 unless :func:`set_default_dtype` changed it.

    It is the dtype of ``tensor(1.5)`` and of lists of Python floats, of ``zeros``/``ones``/
    ``empty``/``rand``/``randn``/``normal``/``uniform``/``linspace``/``eye`` and float
    ``full``/``arange`` without ``dtype=``, of new layers' parameters, and of an integer tensor
    promoted with a Python float (``int64 tensor * 1.5``) or by a float-only op (true division).

    Example:
        >>> import minigrad as mg
        >>> mg.get_default_dtype()
        dtype('float32')
    """
    return _CATEGORY_DEFAULT[2]


def set_default_dtype(dtype) -> None:
    """Set the default floating dtype (PyTorch's ``torch.set_default_dtype``).

    It is one setting for the whole process (every thread), like PyTorch's; restore the old
    value yourself (``old = mg.get_default_dtype()`` ... ``mg.set_default_dtype(old)``). Tensors
    that already exist keep their dtype, ``*_like`` functions follow their input, and autocast
    is unaffected (its float32 ops still run in float32).

    Args:
        dtype: a floating dtype: ``mg.float32`` (the initial default), ``mg.float64``,
            ``mg.float16`` or ``mg.bfloat16`` (PyTorch accepts these four too); names such as
            ``"float64"`` work as everywhere in minigrad.

    Raises:
        TypeError: for a bool, integer or unknown dtype.

    Example:
        >>> import minigrad as mg
        >>> mg.set_default_dtype(mg.float64)
        >>> mg.tensor(1.5).dtype, mg.zeros(2).dtype, mg.tensor([1, 2]).dtype
        (dtype('float64'), dtype('float64'), dtype('int64'))
        >>> mg.set_default_dtype(mg.float32)
    """
    try:
        d = normalize_dtype(dtype)
    except (TypeError, ValueError):
        d = None
    # ``d is None`` first: NumPy reads a None dtype as float64, so ``None in _FLOATS`` is True.
    if d is None or d not in _FLOATS:
        raise TypeError(
            f"set_default_dtype: only floating-point dtypes can be the default, got {dtype!r}; "
            "use mg.float32, mg.float64, mg.float16 or mg.bfloat16 (pass dtype= to a creation "
            "function for an integer or bool tensor)")
    _CATEGORY_DEFAULT[2] = d


# ----------------------------------------------------------------------------- promotion
# PyTorch's type-promotion lattice, as data. Operands are ranked by category (bool < integer <
# floating); within a category the tensors' dtypes combine (NumPy's integer rules agree with
# PyTorch's; floats combine by ``widest_float``). Across categories the higher one wins *with its
# own dtype* (int64 with float16 -> float16, never NumPy's float64). A Python scalar only
# counts when its category is above every tensor's: then the result is the default dtype of
# that category (2.5 with an int tensor -> the default float, float32 unless changed; 1 with a
# bool tensor -> int64).
_CATEGORY = {bool_: 0, uint8: 1, int8: 1, int16: 1, int32: 1, int64: 1,
             float16: 2, bfloat16: 2, float32: 2, float64: 2}
_SCALAR_CATEGORY = {bool: 0, int: 1, float: 2}


def category(dtype) -> int:
    """0 for bool, 1 for integers, 2 for floats (KeyError for other dtypes)."""
    return _CATEGORY[dtype]


def _promote_all(dtypes):
    """The promotion of ``dtypes`` within and across categories (None for none)."""
    dtypes = list(dtypes)
    if not dtypes:
        return None
    res = widest_float(dtypes)
    return np.result_type(*dtypes) if res is None else res


def _combine(higher, lower):
    """PyTorch's ``combine_categories``: ``higher`` (the stronger participants' dtype) wins
    unless ``lower`` is of a higher category, which then promotes with it."""
    if higher is None:
        return lower
    if lower is None or higher in _FLOATS:
        return higher
    if higher == bool_ or lower in _FLOATS:
        return _promote_all([higher, lower])
    return higher


def result_type(tensor_dtypes, scalar_types=(), zero_dim_dtypes=()) -> np.dtype:
    """The dtype PyTorch gives a binary/n-ary op on tensors of ``tensor_dtypes``, 0-d tensors
    of ``zero_dim_dtypes`` (listed apart only when dimensioned tensors are there too) and
    Python scalars of ``scalar_types`` (``int``, ``float``, ``bool``). Categories rank
    bool < integer < float; within one, dimensioned tensors decide over 0-d tensors, which
    decide over scalars (``float32[2] + float64 0-d -> float32``, ``int32[2] + int64 0-d ->
    int32``, ``int64[2] + float64 0-d -> float64``).

    Example:
        >>> result_type([int64, float16]), result_type([int64], [float])
        (dtype('float16'), dtype('float32'))
        >>> result_type([float16], [float]), result_type([float16], (), [float32])
        (dtype('float16'), dtype('float16'))
    """
    wrapped = None
    for s in scalar_types:
        c = _SCALAR_CATEGORY.get(s, 2)
        if wrapped is None or c > _CATEGORY[wrapped]:
            wrapped = _CATEGORY_DEFAULT[c]
    res = _combine(_promote_all(tensor_dtypes),
                   _combine(_promote_all(zero_dim_dtypes), wrapped))
    return res if res is not None else _CATEGORY_DEFAULT[2]


def float_result_type(tensor_dtypes, scalar_types=(), zero_dim_dtypes=()) -> np.dtype:
    """``result_type`` for ops defined on floats only (exp, true division): a bool or integer
    result becomes the default float dtype (PyTorch's ``exp(int64) -> float32`` unless
    ``set_default_dtype`` changed it)."""
    res = result_type(tensor_dtypes, scalar_types, zero_dim_dtypes)
    return res if res in _FLOATS else _CATEGORY_DEFAULT[2]
