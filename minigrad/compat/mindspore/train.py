"""MindSpore's ``mindspore.train`` namespace, importable as ``minigrad.train``:
``from minigrad.train import amp, Model``, ``minigrad.train.callback`` and the callbacks and
metrics MindSpore 2.x also serves there."""

from ... import amp
from . import callback as _callback
from .callback import (
    Callback, CheckpointConfig, LossMonitor, ModelCheckpoint, RunContext, TimeMonitor,
)
from .metrics import Accuracy, Loss, Metric
from .model import Model

callback = _callback.namespace()

__all__ = ["Accuracy", "Callback", "CheckpointConfig", "Loss", "LossMonitor", "Metric", "Model",
           "ModelCheckpoint", "RunContext", "TimeMonitor", "amp", "callback"]
