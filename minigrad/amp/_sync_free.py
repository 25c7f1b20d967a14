"""The device side of ``GradScaler(sync_free=True)``: scale, growth tracker and the unread
per-iteration records live on the device (1-element arrays; NumPy ones on the CPU), so a whole AMP
step runs without a device-to-host read and can be captured as a CUDA graph.

``DeviceState`` only moves arrays around on the device. Every host read of it stays in
``grad_scaler`` (through its ``host_read``, so the sync detector and the tests that count reads
see each one): this module prepares what to read (:meth:`DeviceState.pending_values`) and decodes
what was read (:meth:`DeviceState.take_records`).
"""

from __future__ import annotations

import numpy as np

from .. import _backend as B
from .._backend import fused
from .._backend.sync_debug import host_read

__all__ = ["DeviceState", "LazyStep"]

PENDING_MAX = 10_000  # records kept unread before the scaler forces one read (bounded memory)


class LazyStep:
    """What a sync-free ``scaler.step(opt)`` returns: the skip decision is on the device and is
    read only when asked (``.skipped`` or ``bool()``: True when the step was applied)."""

    __slots__ = ("_flag", "result")

    def __init__(self, flag, result):
        self._flag, self.result = flag, result

    @property
    def skipped(self) -> bool:
        return bool(host_read(self._flag, "GradScaler.step() report").reshape(-1)[0])

    def __bool__(self) -> bool:
        return not self.skipped


class DeviceState:
    """A sync-free scaler's state on one device.

    Attributes:
        scale: 1-element float64 array (float64, so it equals the host path's Python float bit
            for bit).
        tracker: 1-element int64 array: clean iterations since the last change.
        pending: one record per ``update()`` not read yet: ``(used scale, found flag, loss flag,
            new scale, counted, where, rank rows)``, the first four device arrays.
    """

    __slots__ = ("scale", "tracker", "pending")

    def __init__(self, scale: float, tracker: int, device: str):
        self.scale = B.asarray([scale], B.float64, device)
        self.tracker = B.asarray([tracker], B.int64, device)
        self.pending: list = []

    def full(self) -> bool:
        """Whether the unread records reached ``PENDING_MAX`` (time for one read)."""
        return len(self.pending) >= PENDING_MAX

    def update(self, found, loss_flag, new_scale, rule: dict, where, rank_rows) -> None:
        """End one iteration on the device: apply the loss-scale rule (or set ``new_scale``)
        and queue the iteration's record, all without a read.

        Args:
            found: this iteration's gradient flags: device arrays, or bools (an optimizer
                wrapper's flag was already read on the host); empty when nothing was checked.
            loss_flag: the 1-element int32 flag of the losses (None: none was checked).
            new_scale: a float that replaces the rule, or None.
            rule: the rule's constants (``GradScaler._rule()``).
            where, rank_rows: the debug location and the ranks' flags, kept with the record.
        """
        xp = B.get_array_module(self.scale)
        flags = [xp.full(1, int(f), np.int32) if isinstance(f, bool) else f  # a fill, no copy
                 for f in found]
        found_any = flags[0] if len(flags) == 1 else xp.stack(flags).max(axis=0)
        bad = loss_flag if loss_flag is not None else xp.zeros(1, np.int32)
        used = self.scale.copy()
        if new_scale is not None:
            self.scale[...] = new_scale
        else:  # the kernel takes a number: a 0.0 floor is no floor for a positive scale
            fused.scale_update(self.scale, self.tracker, found_any, bad, rule["growth_factor"],
                               rule["backoff_factor"], rule["growth_interval"],
                               rule["min_scale"] or 0.0, rule["max_scale"])
        if not found:
            found_any = xp.zeros(1, np.int32)
        # the ranks' rows stay on the device, read with the rest when telemetry is read
        self.pending.append((used, found_any, bad, self.scale.copy(), bool(found), where,
                             rank_rows))

    def pending_values(self):
        """Every pending record's four numbers as one float64 device array: one transfer."""
        xp = B.get_array_module(self.scale)
        return xp.concatenate([xp.concatenate([r[0], r[1].astype(np.float64),
                                               r[2].astype(np.float64), r[3]])
                               for r in self.pending])

    def take_records(self, values) -> list:
        """Decode ``values`` (the host copy of :meth:`pending_values`) into ``(counted, found,
        loss_bad, used, new, where, rank_rows)`` tuples and drop the pending records. Called
        only once the read succeeded, so a refused read (sync debug mode) loses nothing."""
        pending, self.pending = self.pending, []
        out = []
        for i, rec in enumerate(pending):
            used, found, bad, new = values[4 * i:4 * i + 4]
            out.append((rec[4], bool(found), bool(bad), float(used), float(new), rec[5], rec[6]))
        return out
