"""Recurrent layers: the cells ``RNNCell``, ``LSTMCell``, ``GRUCell`` and the sequence layers
``RNN``, ``LSTM``, ``GRU`` that loop a cell over time (PyTorch layouts and parameter names).

Gate order inside the stacked weights follows PyTorch (LSTM: i, f, g, o; GRU: r, z, n), so
state dicts are interchangeable. Every weight starts as U(+-1/sqrt(hidden_size)).
"""

from __future__ import annotations

import math

from .. import functional as F
from ..core.creation import zeros
from . import init
from .module import Module

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _cell_step(mode, x, state, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    """One time step; ``state`` is h, or (h, c) for LSTM (whose h is projected by ``w_hr``
    when given: LSTM's ``proj_size``)."""
    if mode == "LSTM" and w_hr is not None:
        h, c = state
        i, f, g, o = F.split(F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh), 4, axis=-1)
        c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
        return F.linear(F.sigmoid(o) * F.tanh(c), w_hr), c
    if mode == "LSTM":
        return F.lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh)
    if mode == "GRU":
        return F.gru_cell(x, state, w_ih, w_hh, b_ih, b_hh)
    if mode == "RNN_TANH":
        return F.rnn_tanh_cell(x, state, w_ih, w_hh, b_ih, b_hh)
    return F.relu(F.linear(x, w_ih, b_ih) + F.linear(state, w_hh, b_hh))


def _init_uniform(module, hidden_size):
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


class _CellBase(Module):
    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        g = _GATES[self._mode] * hidden_size
        self.weight_ih = init._empty_param((g, input_size), device, dtype)
        self.weight_hh = init._empty_param((g, hidden_size), device, dtype)
        if bias:
            self.bias_ih = init._empty_param((g,), device, dtype)
            self.bias_hh = init._empty_param((g,), device, dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_uniform(self, self.hidden_size)

    def _zeros(self, x):
        lead = x.shape[:-1]
        return zeros(lead + (self.hidden_size,), dtype=x.dtype, device=x.device)

    def _step(self, x, state):
        return _cell_step(self._mode, x, state, self.weight_ih, self.weight_hh, self.bias_ih,
                          self.bias_hh)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        return s + (", bias=False" if not self.bias else "")


class RNNCell(_CellBase):
    """``h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)`` with ``act`` tanh or relu.

    Args:
        input_size, hidden_size: feature sizes of x and h.
        bias: learn ``bias_ih`` and ``bias_hh``.
        nonlinearity: "tanh" (default) or "relu".

    ``forward(x, h=None)``: x ``(N, input_size)``; h defaults to zeros. Returns h'.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        self.__dict__["_mode"] = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, x, h=None):
        return self._step(x, self._zeros(x) if h is None else h)


class LSTMCell(_CellBase):
    """One LSTM step. ``forward(x, (h, c)=None)`` returns ``(h', c')`` (zeros by default).

    Weights are ``(4 * hidden_size, ·)`` with gates stacked as input, forget, cell, output.
    """

    _mode = "LSTM"

    def forward(self, x, hx=None):
        if hx is None:
            z = self._zeros(x)
            hx = (z, z)
        return self._step(x, tuple(hx))


class GRUCell(_CellBase):
    """One GRU step. ``forward(x, h=None)`` returns h'.

    Weights are ``(3 * hidden_size, ·)`` with gates stacked as reset, update, new.
    """

    _mode = "GRU"

    def forward(self, x, h=None):
        return self._step(x, self._zeros(x) if h is None else h)


class _RNNBase(Module):
    _mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        if num_layers < 1:
            raise ValueError(f"{name}: num_layers must be >= 1, got {num_layers}")
        if input_size < 0 or hidden_size < 1:
            raise ValueError(f"{name}: input_size must be >= 0 and hidden_size >= 1, got "
                             f"{input_size} and {hidden_size}")
        if not 0.0 <= dropout <= 1.0 or isinstance(dropout, bool):
            raise ValueError(f"{name}: dropout must be a probability in [0, 1], got {dropout!r}")
        if proj_size and self._mode != "LSTM":
            raise ValueError(f"{name}: proj_size is only supported for LSTM")
        if not 0 <= proj_size < hidden_size:
            raise ValueError(f"{name}: proj_size must be >= 0 and smaller than hidden_size, "
                             f"got {proj_size} and {hidden_size}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        dirs = 2 if bidirectional else 1
        g = _GATES[self._mode] * hidden_size
        out_size = proj_size or hidden_size   # the size of h (and of each direction's output)
        self._weight_names = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else out_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                names = [f"weight_ih{sfx}", f"weight_hh{sfx}"]
                setattr(self, names[0], init._empty_param((g, layer_in), device, dtype))
                setattr(self, names[1], init._empty_param((g, out_size), device, dtype))
                if bias:
                    names += [f"bias_ih{sfx}", f"bias_hh{sfx}"]
                    setattr(self, names[2], init._empty_param((g,), device, dtype))
                    setattr(self, names[3], init._empty_param((g,), device, dtype))
                if proj_size:
                    setattr(self, f"weight_hr{sfx}",
                            init._empty_param((proj_size, hidden_size), device, dtype))
                self._weight_names.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_uniform(self, self.hidden_size)

    def _weights(self, k):
        ws = [getattr(self, n) for n in self._weight_names[k]]
        return ws if self.bias else ws + [None, None]

    def _run_direction(self, steps, state, k, reverse):
        w_ih, w_hh, b_ih, b_hh = self._weights(k)
        w_hr = None
        if self.proj_size:
            w_hr = getattr(self, self._weight_names[k][0].replace("weight_ih", "weight_hr"))
        outs = [None] * len(steps)
        order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
        for t in order:
            state = _cell_step(self._mode, steps[t], state, w_ih, w_hh, b_ih, b_hh, w_hr)
            outs[t] = state[0] if self._mode == "LSTM" else state
        return outs, state

    def forward(self, x, hx=None):
        """Run over a sequence.

        Args:
            x: ``(T, N, input_size)`` (``(N, T, input_size)`` if batch_first) or unbatched
                ``(T, input_size)``.
            hx: initial state ``(num_layers * num_directions, N, hidden_size)`` (a pair
                ``(h_0, c_0)`` for LSTM); zeros when omitted.

        Returns:
            ``(output, h_n)`` (``(output, (h_n, c_n))`` for LSTM); output is
            ``(T, N, num_directions * hidden_size)`` (batch first if batch_first).
        """
        name = type(self).__name__
        unbatched = x.ndim == 2
        if unbatched:
            x = x.unsqueeze(1)
        elif x.ndim != 3:
            raise ValueError(f"{name}: expected a 2-D or 3-D input, got shape {x.shape}")
        elif self.batch_first:
            x = x.swapaxes(0, 1)
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input feature size {x.shape[-1]} (shape {x.shape}) != "
                             f"input_size {self.input_size}")
        dirs = 2 if self.bidirectional else 1
        lstm = self._mode == "LSTM"
        if hx is None:
            z = zeros((self.num_layers * dirs, x.shape[1], self.hidden_size), dtype=x.dtype,
                      device=x.device)
            h0 = z if not self.proj_size else zeros(
                (self.num_layers * dirs, x.shape[1], self.proj_size), dtype=x.dtype,
                device=x.device)
            hx = (h0, z) if lstm else z
        elif unbatched:
            hx = tuple(h.unsqueeze(1) for h in hx) if lstm else hx.unsqueeze(1)
        h_n, c_n = [], []
        # One split (whose backward is a single concat) instead of T getitems, each of whose
        # backward would allocate a full-size zero gradient.
        steps = [s.squeeze(0) for s in F.split(x, x.shape[0], axis=0)]
        for layer in range(self.num_layers):
            layer_outs = []
            for d in range(dirs):
                k = layer * dirs + d
                state = (hx[0][k], hx[1][k]) if lstm else hx[k]
                outs, state = self._run_direction(steps, state, k, reverse=bool(d))
                layer_outs.append(outs)
                if lstm:
                    h_n.append(state[0])
                    c_n.append(state[1])
                else:
                    h_n.append(state)
            if dirs == 1:
                steps = layer_outs[0]
            else:
                steps = [F.concat([f, b], axis=-1) for f, b in zip(*layer_outs)]
            if self.dropout and self.training and layer < self.num_layers - 1:
                steps = [F.dropout(s, self.dropout, True) for s in steps]
        output = F.stack(steps, axis=0)
        h_n = F.stack(h_n, axis=0)
        c_n = F.stack(c_n, axis=0) if lstm else None
        if unbatched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        elif self.batch_first:
            output = output.swapaxes(0, 1)
        return (output, (h_n, c_n)) if lstm else (output, h_n)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        return s

    def flatten_parameters(self) -> None:
        """A no-op, for PyTorch code that calls it: PyTorch repacks the weights into one
        contiguous cuDNN buffer; minigrad's recurrent layers loop over per-step ops and keep
        each weight as its own Parameter, so there is nothing to repack."""


class RNN(_RNNBase):
    """Elman RNN over a sequence (``nonlinearity`` "tanh" or "relu"); see ``LSTM.forward``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.__dict__["_mode"] = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(_RNNBase):
    """Multi-layer LSTM over a sequence, looping ``F.lstm_cell`` over time.

    Args:
        input_size, hidden_size: feature sizes.
        num_layers: stacked layers (each feeds the next).
        bias: learn ``bias_ih_l{k}``/``bias_hh_l{k}``.
        batch_first: inputs/outputs are ``(N, T, F)`` instead of ``(T, N, F)``.
        dropout: dropout on the outputs of every layer but the last, while training.
        bidirectional: add a reverse-time pass (``*_reverse`` parameters); outputs concatenate.
        proj_size: project h to this size after every step (``weight_hr_l{k}``); h and the
            outputs then have ``proj_size`` features, c keeps ``hidden_size``.

    ``forward(x, (h_0, c_0)=None)`` returns ``output, (h_n, c_n)``.
    """

    _mode = "LSTM"


class GRU(_RNNBase):
    """Multi-layer GRU over a sequence; ``forward(x, h_0=None)`` returns ``output, h_n``."""

    _mode = "GRU"
