"""Op-table entries for ``minigrad/functional/dropout.py``."""

from ..op_table import ErrorInput, OpInfo, Sample, rand

__all__ = ["OPS"]

OPS = [
    # Each call draws a new mask, so only the deterministic settings are gradient-checked;
    # the p=0.5 sample checks the forward and (same seed) the non-contiguous run.
    OpInfo("dropout", "dropout", (
        Sample((rand(3, 4),), {"p": 0.5}, name="p05", grad=False),
        Sample((rand(3, 4),), {"p": 0.5, "training": False}, name="eval",
               expect=rand(3, 4)),
        Sample((rand(3, 4),), {"p": 0.0}, name="p0"),
        Sample((rand(0, 4),), {"p": 0.5}, name="empty", grad=False)), "passthrough",
        errors=(ErrorInput((rand(2, 3),), ValueError, ("dropout", "p"), {"p": 1.5},
                           name="p_range"),)),
]
