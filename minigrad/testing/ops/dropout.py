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



def _feature(name, x, spatial_err):
    return OpInfo(name, "dropout", (
        Sample((x,), {"p": 0.5}, name="p05", grad=False),
        Sample((x,), {"p": 0.5, "training": False}, name="eval", expect=x),
        Sample((x,), {"p": 0.0}, name="p0"),
        Sample((x[:0],), {"p": 0.5}, name="empty", grad=False)), "passthrough",
        policy_name="dropout",
        errors=(ErrorInput((x,), ValueError, (name, "p"), {"p": 1.5}, name="p_range"),
                ErrorInput((spatial_err,), ValueError, (name, "input"), name="ndim")))


def _alpha(name, x):
    return OpInfo(name, "dropout", (
        Sample((x,), {"p": 0.5, "training": True}, name="p05", grad=False),
        Sample((x,), {"p": 0.5}, name="eval", expect=x),
        Sample((x,), {"p": 0.0, "training": True}, name="p0"),
        Sample((x[:0],), {"p": 0.5, "training": True}, name="empty", grad=False)),
        "passthrough", policy_name="alpha_dropout",
        errors=(ErrorInput((x,), ValueError, (name, "p"), {"p": 1.5}, name="p_range"),))


OPS += [
    _feature("dropout1d", rand(2, 3, 4), rand(2, 3, 4, 5)),
    _feature("dropout2d", rand(2, 3, 4, 2), rand(2, 3, 4, 5, 2, 2)),
    _feature("dropout3d", rand(2, 3, 2, 2, 2), rand(3)),
    _alpha("alpha_dropout", rand(3, 4)),
    _alpha("feature_alpha_dropout", rand(2, 3, 4)),
]
