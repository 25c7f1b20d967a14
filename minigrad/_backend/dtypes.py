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


def is_low_precision(dtype) -> bool:
    """True for the two AMP dtypes, float16 and bfloat16."""
    return dtype in _LOW


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
