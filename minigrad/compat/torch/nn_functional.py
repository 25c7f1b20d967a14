"""``minigrad.nn.functional``: PyTorch's ``torch.nn.functional``.

Every op of ``minigrad.functional`` is reachable here under its own name (``relu``,
``cross_entropy``, ``interpolate``...: minigrad's ops follow PyTorch), except where
``minigrad.functional`` keeps another peer's meaning for a shared name; this module then has
PyTorch's:

* ``pad(input, pad, mode="constant", value=None)``: ``pad`` lists ``(left, right)`` pairs from
  the LAST dimension backwards, ``(1, 1)`` pads the last dimension only.
  ``minigrad.functional.pad`` (MegEngine's, NumPy's) takes one pair per axis, and ``(1, 1)``
  pads every axis.

Example:
    >>> import minigrad as mg
    >>> import minigrad.nn.functional as F
    >>> F.pad(mg.ones(2, 3), (1, 1)).shape
    (2, 5)
"""

from __future__ import annotations

import types

from ... import functional
from ...core.tensor import Tensor

__all__ = sorted({n for n, v in vars(functional).items() if not n.startswith("_")
                  and not isinstance(v, types.ModuleType)} | {"pad"})


def pad(input: Tensor, pad, mode: str = "constant", value=None) -> Tensor:  # noqa: A002
    """PyTorch's ``nn.functional.pad``: ``pad = (left_last, right_last, left_2nd_last,
    right_2nd_last, ...)`` pads the last ``len(pad) // 2`` dimensions.

    Args:
        input: the tensor.
        pad: an even number of non-negative widths, at most two per dimension.
        mode: ``"constant"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        value: the fill value of constant mode (None: 0).
    """
    widths = [int(p) for p in pad]
    m = len(widths) // 2
    if len(widths) % 2 or m > input.ndim:
        raise ValueError(f"pad: expected an even number of widths, two per padded dimension "
                         f"(at most {2 * input.ndim} for a {input.ndim}-D input), got "
                         f"{tuple(pad)}")
    pairs = [(0, 0)] * (input.ndim - m) + [
        (widths[2 * (m - 1 - i)], widths[2 * (m - 1 - i) + 1]) for i in range(m)]
    return functional.pad(input, pairs, mode, 0.0 if value is None else value)


def __getattr__(name):
    # Everything else is minigrad.functional's op under the same name (one object).
    if name.startswith("__") or not hasattr(functional, name):
        raise AttributeError(f"module 'minigrad.nn.functional' has no attribute {name!r}")
    return getattr(functional, name)
