"""Cross-rank agreement of the overflow decision (DESIGN invariant 13, AMP_REFERENCE 4.14).

Every loss scaler (``GradScaler`` in both APIs, ``nn.Graph``'s scaler, the O-level managers, which
are all ``GradScaler`` underneath) passes its per-iteration overflow flags through ``agree`` at the
one point where it already reads them (or, device-side, before its kernels consume them). Outside
distributed training this is one dictionary lookup and returns the flags unchanged; under
``minigrad.distributed`` it max-reduces them across ranks so every rank skips the same step and the
scales stay identical.
"""

from __future__ import annotations

import sys

import numpy as np

from .._backend.sync_debug import host_read

__all__ = ["agree", "overflow_rows", "ranks_of", "overflow_ranks", "this_rank"]


def agree(flags):
    """Max-reduce this rank's overflow flags across all ranks.

    Args:
        flags: a 1-D int32 array (NumPy or CuPy), one entry per decision (per optimizer, plus the
            loss check); nonzero means inf/NaN was seen on this rank.

    Returns:
        An array of the same kind and shape holding the max over ranks (``flags`` itself when
        no process group is initialized).
    """
    dist = sys.modules.get("minigrad.distributed.process_group")
    if dist is None or not dist.is_initialized():
        return flags
    # a one-rank group goes through too, so overflow_ranks() reports the same way at any size
    return dist._agree_flags(flags)


def overflow_rows():
    """Every rank's own flags from the last ``agree`` (a ``(world, n)`` array, left on the
    device: a sync-free scaler keeps it unread until its telemetry is read), or None when not
    distributed."""
    dist = sys.modules.get("minigrad.distributed.process_group")
    if dist is None or not dist.is_initialized():
        return None
    return dist._last_overflow_rows()


def ranks_of(rows):
    """The ranks whose row in ``rows`` (from :func:`overflow_rows`) has a nonzero flag, read on
    the host (through the sync detector); None for None."""
    if rows is None:
        return None
    rows = host_read(rows, "GradScaler overflow ranks")
    return [int(r) for r in np.flatnonzero(rows.reshape(rows.shape[0], -1).any(axis=1))]


def overflow_ranks():
    """Ranks whose own flags were nonzero in the last ``agree`` (None when not distributed)."""
    return ranks_of(overflow_rows())


def this_rank():
    """This process's rank in the initialized group (None when not distributed)."""
    dist = sys.modules.get("minigrad.distributed.process_group")
    if dist is None or not dist.is_initialized():
        return None
    return dist.get_rank()
