"""Op-table entries for ``minigrad/functional/cast.py``."""

from ..op_table import ErrorInput, OpInfo, Sample, rand

# float64 -> float32 -> float64 loses ~1e-7 relatively: differentiate with a coarse step.
_F32_TOL = {"eps": 1e-3, "atol": 1e-3, "rtol": 1e-3}

__all__ = ["OPS"]

OPS = [
    OpInfo("cast", "cast", (
        Sample((rand(3, 4), "float32")),
        Sample((rand(3, 4), "float16"), name="float16", grad=False),
        Sample((rand(3, 4), "int64"), name="to_int", grad=False),
        Sample((rand(), "float32"), name="0d"),
        Sample((rand(0, 4), "float32"), name="empty")), "passthrough", tol=_F32_TOL,
        errors=(ErrorInput((rand(2), "float17"), TypeError, "float17", name="dtype"),)),
    OpInfo("clone", "cast", (
        Sample((rand(3, 4),)), Sample((rand(),), name="0d"), Sample((rand(0, 4),), name="empty")),
        "passthrough", ref=lambda x: x,
        errors=(ErrorInput((3,), TypeError, "clone", name="not_a_tensor"),)),
    OpInfo("to_device", "cast", (Sample((rand(3, 4), "cpu")), Sample((rand(0, 4), "cpu"),
                                                                     name="empty")),
           None, amp_note="to the device it is on already: returns x, dispatching nothing",
           ref=lambda x, device: x,
           errors=(ErrorInput((rand(2), "tpu"), ValueError, "'tpu'", name="device"),)),
    OpInfo("detach", "cast", (Sample((rand(3, 4),)), Sample((rand(0, 4),), name="empty")),
           None, amp_note="Tensor.detach(): a view without a graph node, no Function",
           differentiable=False, ref=lambda x: x,
           errors=(ErrorInput((3,), TypeError, "detach", name="not_a_tensor"),)),
]
