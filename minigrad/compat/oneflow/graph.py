"""OneFlow's ``nn.Graph``: a training step declared once, run with AMP and loss scaling.

A subclass registers modules and optimizers in ``__init__`` and writes the step in ``build``::

    class TrainGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model, self.loss_fn = model, loss_fn
            self.add_optimizer(optimizer)
            self.config.enable_amp(True)                       # float16 autocast
            self.set_grad_scaler(amp.GradScaler(init_scale=2**12, growth_interval=1000))

        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()                                    # scaled by the graph's scaler
            return loss

Calling the graph runs ``build`` (under ``amp.autocast`` when AMP is enabled); ``loss.backward()``
inside it does the scaled backward; then the graph unscales, checks for inf/NaN, steps every
optimizer (skipped on overflow), steps the lr schedulers, updates the scale and zeroes the
gradients, and returns what ``build`` returned.

With ``config.enable_cuda_graph()`` (off by default, as in OneFlow, until the capture path has
run on a GPU) the step runs as a CUDA graph on the GPU: the
first call runs ``_run_one_step`` eagerly as the warm-up and captures it for that call's input
signature (shapes, dtypes, devices); later calls with that signature copy their inputs into the
graph's static input buffers and replay it, returning the same output Tensors refilled. A step
that cannot be captured runs eagerly with one warning naming why: a GradScaler that reads its
found-inf flag on the host (use ``amp.GradScaler(sync_free=True)``), lr schedulers (host values
frozen at capture), Tensor keyword arguments, a different input signature than the captured one,
or a capture CUDA refused. On the CPU every call is eager (``_backend.cuda_graph.cpu_twin()``
lets tests drive the same logic with a NumPy stand-in of the capture).

How ``loss.backward()`` gets scaled: while ``build`` runs, the graph sets
``minigrad.core.modes.backward_seed``, which ``Tensor.backward`` applies to the loss first.



OneFlow's graph scaler never lets the scale fall below 1 (AMP_REFERENCE section 2):
``set_grad_scaler`` gives the scaler a floor of 1 (``min_scale``) if it has none.

``graph.config`` accepts every option a OneFlow user sets (see ``GraphConfig``); each either does
what it says or is a documented no-op of eager execution, never an AttributeError.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import OrderedDict

import numpy as np

from ... import functional as F
from ..._backend import cuda_graph
from ..._backend.dtypes import bfloat16, float16, normalize_dtype
from ...amp.autocast import autocast
from ...core.modes import backward_seed
from ...core.tensor import Tensor
from ...nn.module import Module

__all__ = ["Graph", "GraphConfig"]

_MAX_RECAPTURES = 3  # hyperparameter changes that recapture the step before it stays eager

class _Run:
    """State of one ``Graph`` call: its scaler and whether ``build`` called backward."""

    __slots__ = ("backward_called", "scaler", "loss_factor")

    def __init__(self, scaler, loss_factor=1.0):
        self.scaler = scaler
        self.backward_called = False
        self.loss_factor = loss_factor   # 1 / gradient-accumulation steps

    def seed(self, loss):
        """The tensor ``loss.backward()`` differentiates inside ``build`` (``modes.backward_seed``):
        the loss over the accumulation steps, scaled by the graph's scaler."""
        self.backward_called = True
        if self.loss_factor != 1.0:
            loss = loss * self.loss_factor
        scaler = self.scaler
        if scaler is None or not scaler.is_enabled():
            return loss
        return scaler.scale(loss)


class GraphConfig:
    """``graph.config``: the options a OneFlow user sets on an ``nn.Graph``.

    Acting in minigrad: ``enable_amp``, ``set_gradient_accumulation_steps``,
    ``enable_cuda_graph``. Accepted, recorded
    and documented no-ops of eager execution (the result is the same with or without them):
    ``allow_fuse_add_to_output``, ``allow_fuse_model_update_ops``, ``allow_fuse_cast_scale``
    (minigrad's unscale is already one fused multiply + check per dtype group),
    ``enable_zero`` (one process holds the whole optimizer state: nothing to shard),
    ``enable_cudnn_conv_heuristic_search_algo`` (the CPU conv path has no algorithm search).
    """

    def __init__(self):
        self.amp_enabled = False
        self.amp_dtype = float16
        self.gradient_accumulation_steps = 1
        self.fuse_add_to_output = False
        self.fuse_model_update_ops = False
        self.fuse_cast_scale = False
        self.zero = None                 # (stage, shard_min_size, shard_restore_level) or None
        self.cudnn_conv_heuristic_search_algo = True
        self.cuda_graph = False          # the capture path has not run on a GPU yet

    def enable_cuda_graph(self, mode: bool = True) -> None:
        """Run the step as a CUDA graph on the GPU (default off, as in OneFlow): ``False``
        keeps every call eager. No effect on the CPU."""
        self.cuda_graph = bool(mode)

    def enable_amp(self, mode: bool = True, *, dtype=float16) -> None:
        """Run ``build`` under ``amp.autocast(dtype=dtype)`` (``"float16"`` or ``"bfloat16"``)."""
        dtype = normalize_dtype(dtype)
        if dtype not in (float16, bfloat16):
            raise ValueError(f"Graph.config.enable_amp: dtype must be float16 or bfloat16, got "
                             f"{dtype}")
        self.amp_enabled = bool(mode)
        self.amp_dtype = dtype

    def set_gradient_accumulation_steps(self, value: int) -> None:
        """Split each call's Tensor inputs into ``value`` micro-batches along dim 0, run
        ``build`` on each (gradients accumulate, each backward scaled by ``1/value`` so a mean
        loss gives the full batch's gradient) and step the optimizers once. The call returns
        the micro-batch outputs joined: batched Tensors concatenated along dim 0, 0-d Tensors
        (a loss) averaged."""
        if int(value) != value or value < 1:
            raise ValueError(f"Graph.config.set_gradient_accumulation_steps: expected an int "
                             f">= 1, got {value!r}")
        self.gradient_accumulation_steps = int(value)

    def allow_fuse_add_to_output(self, mode: bool = True) -> None:
        """Accepted no-op (eager execution fuses nothing; results are the same)."""
        self.fuse_add_to_output = bool(mode)

    def allow_fuse_model_update_ops(self, mode: bool = True) -> None:
        """Accepted no-op (each optimizer updates its parameters in one pass already)."""
        self.fuse_model_update_ops = bool(mode)

    def allow_fuse_cast_scale(self, mode: bool = True) -> None:
        """Accepted no-op (the unscale is already one fused multiply + inf/NaN check)."""
        self.fuse_cast_scale = bool(mode)

    def enable_zero(self, mode: bool = True, *, stage: int = 1, shard_min_size: int = 1024,
                    shard_restore_level: int = 1) -> None:
        """Accepted no-op: ZeRO shards optimizer state across ranks, and a Graph runs in one
        process (use ``minigrad.distributed`` for data-parallel training)."""
        if stage not in (1, 2, 3):
            raise ValueError(f"Graph.config.enable_zero: stage must be 1, 2 or 3, got {stage!r}")
        self.zero = (stage, shard_min_size, shard_restore_level) if mode else None

    def enable_cudnn_conv_heuristic_search_algo(self, mode: bool = True) -> None:
        """Accepted no-op (no convolution algorithm search on minigrad's paths)."""
        self.cudnn_conv_heuristic_search_algo = bool(mode)

    def __repr__(self) -> str:
        extra = (f", gradient_accumulation_steps={self.gradient_accumulation_steps}"
                 if self.gradient_accumulation_steps > 1 else "")
        return f"GraphConfig(amp={self.amp_enabled}, dtype={self.amp_dtype}{extra})"


def _micro_batches(args, n):
    """Split every Tensor argument into ``n`` equal parts along dim 0 (others are repeated)."""
    for a in args:
        if isinstance(a, Tensor) and (a.ndim == 0 or a.shape[0] % n):
            raise ValueError(f"Graph: gradient accumulation over {n} steps needs every Tensor "
                             f"input's dim 0 divisible by {n}, got shape {a.shape}")
    return [tuple(a[i * (a.shape[0] // n):(i + 1) * (a.shape[0] // n)]
                  if isinstance(a, Tensor) else a for a in args) for i in range(n)]


def _join(outs):
    """Micro-batch outputs as one: batched Tensors concatenated, 0-d Tensors averaged."""
    first = outs[0]
    if isinstance(first, Tensor):
        if first.ndim == 0:
            total = outs[0]
            for o in outs[1:]:
                total = total + o
            return total * (1.0 / len(outs))
        return F.concat(list(outs), 0)
    if isinstance(first, (tuple, list)):
        return type(first)(_join(list(parts)) for parts in zip(*outs))
    return outs[-1]


class Graph:
    """Base class of a OneFlow-style training (or evaluation) step; see the module docstring.

    Subclasses call ``super().__init__()`` first, then set modules as attributes, call
    ``add_optimizer``/``set_grad_scaler``/``config.enable_amp``, and implement ``build``.
    """

    def __init__(self):
        d = self.__dict__
        d["_modules"] = OrderedDict()
        d["_optimizers"] = []
        d["_lr_schedulers"] = []
        d["_grad_scaler"] = None
        d["config"] = GraphConfig()
        d["_signatures"] = {}   # input signature -> number of calls
        d["_captured"] = None   # (signature, captured step) once a CUDA graph exists
        d["_capture_warned"] = set()

    def __setattr__(self, name, value):
        if "_modules" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() in __init__ "
                                 "before assigning attributes")
        if isinstance(value, Module):
            self._modules[name] = value
        else:
            self._modules.pop(name, None)
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ configuration
    def add_optimizer(self, optimizer, *, lr_sch=None) -> None:
        """Step ``optimizer`` (and ``lr_sch``, if given) after every call whose build ran
        backward."""
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(f"Graph.add_optimizer: expected a minigrad optimizer, got "
                            f"{type(optimizer).__name__}")
        self._optimizers.append(optimizer)
        if lr_sch is not None:
            self._lr_schedulers.append(lr_sch)

    def set_grad_scaler(self, grad_scaler) -> None:
        """Scale ``loss.backward()`` inside ``build`` with ``grad_scaler`` (``amp.GradScaler``
        or ``amp.StaticGradScaler``) and skip steps whose gradients overflow."""
        for meth in ("scale", "step", "update", "is_enabled", "state_dict"):
            if not hasattr(grad_scaler, meth):
                raise TypeError(f"Graph.set_grad_scaler: expected amp.GradScaler or "
                                f"amp.StaticGradScaler, got {type(grad_scaler).__name__}")
        # OneFlow's graph scale never falls below 1: give the scaler that floor (through its
        # checkpoint API) unless it already has one.
        state = grad_scaler.state_dict()
        if state and state.get("min_scale") is None:
            state["min_scale"] = 1.0
            grad_scaler.load_state_dict(state)
        self.__dict__["_grad_scaler"] = grad_scaler

    @property
    def grad_scaler(self):
        return self._grad_scaler

    @property
    def optimizers(self) -> list:
        return list(self._optimizers)

    @property
    def training(self) -> bool:
        """A graph with an optimizer is a training graph."""
        return bool(self._optimizers)

    def modules(self):
        """The registered modules and their descendants."""
        seen = set()
        for m in self._modules.values():
            for sub in m.modules():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield sub

    def build(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement build(self, *args)")

    # ------------------------------------------------------------------ running
    def __call__(self, *args, **kwargs):
        sig = tuple((tuple(a.shape), str(a.dtype), a.device) if isinstance(a, Tensor)
                    else type(a).__name__ for a in args)
        self._signatures[sig] = self._signatures.get(sig, 0) + 1
        backend = self._capture_backend(sig, args, kwargs)
        if backend is None:
            return self._run_one_step(args, kwargs)
        return self._captured_call(backend, sig, args, kwargs)

    # ------------------------------------------------------------------ CUDA graph
    def _warn_capture(self, reason: str) -> None:
        if reason not in self._capture_warned:
            self._capture_warned.add(reason)
            warnings.warn(f"{type(self).__name__}: running the step eagerly, not as a CUDA "
                          f"graph: {reason}", RuntimeWarning, stacklevel=4)

    def _capture_backend(self, sig, args, kwargs):
        """The capture backend for this call, or None to run it eagerly (warning once why,
        unless capture is off or the inputs are not on a device that captures)."""
        if not self.config.cuda_graph:
            return None
        backend = cuda_graph.backend_for([a._data for a in args if isinstance(a, Tensor)])
        if backend is None:
            return None
        scaler = self._grad_scaler if self.training else None
        reason = None
        if scaler is not None and scaler.is_enabled() and not getattr(scaler, "_sync_free",
                                                                      False):
            reason = (f"{type(scaler).__name__} reads its found-inf flag on the host every step; "
                      "set a sync-free scaler (amp.GradScaler(..., sync_free=True))")
        elif self._lr_schedulers:
            reason = ("lr schedulers change the learning rate on the host, which a graph would "
                      "replay frozen; step the schedule outside the graph or disable "
                      "config.enable_cuda_graph")
        elif any(isinstance(v, Tensor) for v in kwargs.values()):
            reason = "Tensor keyword arguments are not captured; pass Tensors positionally"
        elif self._captured is not None and self._captured[0] != sig:
            reason = (f"inputs {sig} differ from the captured signature {self._captured[0]}; "
                      "CUDA graphs need static shapes and dtypes")
        if reason is not None:
            self._warn_capture(reason)
            return None
        return backend

    def _hyperparameters(self) -> tuple:
        """Every optimizer's hyperparameters: a captured step bakes them into its kernels."""
        return tuple(tuple((k, v) for k, v in g.items() if k != "params")
                     for opt in self._optimizers for g in opt.param_groups)

    def _captured_call(self, backend, sig, args, kwargs):
        arrays = [a._data for a in args if isinstance(a, Tensor)]
        if self._captured is not None:
            step = self._captured[1]
            if step is None:                  # capture failed for this signature: eager
                return self._run_one_step(args, kwargs)
            if self._captured[2] != self._hyperparameters():
                return self._recapture(backend, sig, args, kwargs)
            try:
                return step.replay(*arrays)
            except cuda_graph.CaptureError as e:  # only the NumPy twin detects errors this late
                return self._capture_failed(sig, e, args, kwargs)
        # First call with this signature: the warm-up inside capture() is this call's step, run
        # on copies that become the graph's static input buffers.
        static_args = tuple(Tensor._make(a._data.copy(), a.requires_grad, None, 0)
                            if isinstance(a, Tensor) else a for a in args)
        static = [a._data for a in static_args if isinstance(a, Tensor)]
        hyper = self._hyperparameters()
        try:
            step = backend.capture(lambda: self._run_one_step(static_args, kwargs), static,
                                   warmup=1)
        except cuda_graph.CaptureError as e:
            return self._capture_failed(sig, e, args, kwargs)
        self.__dict__["_captured"] = (sig, step, hyper)
        return step.warmup_output

    def _recapture(self, backend, sig, args, kwargs):
        """A hyperparameter (a learning rate set by hand, say) changed since the capture, and
        the graph holds the old value: capture again, or stay eager if it keeps changing."""
        self.__dict__["_recaptures"] = self.__dict__.get("_recaptures", 0) + 1
        if self._recaptures > _MAX_RECAPTURES:
            self.__dict__["_captured"] = (sig, None, None)
            self._warn_capture("optimizer hyperparameters changed after each of "
                               f"{_MAX_RECAPTURES} captures (a hand-written schedule?); each "
                               "change needs a new graph, so the step runs eagerly")
            return self._run_one_step(args, kwargs)
        self.__dict__["_captured"] = None
        return self._captured_call(backend, sig, args, kwargs)

    def _capture_failed(self, sig, error, args, kwargs):
        self.__dict__["_captured"] = (sig, None, None)
        self._warn_capture(f"capture failed: {error}")
        for opt in self._optimizers:          # drop gradients the failed attempt left behind
            opt.zero_grad()
        if getattr(error, "warmup_output", None) is not None:
            return error.warmup_output        # the warm-up already did this call's step
        return self._run_one_step(args, kwargs)

    def _run_one_step(self, args, kwargs):
        # Everything one step does happens in this method: it is what a CUDA graph captures.
        scaler = self._grad_scaler if self.training else None
        n = self.config.gradient_accumulation_steps
        run = _Run(scaler, 1.0 / n)
        seed_token = backward_seed.set(run.seed)
        try:
            # float16 overflow under a too-high scale is expected and handled by the scaler
            # (the step is skipped): no NumPy RuntimeWarning for it.
            with np.errstate(over="ignore", invalid="ignore") if scaler is not None \
                    and scaler.is_enabled() else contextlib.nullcontext():
                if n == 1:
                    out = self._build(args, kwargs)
                else:
                    out = _join([self._build(a, kwargs) for a in _micro_batches(args, n)])
        finally:
            backward_seed.reset(seed_token)
        if self.training and run.backward_called:
            self._update(scaler)
        return out

    def _build(self, args, kwargs):
        if self.config.amp_enabled:
            with autocast(dtype=self.config.amp_dtype):
                return self.build(*args, **kwargs)
        return self.build(*args, **kwargs)

    def _update(self, scaler) -> None:
        if scaler is not None and scaler.is_enabled():
            for opt in self._optimizers:
                scaler.step(opt)          # skipped (params and state unchanged) on inf/NaN
            scaler.update()
        else:
            for opt in self._optimizers:
                opt.step()
        for sch in self._lr_schedulers:
            sch.step()
        for opt in self._optimizers:
            opt.zero_grad()

    # ------------------------------------------------------------------ state / repr
    def state_dict(self) -> dict:
        """Modules, optimizers and grad scaler state, for ``mg.save``."""
        sd = {"modules": {n: m.state_dict() for n, m in self._modules.items()},
              "optimizers": [opt.state_dict() for opt in self._optimizers]}
        if self._grad_scaler is not None:
            sd["grad_scaler"] = self._grad_scaler.state_dict()
        return sd

    def load_state_dict(self, state: dict) -> None:
        """Restore a ``state_dict()``. A captured CUDA graph is dropped (the next call captures
        again): the restored parameters and optimizer state may live in new arrays."""
        mods, opts = state.get("modules", {}), state.get("optimizers", [])
        if set(mods) != set(self._modules) or len(opts) != len(self._optimizers):
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: the state holds modules {sorted(mods)} "
                f"and {len(opts)} optimizer(s), this graph has {sorted(self._modules)} and "
                f"{len(self._optimizers)}; nothing was loaded")
        self.__dict__["_captured"] = None
        for n, msd in mods.items():
            self._modules[n].load_state_dict(msd)
        for opt, osd in zip(self._optimizers, opts):
            opt.load_state_dict(osd)
        if self._grad_scaler is not None and state.get("grad_scaler"):
            self._grad_scaler.load_state_dict(state["grad_scaler"])

    def __repr__(self) -> str:
        lines = [f"(config): {self.config!r}"]
        if self._grad_scaler is not None:
            lines.append(f"(grad_scaler): {self._grad_scaler!r}")
        for name, m in self._modules.items():
            lines.append(f"({name}): " + repr(m).replace("\n", "\n  "))
        for i, opt in enumerate(self._optimizers):
            lines.append(f"(optimizer{i}): " + repr(opt).replace("\n", "\n  "))
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"
