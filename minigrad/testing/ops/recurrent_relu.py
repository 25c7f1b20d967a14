"""Op-table entries for ``minigrad/functional/recurrent_relu.py``.

Like the other cells its gradient is computed on arrays: no second derivative declared.
"""

import numpy as np

from ..op_table import NAN, ErrorInput, NonFinite, OpInfo, Sample, rand


def _ref(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    y = x @ w_ih.T + h @ w_hh.T
    return np.maximum(y if b_ih is None else y + b_ih + b_hh, 0.0)


_W = (rand(4, 3, seed=3), rand(4, 4, seed=4))
_B = (rand(4, seed=5), rand(4, seed=6))

__all__ = ["OPS"]

OPS = [
    OpInfo("rnn_relu_cell", "recurrent_relu", (
        Sample((rand(2, 3), rand(2, 4, seed=1), *_W, *_B)),
        Sample((rand(2, 3), rand(2, 4, seed=1), *_W), name="nobias"),
        Sample((rand(3), rand(4, seed=1), *_W, *_B), name="unbatched"),
        Sample((rand(0, 3), rand(0, 4, seed=1), *_W, *_B), name="empty")), "lower",
        ref=_ref,
        # relu(nan) is nan (no clamping to 0), and a NaN input reaches every unit.
        nonfinite=(NonFinite((np.array([[NAN, 0.0, 0.0]]), np.zeros((1, 4)), *_W),
                             np.full((1, 4), NAN)),),
        errors=(ErrorInput((rand(2, 3), rand(2, 4), rand(4, 4), _W[1]), ValueError,
                           ("rnn_relu_cell", "w_ih=(4, 4)"), name="shapes"),)),
]
