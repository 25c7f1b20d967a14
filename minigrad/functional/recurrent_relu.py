"""``rnn_relu_cell``: the Elman cell with a ReLU, on the shared cell machinery of
``recurrent`` (one Function, a "lower" row of the AMP policy like the other cells)."""

from __future__ import annotations

from .._backend import get_array_module
from ..tensor import Tensor
from .activation import acc_dtype
from .recurrent import _Cell, _check, _gemm, _run

__all__ = ["rnn_relu_cell"]


class RnnReluCell(_Cell):
    name = "rnn_relu_cell"

    def forward(self, x, h, w_ih, w_hh, b_ih, b_hh):
        xp = get_array_module(x)
        self.acc = acc = acc_dtype(x.dtype)
        hn = xp.maximum(_gemm(x, w_ih, b_ih, acc) + _gemm(h, w_hh, b_hh, acc), 0)
        self.save_for_backward(x, h, w_ih, w_hh, hn)
        return hn.astype(h.dtype, copy=False)

    def _dgates(self, grads, saved):
        (gh,), hn = grads, saved[4]
        d = gh * (hn > 0)  # relu' (0 at the kink, like PyTorch)
        return d, d, (0.0,)


def rnn_relu_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step with ReLU: ``h' = relu(x w_ih^T + b_ih + h w_hh^T + b_hh)``.

    Args:
        x: input (N, I) or (I,).
        h: hidden state (N, H) or (H,).
        w_ih, w_hh: (H, I) and (H, H) weights; b_ih, b_hh: optional (H,) biases.

    Returns:
        The new hidden state, shaped and typed like ``h``.
    """
    _check("rnn_relu_cell", x, (h,), w_ih, w_hh, b_ih, b_hh, 1)
    return _run(RnnReluCell, x, (h,), (w_ih, w_hh, b_ih, b_hh))
