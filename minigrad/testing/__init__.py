"""Testing helpers: the shared float64 ``gradcheck`` and the op table.

``gradcheck`` / ``gradgradcheck`` check any function's gradients against central differences.
``minigrad.testing.op_table`` is the declarative registry of every public op of
``minigrad.functional`` (samples, error inputs, AMP category, NaN behaviour) that
``tests/test_op_table.py`` runs; it is imported on demand, not here, so importing
``minigrad.testing`` stays cheap.
"""

from ._gradcheck import gradcheck, gradgradcheck

__all__ = ["gradcheck", "gradgradcheck"]
