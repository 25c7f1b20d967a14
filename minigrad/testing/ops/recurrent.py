"""Op-table entries for ``minigrad/functional/recurrent.py``.

The gradient is computed on arrays (a ``*_backward`` Function): no second derivative, so
``gradgrad`` stays False (double backward raises NotImplementedError naming the op).
"""

import numpy as np

from ..op_table import NAN, ErrorInput, NonFinite, OpInfo, Sample, rand


def _cell(name, gates, ref=None):
    n, i, h = 2, 3, 4
    state = (rand(n, h, seed=1), rand(n, h, seed=2)) if name == "lstm_cell" else rand(n, h, seed=1)
    weights = (rand(gates * h, i, seed=3), rand(gates * h, h, seed=4))
    biases = (rand(gates * h, seed=5), rand(gates * h, seed=6))
    empty = (tuple(s[:0] for s in state) if isinstance(state, tuple) else state[:0])
    return OpInfo(name, "recurrent", (
        Sample((rand(n, i), state, *weights, *biases)),
        Sample((rand(n, i), state, *weights), name="nobias"),
        Sample((rand(0, i), empty, *weights, *biases), name="empty")), "lower",
        ref=ref,
        errors=(ErrorInput((rand(n, i), state, rand(gates * h, i + 1), weights[1]), ValueError,
                           (name, f"w_ih=({gates * h}, {i + 1})"), name="shapes"),))


def _rnn_ref(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    y = x @ w_ih.T + h @ w_hh.T
    return np.tanh(y if b_ih is None else y + b_ih + b_hh)


def _relu_rnn_ref(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    y = x @ w_ih.T + h @ w_hh.T
    return np.maximum(y if b_ih is None else y + b_ih + b_hh, 0.0)


_W = (rand(4, 3, seed=3), rand(4, 4, seed=4))
_B = (rand(4, seed=5), rand(4, seed=6))


__all__ = ["OPS"]

OPS = [
    _cell("rnn_tanh_cell", 1, _rnn_ref), _cell("lstm_cell", 4), _cell("gru_cell", 3),
    OpInfo("rnn_relu_cell", "recurrent", (
        Sample((rand(2, 3), rand(2, 4, seed=1), *_W, *_B)),
        Sample((rand(2, 3), rand(2, 4, seed=1), *_W), name="nobias"),
        Sample((rand(3), rand(4, seed=1), *_W, *_B), name="unbatched"),
        Sample((rand(0, 3), rand(0, 4, seed=1), *_W, *_B), name="empty")), "lower",
        ref=_relu_rnn_ref,
        # relu(nan) is nan (no clamping to 0), and a NaN input reaches every unit.
        nonfinite=(NonFinite((np.array([[NAN, 0.0, 0.0]]), np.zeros((1, 4)), *_W),
                             np.full((1, 4), NAN)),),
        errors=(ErrorInput((rand(2, 3), rand(2, 4), rand(4, 4), _W[1]), ValueError,
                           ("rnn_relu_cell", "w_ih=(4, 4)"), name="shapes"),)),
]
