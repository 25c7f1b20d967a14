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

# a composite of embedding, index_add / max and where: no Function of its own
OPS.append(OpInfo("embedding_bag", "sparse", (
    Sample((np.array([[0, 2, 1], [4, 4, 3]]), rand(5, 4))),
    Sample((np.array([0, 2, 1, 4, 3]), rand(5, 4), np.array([0, 2, 2])), {"mode": "sum"},
           name="offsets_sum_empty_bag"),
    Sample((np.array([0, 2, 1, 4]), rand(5, 4), np.array([0, 1])), {"mode": "max"},
           name="max"),
    Sample((np.zeros((0, 2), np.int64), rand(5, 4)), name="empty")), None,
    amp_note="a composite of embedding, index_add or max, and where, each governed by its "
             "own row",
    errors=(ErrorInput((np.array([[0, 1]]), rand(5, 3)), ValueError,
                       ("embedding_bag", "mode"), {"mode": "prod"}, name="mode"),
            ErrorInput((np.array([0, 1]), rand(5, 3)), ValueError,
                       ("embedding_bag", "offsets"), name="no_offsets"),
            ErrorInput((np.array([[0, 1]]), np.ones((5, 3), np.int64)), ValueError,
                       ("embedding_bag", "floating"), name="integer_weight"))))
