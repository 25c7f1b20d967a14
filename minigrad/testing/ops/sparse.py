"""Op-table entries for ``minigrad/functional/sparse.py``."""

import numpy as np

from ..op_table import ErrorInput, OpInfo, Sample, ints, rand

__all__ = ["OPS"]

OPS = [
    OpInfo("embedding", "sparse", (
        Sample((ints(5, 2, 3), rand(5, 4))),
        # the padding row gets no gradient by design (PyTorch too): forward check only
        Sample((np.array([0, 2, 0]), rand(5, 4)), {"padding_idx": 0}, name="padding_idx",
               grad=False),
        Sample((np.array(3), rand(5, 4)), name="0d"),
        Sample((np.zeros((0,), np.int64), rand(5, 4)), name="empty")), "passthrough",
        ref=lambda idx, w, padding_idx=None: w[idx],
        errors=(ErrorInput((np.array([0, 7]), rand(5, 3)), IndexError,
                           ("embedding", "out of range"), name="index"),
                ErrorInput((np.array([0.0, 1.0]), rand(5, 3)), ValueError,
                           ("embedding", "integer"), name="float_index"))),
]
