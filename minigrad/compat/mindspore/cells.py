"""MindSpore's training cells: ``WithLossCell``, ``TrainOneStepWithLossScaleCell`` and
``TrainOneStepCell``.

``WithLossCell(net, loss_fn)`` is a module computing ``loss_fn(net(data), label)``.
``TrainOneStepWithLossScaleCell(net_with_loss, optimizer, scale_sense)`` is one training step as
a module: ``loss, overflow, scale = cell(data, label)`` runs the forward, scaled backward,
overflow check and update. ``TrainOneStepCell(net_with_loss, optimizer, sens=1.0)`` is the same
step with a fixed scale, returning only the loss. The loss-scaling itself is ``minigrad.amp``'s
(a loss-scale manager over ``GradScaler``, ``loss_scale.py``).
"""

from __future__ import annotations

import contextlib
import inspect

import numpy as np

from ...core.tensor import Tensor
from ...nn.module import Module
from .loss_scale import FixedLossScaleManager, _as_manager, _with_masters

__all__ = ["TrainOneStepCell", "TrainOneStepWithLossScaleCell", "WithLossCell"]


class WithLossCell(Module):
    """``loss_fn(backbone(data), label)`` as one module.

    Args:
        backbone: the network.
        loss_fn: a loss module or a function ``loss_fn(output, label) -> Tensor``.
    """

    def __init__(self, backbone, loss_fn):
        super().__init__()
        self.backbone = backbone
        self.loss_fn = loss_fn

    @property
    def backbone_network(self):
        """MindSpore's accessor for the wrapped network."""
        return self.backbone

    def forward(self, data, label):
        return self.loss_fn(self.backbone(data), label)


_n_positional_cache: dict = {}


def _n_positional(network):
    """How many positional inputs ``network.forward`` takes (None when it takes ``*args``)."""
    cls = type(network)
    n = _n_positional_cache.get(cls, -1)
    if n == -1:
        n = 0
        for prm in inspect.signature(network.forward).parameters.values():
            if prm.kind is prm.VAR_POSITIONAL:
                n = None
                break
            if prm.kind in (prm.POSITIONAL_ONLY, prm.POSITIONAL_OR_KEYWORD):
                n += 1
        _n_positional_cache[cls] = n
    return n


class TrainOneStepWithLossScaleCell(Module):
    """One training step with loss scaling (MindSpore's cell of the same name).

    Args:
        network: a module returning the loss (e.g. ``WithLossCell(net, loss_fn)``).
        optimizer: the optimizer; one over float16/bfloat16 parameters is wrapped with fp32
            master weights (``amp.master_weights``).
        scale_sense: None (a fixed scale of 1; overflowed updates are still skipped), a Tensor
            or number (a fixed scale), or ``amp.DynamicLossScaleManager`` /
            ``amp.FixedLossScaleManager``.

    Calling it: ``loss, overflow, scale = cell(*inputs)`` as in MindSpore: the float32 loss, a
    bool Tensor (the step overflowed and was skipped) and a float32 Tensor (the scale now, or
    the per-call ``scaling_sens``). One extra trailing Tensor beyond what ``network`` takes (or
    ``sens=``) is that ``scaling_sens``: that step runs with that scale.
    ``cell.overflow`` (a bool) and ``cell.loss_scale`` (a float) hold the same facts.
    """

    def __init__(self, network, optimizer, scale_sense=None):
        super().__init__()

        self.network = network
        self.optimizer = _with_masters(optimizer)
        self.loss_scale_manager = _as_manager(scale_sense)
        self.autocast = None  # a context manager around the forward (build_train_network O1)
        self.level = None
        self.overflow = False

    @property
    def loss_scale(self) -> float:
        """The manager's current loss scale."""
        return self.loss_scale_manager.get_loss_scale()

    def forward(self, *inputs, sens=None):
        n = _n_positional(self.network)
        if sens is None and n is not None and len(inputs) == n + 1 \
                and isinstance(inputs[-1], Tensor):
            inputs, sens = inputs[:-1], inputs[-1]
        ctx = self.autocast if self.autocast is not None else contextlib.nullcontext()

        def run():
            with ctx:
                return self.network(*inputs)

        try:
            loss, self.overflow = self.loss_scale_manager.train_step(run, self.optimizer, sens)
        except FloatingPointError:
            self.overflow = True   # refused an overflowed update (drop_overflow_update=False)
            raise
        scale = sens if sens is not None else self.loss_scale
        scale = np.asarray(scale.numpy() if isinstance(scale, Tensor) else scale, np.float32)
        return (loss, Tensor._make(np.asarray(self.overflow), False, None, 0),
                Tensor._make(scale.reshape(()), False, None, 0))

    def extra_repr(self) -> str:
        level = f"level={self.level}, " if self.level else ""
        return f"{level}{self.loss_scale_manager!r}"


class TrainOneStepCell(TrainOneStepWithLossScaleCell):
    """MindSpore's ``nn.TrainOneStepCell``: one step with a fixed gradient scale ``sens``.

    ``loss = cell(*inputs)``. MindSpore applies every update; an update whose gradients hold
    inf/NaN raises ``FloatingPointError`` here instead, with parameters unchanged (a
    ``FixedLossScaleManager(sens, drop_overflow_update=False)`` step).
    """

    def __init__(self, network, optimizer, sens: float = 1.0):

        super().__init__(network, optimizer,
                         scale_sense=FixedLossScaleManager(sens, drop_overflow_update=False))

    def forward(self, *inputs, sens=None):
        return super().forward(*inputs, sens=sens)[0]
