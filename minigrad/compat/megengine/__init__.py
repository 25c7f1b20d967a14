"""MegEngine's spellings: ``F.nn`` (``minigrad.functional.nn``), the global AMP switch
(``amp.enabled``, ``amp.low_prec_dtype``, ``amp.high_prec_dtype``) and ``amp.convert_*_format``."""

from ... import amp, functional
from .._attach import attach_module, attach_names
from . import amp_switch, functional_nn
from .convert_format import convert_module_format, convert_tensor_format, tensor_format

attach_module("minigrad.functional.nn", functional_nn)
attach_names(amp, convert_module_format=convert_module_format,
             convert_tensor_format=convert_tensor_format, tensor_format=tensor_format)
amp_switch.install(amp)

__all__ = ["amp_switch", "convert_format", "functional_nn"]
del functional  # imported so the attached path's parent exists
