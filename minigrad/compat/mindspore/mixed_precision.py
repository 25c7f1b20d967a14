"""MindSpore's ``mindspore.amp`` functional API as thin adapters over minigrad's mechanism.

* ``DynamicLossScaler`` / ``StaticLossScaler``: ``scale(x)``, ``unscale(x)``, ``adjust(finite)``
  and ``scale_value``; the update rule is ``GradScaler``'s (``min_scale=1``: MindSpore's
  ``max(scale / factor, 1)``), fed through ``o_levels.feed_overflow``.
* ``all_finite(inputs)``: one bool Tensor, one host read.
* ``auto_mixed_precision(net, amp_level)`` / ``custom_mixed_precision(net, white_list=,
  black_list=)``: per-module precision (``Module.to_float``) chosen from MindSpore's lists
  (``get_white_list()`` / ``get_black_list()``, copies the user may edit); ``"auto"`` runs the
  network under ``autocast`` (the op policy table).

Example:
    >>> import minigrad as mg
    >>> from minigrad import amp
    >>> scaler = amp.DynamicLossScaler(scale_value=2 ** 10, scale_factor=2, scale_window=1)
    >>> grads = (mg.tensor([float("nan"), 1.0], dtype="float16"),
    ...          mg.tensor([0.2], dtype="float16"))
    >>> scaler.adjust(amp.all_finite(scaler.unscale(grads)))
    True
    >>> float(scaler.scale_value.item())
    512.0
"""

from __future__ import annotations

import numpy as np

from ... import _backend as B
from ..._backend.dtypes import bfloat16, float16, float32, normalize_dtype
from ...nn import activation, conv, linear, norm, rnn
from ...nn.module import Module
from ...core.tensor import Tensor
from ...amp.autocast import autocast
from ...amp.grad_scaler import GradScaler, StaticGradScaler
from .cell import Dense
from .loss_scale import feed_overflow

__all__ = ["DynamicLossScaler", "StaticLossScaler", "all_finite", "auto_mixed_precision",
           "custom_mixed_precision", "get_black_list", "get_white_list"]


# ---------------------------------------------------------------------------- loss scalers
def _map(inputs, fn):
    if isinstance(inputs, Tensor):
        return fn(inputs)
    if isinstance(inputs, (list, tuple)):
        return type(inputs)(_map(x, fn) for x in inputs)
    raise TypeError(f"expected a Tensor or a tuple/list of Tensors, got {type(inputs).__name__}")


class StaticLossScaler:
    """MindSpore ``amp.StaticLossScaler(scale_value)``: a fixed scale.

    Args:
        scale_value: the loss scale (> 0).
    """

    def __init__(self, scale_value):
        self._scaler = StaticGradScaler(float(scale_value))

    @property
    def scale_value(self) -> Tensor:
        """The current scale as a float32 scalar Tensor (MindSpore's Parameter)."""
        return Tensor._make(np.asarray(self._scaler.get_scale(), np.float32), False, None, 0)

    def scale(self, inputs):
        """``inputs * scale_value`` (a Tensor or a tuple of Tensors: loss or gradients)."""
        s = self._scaler.get_scale()
        return _map(inputs, lambda x: x * s)

    def unscale(self, inputs):
        """``inputs / scale_value``, the inverse computed in float64 (as ``GradScaler``)."""
        inv = 1.0 / self._scaler.get_scale()
        return _map(inputs, lambda x: x * inv)

    def adjust(self, grads_finite) -> bool:
        """A static scale never changes: returns False."""
        return False


class DynamicLossScaler(StaticLossScaler):
    """MindSpore ``amp.DynamicLossScaler(scale_value, scale_factor, scale_window)``.

    ``adjust(grads_finite)``: on overflow ``scale = max(scale / scale_factor, 1)`` and the
    counter resets; after ``scale_window`` finite steps in a row ``scale *= scale_factor``.
    """

    def __init__(self, scale_value, scale_factor, scale_window):
        if scale_factor <= 1:
            raise ValueError(f"DynamicLossScaler: scale_factor must be > 1, got {scale_factor}")
        if int(scale_window) < 1:
            raise ValueError(f"DynamicLossScaler: scale_window must be >= 1, got {scale_window}")
        self.scale_factor = scale_factor
        self.scale_window = int(scale_window)
        self._scaler = GradScaler(init_scale=float(scale_value), growth_factor=scale_factor,
                                  backoff_factor=1.0 / scale_factor,
                                  growth_interval=int(scale_window), min_scale=1.0)

    def adjust(self, grads_finite) -> bool:
        """Apply the rule for one step whose gradients were (not) finite; returns True."""
        finite = bool(grads_finite.item()) if isinstance(grads_finite, Tensor) \
            else bool(grads_finite)
        feed_overflow(self._scaler, not finite)
        return True


def all_finite(inputs) -> Tensor:
    """Whether every element of ``inputs`` (a Tensor or a tuple of them) is finite.

    Returns:
        A bool scalar Tensor (``if all_finite(grads):`` reads it once).
    """
    ts = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    flags = [B.get_array_module(t._data).isfinite(t._data).all() for t in ts if t is not None]
    if not flags:
        return Tensor._make(np.asarray(True), False, None, 0)
    xp = B.get_array_module(flags[0])
    return Tensor._make(xp.asarray(xp.stack(flags).all()), False, None, 0)


# ---------------------------------------------------------------------------- precision lists
def get_white_list() -> list:
    """A copy of MindSpore's O1 white list, as minigrad module classes: these run in float16
    at O1 (``nn.Linear`` with MindSpore's ``nn.Dense``, its subclass)."""
    return [conv.Conv1d, conv.Conv2d, conv.ConvTranspose2d, Dense, linear.Linear, rnn.LSTMCell,
            rnn.RNNCell, rnn.GRUCell, activation.PReLU, activation.ReLU]


def get_black_list() -> list:
    """A copy of MindSpore's O2 black list: these keep float32 at O2."""
    return [norm.BatchNorm1d, norm.BatchNorm2d, norm.LayerNorm]


def _low_dtype(dtype, who):
    dtype = normalize_dtype(dtype)
    if dtype not in (float16, bfloat16):
        raise ValueError(f"{who}: dtype must be float16 or bfloat16, got {dtype}")
    return dtype


def _check_network(network, who):
    if not isinstance(network, Module):
        raise TypeError(f"{who}: network must be an nn.Module (nn.Cell), got "
                        f"{type(network).__name__}")


def _check_classes(classes, who, what):
    for c in classes:
        if not (isinstance(c, type) and issubclass(c, Module)):
            raise TypeError(f"{who}: {what} entries must be nn.Module classes, got {c!r}; "
                            "for single ops use amp.autocast(fp16_ops=..., fp32_ops=...)")
    return tuple(classes)


def _apply_lists(network, dtype, white=None, black=None):
    """White list: only those modules run in ``dtype``. Black list: the whole network runs in
    ``dtype`` except those modules, which keep float32."""
    if white is not None:
        for m in network.modules():
            if isinstance(m, white):
                m.to_float(dtype)
        return network
    network.to_float(dtype)
    for m in network.modules():
        if black and isinstance(m, black):
            m.to_float(float32)
    return network


class _AutocastCell(Module):
    """``auto_mixed_precision(net, "auto")``: ``net`` run under ``autocast``."""

    def __init__(self, network, dtype):
        super().__init__()
        self.network = network
        self.amp_dtype = dtype

    def forward(self, *args, **kwargs):
        with autocast(dtype=self.amp_dtype):
            return self.network(*args, **kwargs)


def auto_mixed_precision(network, amp_level: str = "O0", dtype=float16):
    """MindSpore ``amp.auto_mixed_precision``: set per-module precision from a level.

    Args:
        network: the model.
        amp_level: ``"O0"`` nothing; ``"O1"`` the white-list modules in ``dtype``; ``"O2"`` all
            in ``dtype`` but the black-list modules (float32); ``"O3"`` all in ``dtype``;
            ``"auto"`` every op per minigrad's autocast policy table.
        dtype: ``float16`` or ``bfloat16``.

    Returns:
        The network, its modules' precision set in place (for ``"auto"`` a module wrapping it).
        Parameters stay float32 (cast per op); use ``build_train_network`` for a float16 model
        with master weights.
    """
    who = "auto_mixed_precision"
    _check_network(network, who)
    dtype = _low_dtype(dtype, who)
    if amp_level == "O0":
        return network
    if amp_level == "O1":
        return _apply_lists(network, dtype, white=tuple(get_white_list()))
    if amp_level == "O2":
        return _apply_lists(network, dtype, black=tuple(get_black_list()))
    if amp_level == "O3":
        return network.to_float(dtype)
    if amp_level == "auto":
        return _AutocastCell(network, dtype)
    raise ValueError(f"{who}: amp_level must be 'O0', 'O1', 'O2', 'O3' or 'auto', got "
                     f"{amp_level!r}")


def custom_mixed_precision(network, *, white_list=None, black_list=None, dtype=float16):
    """MindSpore ``amp.custom_mixed_precision``: exactly one of the lists (of module classes).

    ``white_list``: modules of those classes run in ``dtype``, the rest as before;
    ``black_list``: everything runs in ``dtype`` except modules of those classes (float32).
    """
    who = "custom_mixed_precision"
    _check_network(network, who)
    if (white_list is None) == (black_list is None):
        raise ValueError(f"{who}: give exactly one of white_list and black_list")
    dtype = _low_dtype(dtype, who)
    if white_list is not None:
        return _apply_lists(network, dtype, white=_check_classes(white_list, who, "white_list"))
    return _apply_lists(network, dtype, black=_check_classes(black_list, who, "black_list"))
