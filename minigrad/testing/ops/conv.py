"""Op-table entries for ``minigrad/functional/conv.py``."""

from ..op_table import ErrorInput, OpInfo, Sample, rand


__all__ = ["OPS"]

OPS = [
    OpInfo("conv2d", "conv", (
        Sample((rand(1, 2, 5, 5), rand(3, 2, 3, 3, seed=1), rand(3, seed=2))),
        Sample((rand(2, 2, 5, 6), rand(4, 1, 2, 3, seed=1)),
               {"stride": 2, "padding": 1, "groups": 2}, name="stride_groups"),
        Sample((rand(1, 2, 6, 6), rand(2, 2, 3, 3, seed=1)), {"dilation": 2}, name="dilation"),
        Sample((rand(0, 2, 5, 5), rand(3, 2, 3, 3, seed=1)), name="empty")), "lower",
        gradgrad=True,
        errors=(ErrorInput((rand(1, 3, 5, 5), rand(2, 4, 3, 3)), ValueError,
                           ("conv2d", "channel"), name="channels"),
                ErrorInput((rand(1, 3, 5, 5), rand(2, 3, 3, 3)), ValueError,
                           ("conv2d", "stride"), {"stride": 0}, name="stride0"))),
    OpInfo("conv1d", "conv", (
        Sample((rand(2, 2, 7), rand(3, 2, 3, seed=1), rand(3, seed=2))),
        Sample((rand(1, 2, 7), rand(2, 2, 2, seed=1)), {"stride": 2, "padding": 1},
               name="stride"),
        Sample((rand(0, 2, 7), rand(3, 2, 3, seed=1)), name="empty")), "lower",
        gradgrad=True,
        errors=(ErrorInput((rand(1, 3, 5), rand(2, 3, 7)), ValueError,
                           ("conv1d", "kernel"), name="kernel_too_large"),)),
    OpInfo("conv_transpose2d", "conv", (
        Sample((rand(1, 2, 4, 4), rand(2, 3, 3, 3, seed=1), rand(3, seed=2))),
        Sample((rand(1, 2, 3, 3), rand(2, 2, 3, 3, seed=1)),
               {"stride": 2, "padding": 1, "output_padding": 1}, name="stride"),
        Sample((rand(0, 2, 4, 4), rand(2, 3, 3, 3, seed=1)), name="empty")), "lower",
        gradgrad=True,
        errors=(ErrorInput((rand(1, 3, 5, 5), rand(4, 2, 3, 3)), ValueError,
                           ("conv_transpose2d", "channel"), name="channels"),)),
]
