"""The dynamic loss-scale rule, written once (AMP_REFERENCE section 2).

One pure step function, :func:`adjust`, in the style of jmp's ``DynamicLossScale.adjust``: the
current ``(scale, tracker)`` and this iteration's flags in, the next ``(scale, tracker)`` out.
It is every form of the rule that runs in Python:

* ``GradScaler``'s host path calls it on Python numbers (the scale is a float, the tracker an
  int) and gets Python numbers back;
* ``fused.scale_update``'s CPU branch (the sync-free path on NumPy arrays) calls it on the
  1-element device-state arrays and writes the result back in place.

The GPU runs ``fused._SCALE_OP``, the compiled form of this function (a CUDA kernel, so that a
sync-free step reads nothing back); ``tests/test_loss_scale_rule.py`` executes that C source on
the CPU against this function over a table of cases, so the two cannot drift apart silently.

It lives in ``_backend`` (the bottom floor) because ``fused`` must call it and may not import
``minigrad.amp``; ``amp`` imports it from here.

The body is written with ``np.where`` selections rather than ``if`` branches so that the one
definition serves an array and a Python float alike; every selected value is computed with the
same IEEE float64 operations the Python branches would do (``*``, then ``max``/``min``), so the
host path's floats and the device path's float64 arrays stay equal bit for bit. On plain Python
numbers (the host path, once per iteration) the same rule is also spelled with ``if``: the
selections cost ~10 µs of NumPy dispatch for two scalars. That spelling, :func:`_adjust_numbers`,
is the same precedence and the same operations (NumPy's ``maximum``/``minimum`` semantics
included); ``tests/test_loss_scale_rule.py`` runs both forms over the case table and random
states and requires equal bits.
"""

from __future__ import annotations

import numpy as np

__all__ = ["adjust", "F32_MAX"]

F32_MAX = float(np.finfo(np.float32).max)  # default growth cap: the scale stays float32-finite


def adjust(scale, tracker, found_inf, loss_bad, *, growth_factor: float, backoff_factor: float,
           growth_interval: int, min_scale=None, max_scale: float = F32_MAX):
    """One iteration of the dynamic loss-scale rule; pure (nothing is modified).

    In order of precedence:

    * ``growth_interval == 0``: a static scale (MegEngine, ``StaticGradScaler``): nothing changes
      (overflowing steps are still skipped, by the caller);
    * ``loss_bad``: a loss was inf/NaN before any scaling: a model or data problem, not a scale
      problem, so scale and tracker are kept;
    * ``found_inf``: some gradient was inf/NaN: ``scale * backoff_factor``, not below
      ``min_scale``; the tracker resets to 0;
    * otherwise a clean iteration: ``tracker + 1``; on reaching ``growth_interval`` the scale
      becomes ``scale * growth_factor``, capped at ``max_scale``, and the tracker resets to 0.

    Args:
        scale: the current scale: a Python float, or a float64 NumPy array (0-d or 1 element).
        tracker: clean iterations since the last change: an int, or an int64 array like
            ``scale``.
        found_inf, loss_bad: bools, or int/bool arrays (nonzero = true).
        growth_factor, backoff_factor, growth_interval: the rule's constants.
        min_scale: the backoff floor; None for none (for a positive scale 0.0 is the same, and
            is what the CUDA kernel takes).
        max_scale: the growth cap (default float32 max: a larger scale would overflow the
            float32 loss it multiplies).

    Returns:
        ``(scale, tracker)``: a float and an int when ``scale`` was not an array, else arrays of
        ``scale``'s and ``tracker``'s shape and dtype.
    """
    if growth_interval == 0:
        return scale, tracker
    if type(scale) is float and type(tracker) is int and not isinstance(found_inf, np.ndarray) \
            and not isinstance(loss_bad, np.ndarray):
        return _adjust_numbers(scale, tracker, found_inf, loss_bad, growth_factor,
                               backoff_factor, growth_interval, min_scale, max_scale)
    keep = np.not_equal(loss_bad, 0)
    bad = np.not_equal(found_inf, 0)
    stepped = tracker + 1
    grow = np.equal(stepped, growth_interval)
    # an inf product is the rule's business (capped below), not a numerical accident to report
    with np.errstate(over="ignore"):
        backed = scale * backoff_factor
        grown = scale * growth_factor
    if min_scale is not None:
        backed = np.maximum(backed, min_scale)
    grown = np.where(grow, np.minimum(grown, max_scale), scale)
    new_scale = np.where(keep, scale, np.where(bad, backed, grown))
    new_tracker = np.where(keep, tracker, np.where(bad | grow, 0, stepped))
    if isinstance(scale, np.ndarray):
        return new_scale.astype(scale.dtype, copy=False), \
            new_tracker.astype(np.asarray(tracker).dtype, copy=False)
    return float(new_scale), int(new_tracker)


def _adjust_numbers(scale, tracker, found_inf, loss_bad, growth_factor, backoff_factor,
                    growth_interval, min_scale, max_scale):
    """:func:`adjust` on a Python float and int: the same precedence and float64 operations
    with ``if`` instead of ``np.where``. ``np.maximum``/``np.minimum`` are spelled out with
    their exact semantics (a NaN operand wins, a tie returns the second operand, which decides
    the sign of a zero), so even a nonsensical NaN ``min_scale`` gives the array form's bits."""
    if loss_bad != 0:
        return scale, tracker
    if found_inf != 0:
        backed = scale * backoff_factor
        if min_scale is not None and not (backed > min_scale or backed != backed):
            backed = min_scale
        return float(backed), 0
    stepped = tracker + 1
    if stepped != growth_interval:
        return scale, stepped
    grown = scale * growth_factor
    return float(grown if grown < max_scale or grown != grown else max_scale), 0
