"""Op-table entries for ``minigrad/functional/pooling.py``."""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, rand

__all__ = ["OPS"]

OPS = [
    OpInfo("max_pool2d", "pooling", (
        Sample((rand(1, 2, 4, 4), 2)),
        Sample((rand(2, 1, 5, 5), 3), {"stride": 2, "padding": 1}, name="padding"),
        Sample((rand(0, 2, 4, 4), 2), name="empty")), "passthrough",
        errors=(ErrorInput((rand(1, 1, 2, 2), 3), ValueError, ("max_pool2d", "kernel"),
                           name="kernel_too_large"),
                ErrorInput((rand(2, 2), 2), ValueError, ("max_pool2d", "(N, C, H, W)"),
                           name="rank")),
        nonfinite=(NonFinite((np.array([[[[1.0, NAN], [2.0, -INF]]]]), 2), [[[[NAN]]]]),)),
    OpInfo("avg_pool2d", "pooling", (
        Sample((rand(1, 2, 4, 4), 2)),
        Sample((rand(2, 1, 5, 5), 3), {"stride": 2, "padding": 1}, name="padding"),
        Sample((rand(0, 2, 4, 4), 2), name="empty")), "passthrough",
        errors=(ErrorInput((rand(1, 1, 4, 4), 2), ValueError, ("avg_pool2d", "padding"),
                           {"padding": 2}, name="padding"),),
        nonfinite=(NonFinite((np.array([[[[1.0, INF], [2.0, 3.0]]]]), 2), [[[[INF]]]]),)),
    OpInfo("adaptive_avg_pool2d", "pooling", (
        Sample((rand(1, 2, 5, 6), (2, 3))),
        Sample((rand(2, 1, 4, 4), 1), name="global"),
        Sample((rand(0, 2, 4, 4), 2), name="empty")), "passthrough",
        errors=(ErrorInput((rand(1, 1, 4, 4), 0), ValueError,
                           ("adaptive_avg_pool2d", "output_size"), name="size"),)),
]
