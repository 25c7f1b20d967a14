"""Recurrent cells with PyTorch's weight layouts and gate orders, each one Function.

One Function per cell lets the AMP policy lower the whole cell (``lstm_cell`` etc. are in the
low-precision list): the two GEMMs run through ``_backend.kernels.matmul`` (float32
accumulation), the gate nonlinearities in float32, and the new states are rounded to the input
dtype. Weights: ``w_ih`` (G*H, I), ``w_hh`` (G*H, H), biases (G*H,), G gates stacked in order.
"""

from __future__ import annotations

from .._backend import get_array_module, kernels
from .._backend.dtypes import float_result_type, is_floating, result_type
from ..core.function import Function
from ..core.tensor import Tensor
from ._array_backward import ArrayBackward, run_array_backward
from ._utils import acc_dtype, check_floating, op_error, refuse_bool_product

__all__ = ["gru_cell", "lstm_cell", "rnn_relu_cell", "rnn_tanh_cell"]


def _sigmoid(x):
    xp = get_array_module(x)
    # exp of a non-positive number only: no overflow for large |x|.
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _gemm(x, w, b, acc):
    """``x @ w.T + b`` with float32 accumulation, returned in ``acc``."""
    y = kernels.matmul(x, w.T).astype(acc, copy=False)
    return y if b is None else y + b.astype(acc, copy=False)


def _exact_preactivation(x, h, w_ih, w_hh, b_ih, b_hh):
    """``x w_ih^T + b_ih + h w_hh^T + b_hh`` of integer inputs, exactly in their promoted
    integer dtype (PyTorch's integer GEMMs); bool only reaches here empty."""
    arrays = [a for a in (x, h, w_ih, w_hh, b_ih, b_hh) if a is not None]
    dtype = result_type([a.dtype for a in arrays])
    y = (kernels.matmul(x, w_ih.T).astype(dtype, copy=False)
         + kernels.matmul(h, w_hh.T).astype(dtype, copy=False))
    for b in (b_ih, b_hh):
        if b is not None:
            y = y + b.astype(dtype, copy=False)
    return y.astype(dtype, copy=False)


class _Cell(Function):
    """Shared backward plumbing: ``_dgates`` gives d/d(x W_ih^T + b_ih) and d/d(h W_hh^T +
    b_hh) plus any direct gradients of h and c; GEMM gradients are the same for every cell."""

    def backward(self, *grads):
        saved = [t._data if isinstance(t, Tensor) else t for t in self.saved_tensors]
        return run_array_backward(CellBackward, grads, self, cell=self,
                                  saved=saved)


class CellBackward(ArrayBackward):
    name = "rnn_cell_backward"

    def compute(self, *grads, needs, cell, saved):
        x, h, w_ih, w_hh = saved[:4]
        d_ih, d_hh, direct = cell._dgates([g.astype(cell.acc, copy=False) for g in grads],
                                          saved)
        n_state = len(direct)
        out = []
        if needs[0]:
            gx = kernels.matmul(d_ih.astype(x.dtype, copy=False), w_ih)
            out.append(gx.astype(x.dtype, copy=False))
        if needs[1]:
            gh = kernels.matmul(d_hh.astype(h.dtype, copy=False), w_hh).astype(cell.acc) + direct[0]
            out.append(gh.astype(h.dtype, copy=False))
        for i in range(1, n_state):  # the LSTM cell state
            if needs[1 + i]:
                out.append(direct[i].astype(h.dtype, copy=False))
        base = 1 + n_state
        if needs[base]:
            out.append(kernels.matmul(d_ih.T.astype(x.dtype), x).astype(w_ih.dtype, copy=False))
        if needs[base + 1]:
            out.append(kernels.matmul(d_hh.T.astype(h.dtype), h).astype(w_hh.dtype, copy=False))
        if len(needs) > base + 2 and needs[base + 2]:
            out.append(d_ih.sum(axis=0).astype(cell.inputs[base + 2].dtype, copy=False))
        if len(needs) > base + 3 and needs[base + 3]:
            out.append(d_hh.sum(axis=0).astype(cell.inputs[base + 3].dtype, copy=False))
        return tuple(out)


class RnnTanhCell(_Cell):
    name = "rnn_tanh_cell"

    def forward(self, x, h, w_ih, w_hh, b_ih, b_hh):
        xp = get_array_module(x)
        if not is_floating(x.dtype):  # no gradient: tanh of the exact sum, in the default float
            pre = _exact_preactivation(x, h, w_ih, w_hh, b_ih, b_hh)
            return xp.tanh(pre.astype(float_result_type([pre.dtype]), copy=False))
        self.acc = acc = acc_dtype(x.dtype)
        hn = xp.tanh(_gemm(x, w_ih, b_ih, acc) + _gemm(h, w_hh, b_hh, acc))
        self.save_for_backward(x, h, w_ih, w_hh, hn)
        return hn.astype(h.dtype, copy=False)

    def _dgates(self, grads, saved):
        (gh,), hn = grads, saved[4]
        d = gh * (1.0 - hn * hn)
        return d, d, (0.0,)


class RnnReluCell(_Cell):
    name = "rnn_relu_cell"

    def forward(self, x, h, w_ih, w_hh, b_ih, b_hh):
        xp = get_array_module(x)
        if not is_floating(x.dtype):  # no gradient: exact integer arithmetic, as PyTorch's
            pre = _exact_preactivation(x, h, w_ih, w_hh, b_ih, b_hh)
            return xp.maximum(pre, xp.zeros((), pre.dtype))
        self.acc = acc = acc_dtype(x.dtype)
        hn = xp.maximum(_gemm(x, w_ih, b_ih, acc) + _gemm(h, w_hh, b_hh, acc), 0)
        self.save_for_backward(x, h, w_ih, w_hh, hn)
        return hn.astype(h.dtype, copy=False)

    def _dgates(self, grads, saved):
        (gh,), hn = grads, saved[4]
        d = gh * (hn > 0)  # relu' (0 at the kink, like PyTorch)
        return d, d, (0.0,)


class LstmCell(_Cell):
    name = "lstm_cell"

    def forward(self, x, h, c, w_ih, w_hh, b_ih, b_hh):
        xp = get_array_module(x)
        self.acc = acc = acc_dtype(x.dtype)
        gates = _gemm(x, w_ih, b_ih, acc) + _gemm(h, w_hh, b_hh, acc)
        hs = h.shape[-1]
        i = _sigmoid(gates[:, :hs])
        f = _sigmoid(gates[:, hs:2 * hs])
        g = xp.tanh(gates[:, 2 * hs:3 * hs])
        o = _sigmoid(gates[:, 3 * hs:])
        cf = c.astype(acc, copy=False)
        cn = f * cf + i * g
        tc = xp.tanh(cn)
        hn = o * tc
        self.save_for_backward(x, h, w_ih, w_hh, c, i, f, g, o, tc)
        return hn.astype(h.dtype, copy=False), cn.astype(c.dtype, copy=False)

    def _dgates(self, grads, saved):
        xp = get_array_module(grads[0])
        gh, gc = grads
        c, i, f, g, o, tc = saved[4:]
        gc = gc + gh * o * (1.0 - tc * tc)
        d = xp.concatenate([gc * g * i * (1.0 - i), gc * c.astype(self.acc) * f * (1.0 - f),
                            gc * i * (1.0 - g * g), gh * tc * o * (1.0 - o)], axis=1)
        return d, d, (0.0, gc * f)


class GruCell(_Cell):
    name = "gru_cell"

    def forward(self, x, h, w_ih, w_hh, b_ih, b_hh):
        xp = get_array_module(x)
        self.acc = acc = acc_dtype(x.dtype)
        gi = _gemm(x, w_ih, b_ih, acc)
        gh = _gemm(h, w_hh, b_hh, acc)
        hs = h.shape[-1]
        r = _sigmoid(gi[:, :hs] + gh[:, :hs])
        z = _sigmoid(gi[:, hs:2 * hs] + gh[:, hs:2 * hs])
        hn_gate = gh[:, 2 * hs:]
        n = xp.tanh(gi[:, 2 * hs:] + r * hn_gate)
        hf = h.astype(acc, copy=False)
        out = (1.0 - z) * n + z * hf
        self.save_for_backward(x, h, w_ih, w_hh, r, z, n, hn_gate)
        return out.astype(h.dtype, copy=False)

    def _dgates(self, grads, saved):
        xp = get_array_module(grads[0])
        (go,) = grads
        r, z, n, hn_gate = saved[4:]
        h = saved[1].astype(self.acc, copy=False)
        dn = go * (1.0 - z) * (1.0 - n * n)
        dr = dn * hn_gate * r * (1.0 - r)
        dz = go * (h - n) * z * (1.0 - z)
        d_ih = xp.concatenate([dr, dz, dn], axis=1)
        d_hh = xp.concatenate([dr, dz, dn * r], axis=1)
        return d_ih, d_hh, (go * z,)


def _check(op, x, hs, w_ih, w_hh, b_ih, b_hh, gates):
    if op in ("rnn_tanh_cell", "rnn_relu_cell") and not is_floating(x.dtype):
        # one affine map and one activation: integer input is computed as PyTorch does
        # (rnn_relu_cell exactly in integers, rnn_tanh_cell in the default float)
        inputs = [t for t in (x, *hs, w_ih, w_hh, b_ih, b_hh) if t is not None]
        if any(is_floating(t.dtype) for t in inputs):
            raise op_error(op, "expects integer x, h and weights together (or all floating)",
                           dtypes=tuple(str(t.dtype) for t in inputs))
        refuse_bool_product(op, x, w_ih, *hs, w_hh)
    else:  # the gated cells' in-place gate arithmetic refuses integers in PyTorch too
        for t in (x, w_ih, w_hh):
            check_floating(op, t)
    h = hs[0]
    size = h.shape[-1] if h.ndim else -1   # a 0-d state fails the check below, named
    ok = (x.ndim in (1, 2) and h.ndim == x.ndim and all(s.shape == h.shape for s in hs)
          and w_ih.shape == (gates * size, x.shape[-1]) and w_hh.shape == (gates * size, size)
          and (x.ndim == 1 or x.shape[0] == h.shape[0])
          and all(b is None or b.shape == (gates * size,) for b in (b_ih, b_hh)))
    if not ok:
        raise op_error(op, f"expects x (N, I), h (N, H), w_ih ({gates}*H, I), w_hh "
                       f"({gates}*H, H), biases ({gates}*H,)", x=x.shape, h=h.shape,
                       w_ih=w_ih.shape, w_hh=w_hh.shape,
                       b_ih=None if b_ih is None else b_ih.shape,
                       b_hh=None if b_hh is None else b_hh.shape)
    return x.ndim == 1


def _run(cls, x, states, weights):
    """Apply ``cls``; an unbatched (1-D) call runs as a batch of one."""
    if x.ndim == 2:
        return cls.apply(x, *states, *weights)
    out = cls.apply(x.reshape((1, -1)), *[s.reshape((1, -1)) for s in states], *weights)
    if isinstance(out, tuple):
        return tuple(o.reshape((-1,)) for o in out)
    return out.reshape((-1,))


def rnn_tanh_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step: ``h' = tanh(x w_ih^T + b_ih + h w_hh^T + b_hh)``.

    Args:
        x: input (N, I) or (I,).
        h: hidden state (N, H) or (H,).
        w_ih, w_hh: (H, I) and (H, H) weights; b_ih, b_hh: optional (H,) biases.

    Returns:
        The new hidden state, shaped and typed like ``h`` (of integer inputs: the tanh of
        the exact integer sum, in the default float dtype, as PyTorch).
    """
    _check("rnn_tanh_cell", x, (h,), w_ih, w_hh, b_ih, b_hh, 1)
    return _run(RnnTanhCell, x, (h,), (w_ih, w_hh, b_ih, b_hh))


def rnn_relu_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step with ReLU: ``h' = relu(x w_ih^T + b_ih + h w_hh^T + b_hh)``.

    Args:
        x: input (N, I) or (I,).
        h: hidden state (N, H) or (H,).
        w_ih, w_hh: (H, I) and (H, H) weights; b_ih, b_hh: optional (H,) biases.

    Returns:
        The new hidden state, shaped and typed like ``h`` (integer inputs are computed exactly,
        in their integer dtype, as PyTorch).
    """
    _check("rnn_relu_cell", x, (h,), w_ih, w_hh, b_ih, b_hh, 1)
    return _run(RnnReluCell, x, (h,), (w_ih, w_hh, b_ih, b_hh))


def lstm_cell(x: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None):
    """One LSTM step with gates stacked in the order input, forget, cell, output (i, f, g, o).

    ``c' = f * c + i * g``, ``h' = o * tanh(c')``.

    Args:
        x: input (N, I) or (I,).
        hx: the tuple ``(h, c)``, each (N, H) or (H,).
        w_ih, w_hh: (4H, I) and (4H, H) weights; b_ih, b_hh: optional (4H,) biases.

    Returns:
        The tuple ``(h', c')``.
    """
    h, c = hx
    _check("lstm_cell", x, (h, c), w_ih, w_hh, b_ih, b_hh, 4)
    return _run(LstmCell, x, (h, c), (w_ih, w_hh, b_ih, b_hh))


def gru_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step with gates stacked in the order reset, update, new (r, z, n).

    ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``, ``h' = (1 - z) * n + z * h``.

    Args:
        x: input (N, I) or (I,).
        h: hidden state (N, H) or (H,).
        w_ih, w_hh: (3H, I) and (3H, H) weights; b_ih, b_hh: optional (3H,) biases.

    Returns:
        The new hidden state, shaped and typed like ``h``.
    """
    _check("gru_cell", x, (h,), w_ih, w_hh, b_ih, b_hh, 3)
    return _run(GruCell, x, (h,), (w_ih, w_hh, b_ih, b_hh))
