"""MindSpore's ``mindspore.common`` as ``minigrad.common``: ``common.dtype`` (``mstype``, also
``minigrad.dtype``), ``common.initializer``, ``set_seed``, ``Tensor`` and ``Parameter``."""

from __future__ import annotations

import types

from ..._backend import dtypes as _dt
from ...core.tensor import Parameter, Tensor
from . import initializer
from .context import set_seed

__all__ = ["common", "dtype"]

dtype = types.ModuleType("minigrad.common.dtype", "MindSpore's dtypes (``mstype``).")
for _name, _value in (("float16", _dt.float16), ("float32", _dt.float32),
                      ("float64", _dt.float64), ("bfloat16", _dt.bfloat16),
                      ("int8", _dt.int8), ("int16", _dt.int16), ("int32", _dt.int32),
                      ("int64", _dt.int64), ("uint8", _dt.uint8), ("bool_", _dt.bool_)):
    setattr(dtype, _name, _value)
# MindSpore's short spellings
dtype.float_, dtype.half, dtype.single, dtype.double = (_dt.float32, _dt.float16, _dt.float32,
                                                         _dt.float64)
dtype.int_, dtype.bool = _dt.int32, _dt.bool_
del _name, _value

common = types.ModuleType("minigrad.common", __doc__)
common.dtype, common.initializer, common.set_seed = dtype, initializer, set_seed
common.Tensor, common.Parameter = Tensor, Parameter
common.__all__ = ["Parameter", "Tensor", "dtype", "initializer", "set_seed"]
