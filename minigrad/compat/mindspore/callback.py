"""MindSpore's training callbacks (``mindspore.train.callback``): ``Callback``, ``RunContext``,
``LossMonitor``, ``TimeMonitor``, ``ModelCheckpoint`` with ``CheckpointConfig``, as
``Model.train`` drives them. Checkpoints are minigrad's safetensors files (``save_checkpoint``)."""

from __future__ import annotations

import math
import os
import time
import types

import numpy as np

from ...core.tensor import Tensor
from .checkpoint import save_checkpoint

__all__ = ["Callback", "CheckpointConfig", "LossMonitor", "ModelCheckpoint", "RunContext",
           "TimeMonitor"]


class RunContext:
    """What a callback sees: ``original_args()`` (the step's ``cb_params``) and
    ``request_stop()`` (training ends after the current step)."""

    def __init__(self, cb_params):
        self._cb_params = cb_params
        self._stop = False

    def original_args(self):
        return self._cb_params

    def request_stop(self) -> None:
        self._stop = True

    def get_stop_requested(self) -> bool:
        return self._stop


class Callback:
    """Override ``on_train_step_end`` & co. (MindSpore 2.x) or the older ``step_end`` & co.;
    by default each ``on_train_*`` calls its older name."""

    def begin(self, run_context): pass
    def epoch_begin(self, run_context): pass
    def epoch_end(self, run_context): pass
    def step_begin(self, run_context): pass
    def step_end(self, run_context): pass
    def end(self, run_context): pass

    def on_train_begin(self, run_context): self.begin(run_context)
    def on_train_epoch_begin(self, run_context): self.epoch_begin(run_context)
    def on_train_epoch_end(self, run_context): self.epoch_end(run_context)
    def on_train_step_begin(self, run_context): self.step_begin(run_context)
    def on_train_step_end(self, run_context): self.step_end(run_context)
    def on_train_end(self, run_context): self.end(run_context)
    def on_eval_begin(self, run_context): pass
    def on_eval_step_end(self, run_context): pass
    def on_eval_end(self, run_context): pass


def _loss_value(outputs) -> float:
    if isinstance(outputs, (tuple, list)):
        outputs = outputs[0]
    return float(np.mean(outputs.numpy() if isinstance(outputs, Tensor) else outputs))


def _step_in_epoch(cb) -> int:
    return (cb.cur_step_num - 1) % max(cb.batch_num, 1) + 1


class LossMonitor(Callback):
    """Print ``epoch: E step: S, loss is L`` every ``per_print_times`` steps; a NaN or infinite
    loss stops training with an error, as in MindSpore."""

    def __init__(self, per_print_times: int = 1):
        if not isinstance(per_print_times, int) or per_print_times < 0:
            raise ValueError(f"LossMonitor: per_print_times must be an int >= 0, got "
                             f"{per_print_times!r}")
        self._per_print_times = per_print_times

    def step_end(self, run_context):
        cb = run_context.original_args()
        loss = _loss_value(cb.net_outputs)
        step = _step_in_epoch(cb)
        if not math.isfinite(loss):
            raise ValueError(f"epoch: {cb.cur_epoch_num} step: {step}. Invalid loss {loss}, "
                             "terminating training.")
        if self._per_print_times and cb.cur_step_num % self._per_print_times == 0:
            print(f"epoch: {cb.cur_epoch_num} step: {step}, loss is {loss}", flush=True)


class TimeMonitor(Callback):
    """Print each epoch's time and time per step."""

    def __init__(self, data_size=None):
        self.data_size = data_size
        self._t0 = None

    def epoch_begin(self, run_context):
        self._t0 = time.perf_counter()

    def epoch_end(self, run_context):
        ms = (time.perf_counter() - self._t0) * 1e3
        steps = self.data_size or run_context.original_args().batch_num or 1
        print(f"epoch time: {ms:.3f} ms, per step time: {ms / steps:.3f} ms", flush=True)


class CheckpointConfig:
    """When ``ModelCheckpoint`` saves: every ``save_checkpoint_steps`` steps (or
    ``save_checkpoint_seconds``), keeping the newest ``keep_checkpoint_max`` files."""

    def __init__(self, save_checkpoint_steps: int = 1, save_checkpoint_seconds: int = 0,
                 keep_checkpoint_max: int = 5, keep_checkpoint_per_n_minutes: int = 0,
                 integrated_save: bool = True, async_save: bool = False, saved_network=None,
                 append_info=None, enc_key=None, enc_mode="AES-GCM", exception_save=False):
        if enc_key is not None:
            raise NotImplementedError("CheckpointConfig(enc_key=): encrypted checkpoints are "
                                      "not supported")
        if keep_checkpoint_per_n_minutes or append_info or exception_save:
            raise NotImplementedError("CheckpointConfig: keep_checkpoint_per_n_minutes, "
                                      "append_info and exception_save are not supported")
        self.save_checkpoint_steps = save_checkpoint_steps
        self.save_checkpoint_seconds = save_checkpoint_seconds
        self.keep_checkpoint_max = keep_checkpoint_max
        self.saved_network = saved_network


class ModelCheckpoint(Callback):
    """Save ``<directory>/<prefix>-<epoch>_<step>.ckpt`` as ``config`` says."""

    def __init__(self, prefix: str = "CKP", directory=None, config=None):
        self.prefix = prefix
        self.directory = os.fspath(directory) if directory is not None else os.getcwd()
        self.config = config or CheckpointConfig()
        self._saved: list = []
        self._last_time = time.monotonic()
        os.makedirs(self.directory, exist_ok=True)

    def step_end(self, run_context):
        cb = run_context.original_args()
        cfg = self.config
        due = (cfg.save_checkpoint_steps and cb.cur_step_num % cfg.save_checkpoint_steps == 0) \
            or (cfg.save_checkpoint_seconds
                and time.monotonic() - self._last_time >= cfg.save_checkpoint_seconds)
        if due:
            self._save(cb, f"{self.prefix}-{cb.cur_epoch_num}_{_step_in_epoch(cb)}.ckpt")

    def _save(self, cb, name: str) -> None:
        path = os.path.join(self.directory, name)
        save_checkpoint(self.config.saved_network or cb.network, path)
        self._last_time = time.monotonic()
        self._saved.append(path)
        while self.config.keep_checkpoint_max and len(self._saved) > \
                self.config.keep_checkpoint_max:
            old = self._saved.pop(0)
            if os.path.exists(old):
                os.remove(old)

    @property
    def latest_ckpt_file_name(self):
        return self._saved[-1] if self._saved else None


def namespace():
    """``minigrad.train.callback``."""
    mod = types.ModuleType("minigrad.train.callback", __doc__)
    for name in __all__:
        setattr(mod, name, globals()[name])
    mod.__all__ = list(__all__)
    return mod
