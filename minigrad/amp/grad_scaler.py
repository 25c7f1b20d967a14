"""Dynamic loss scaling: ``GradScaler`` (PyTorch and MegEngine APIs) and ``StaticGradScaler``.

Update rule (AMP_REFERENCE section 2), applied once per iteration by ``update()``:

* inf/NaN found by any ``unscale``/``unscale_``/``step`` of the iteration:
  ``scale *= backoff_factor`` (not below ``min_scale``) and the growth tracker resets to 0;
* otherwise ``tracker += 1`` and when ``tracker == growth_interval``:
  ``scale *= growth_factor`` (capped at float32 max) and ``tracker = 0``;
* ``growth_interval == 0`` is a static scale (MegEngine): never changed, overflowing steps are
  still skipped.

The scale is a Python float (never float16). Unscaling multiplies each gradient by
``1 / scale`` computed in float64 and applied in float32, and checks every gradient (plus the
losses passed to ``scale``/``backward``) for inf/NaN with one host synchronisation: the
per-tensor flags stay on the device and are reduced to one array that is read once.

Telemetry (``last_step_skipped``, ``skipped_steps``, ``history``) records each iteration with a
reason: ``"nonfinite_loss"`` when the loss itself was inf/NaN before backward (a model or data
problem: lowering the scale will not help), ``"grad_overflow"`` when only gradients overflowed
(the normal signal that the scale is too high).
"""

from __future__ import annotations

import collections
import math
import warnings

import numpy as np

from .. import _backend as B
from . import _ranks
from .._backend.fused import unscale_and_check
from ..autodiff.engine import default_grad
from ..functional.cast import cast
from ..tensor import Tensor

__all__ = ["GradScaler", "StaticGradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"
_F32_MAX = float(np.finfo(np.float32).max)
_make = Tensor._make


def _optimizer_params(opt) -> list:
    groups = getattr(opt, "param_groups", None)
    if groups is None:
        raise TypeError(f"GradScaler: {type(opt).__name__} has no param_groups; pass a "
                        "minigrad optimizer (SGD, Adam, ...)")
    return [p for g in groups for p in g["params"]]


class GradScaler:
    """Scale the loss so small float16 gradients do not flush to zero, then unscale and skip
    steps whose gradients overflowed.

    Args:
        init_scale: initial scale.
        growth_factor: multiplier applied after ``growth_interval`` clean iterations.
        backoff_factor: multiplier applied after an iteration with inf/NaN gradients.
        growth_interval: clean iterations between growths; 0 keeps the scale static.
        enabled: False turns every method into a pass-through.
        min_scale: the scale never backs off below this (None: no floor).
        max_consecutive_skips: warn after this many skipped iterations in a row (None: 50).
        debug_overflow: ``True``/``"raise"`` or ``"warn"``: while the scaler lives, check every
            backward pass for the first op that made inf/NaN and raise/warn naming it
            (``minigrad.amp.debug``); ``history`` entries then carry its location in ``where``.

    PyTorch usage::

        scaler.scale(loss).backward()
        scaler.unscale_(opt)                  # optional: clip unscaled gradients here
        scaler.step(opt)                      # returns None when it skipped
        scaler.update()

    MegEngine usage::

        with gm:
            loss = ...
            scaler.backward(gm, loss)          # scale, backward, unscale, update
        opt.step().clear_grad()                # a skipped step has no gradients: changes nothing
    """

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True,
                 *, min_scale: float | None = None, max_consecutive_skips: int | None = None,
                 debug_overflow=False):
        if not init_scale > 0 or not math.isfinite(init_scale):
            raise ValueError(f"GradScaler: init_scale must be a finite number > 0, got "
                             f"{init_scale}")
        if growth_factor < 1.0:
            raise ValueError(f"GradScaler: growth_factor must be >= 1, got {growth_factor}")
        if not 0.0 < backoff_factor <= 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1], got {backoff_factor}")
        if growth_interval < 0 or int(growth_interval) != growth_interval:
            raise ValueError(f"GradScaler: growth_interval must be an int >= 0, got "
                             f"{growth_interval}")
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._min_scale = None if min_scale is None else float(min_scale)
        self._max_skips = 50 if max_consecutive_skips is None else int(max_consecutive_skips)
        self._growth_tracker = 0
        self.skipped_steps = 0
        self.consecutive_skips = 0
        self.total_steps = 0
        self.last_step_skipped = False
        self.history: collections.deque = collections.deque(maxlen=10_000)
        self._reset_iteration()
        self._debug_watch = None
        self.debug_overflow = debug_overflow

    @property
    def debug_overflow(self):
        """False, or the action (``"raise"``/``"warn"``) of the backward overflow watch."""
        return False if self._debug_watch is None else self._debug_watch.action

    @debug_overflow.setter
    def debug_overflow(self, action) -> None:
        from . import debug  # lazily: debugging is off in normal runs

        if self._debug_watch is not None:
            debug.unwatch(self._debug_watch)
            self._debug_watch = None
        if action:
            self._debug_watch = debug.watch_scaler(self, action)

    def get_history(self) -> list:
        """``history`` as a list of plain dicts (step, scale, new_scale, found_inf, reason,
        where), oldest first; ``amp.plot_scaler`` draws it."""
        return [dict(h) for h in self.history]

    def _reset_iteration(self):
        self._opt_states: dict = {}      # id(opt) -> {"stage", "found_inf", "opt"}
        self._free_found: list = []      # found_inf of unscale() calls on plain tensor lists
        self._unscaled_ids: set = set()
        self._pending_losses: list = []  # loss arrays to check at the next unscale
        self._loss_nonfinite = False

    # ------------------------------------------------------------------ properties
    @property
    def scale_factor(self) -> float:
        """The current scale (MegEngine's attribute)."""
        return self._scale if self._enabled else 1.0

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def is_enabled(self) -> bool:
        return self._enabled

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    # ------------------------------------------------------------------ scaling
    def scale(self, outputs):
        """Multiply ``outputs`` (a Tensor or nested list/tuple/dict of them) by the scale.

        A float16/bfloat16 output is cast to float32 first (differentiably) and the scaled
        result is float32: 65536 times an fp16 loss would overflow the fp16 range before any
        gradient exists. The gradient flowing back into the fp16 graph is cast to fp16 by the
        cast's backward, where a too-large scale shows up as inf and is backed off.
        The outputs are remembered and checked for inf/NaN at the next unscale.
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            self._pending_losses.append(outputs.data)
            x = outputs
            if x.dtype == B.float16 or x.dtype == B.bfloat16:
                x = cast(x, B.float32)
            return x * self._scale
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(v) for v in outputs)
        raise TypeError(f"GradScaler.scale: expected a Tensor or a list/tuple/dict of Tensors, "
                        f"got {type(outputs).__name__}")

    def backward(self, gm, y, dy=None, *, unscale_grad: bool = True, update_scale: bool = True):
        """MegEngine: ``gm.backward`` with ``dy * scale``, then unscale and update.

        Args:
            gm: the recording GradManager.
            y: the loss (a Tensor or list of Tensors).
            dy: seed gradients (default ones).
            unscale_grad: unscale the attached tensors' gradients afterwards.
            update_scale: call ``update()`` afterwards (needs ``unscale_grad``).
        """
        if not self._enabled:
            gm.backward(y, dy)
            return
        ys = list(y) if isinstance(y, (list, tuple)) else [y]
        dys = list(dy) if isinstance(dy, (list, tuple)) else [dy] * len(ys)
        seeds, roots = [], []
        for yi, di in zip(ys, dys):
            self._pending_losses.append(yi.data)
            if yi.dtype == B.float16 or yi.dtype == B.bfloat16:
                # seed in float32 (see scale()); the cast's backward rounds into y's dtype
                di = default_grad(yi, di, "GradScaler.backward")
                yi, di = cast(yi, B.float32), cast(di, B.float32)
            di = default_grad(yi, di, "GradScaler.backward")
            roots.append(yi)
            seeds.append(_make(di.data * np.asarray(self._scale, di.dtype), False, None, 0))
        gm.backward(roots if len(roots) > 1 else roots[0], seeds if len(seeds) > 1 else seeds[0])
        if unscale_grad:
            self.unscale(gm.attached_tensors())
            if update_scale:
                self.update()

    # ------------------------------------------------------------------ unscaling
    def _unscale_tensors(self, params, who: str) -> bool:
        """Unscale ``p.grad`` of every param; return whether anything was inf/NaN (1 sync)."""
        inv = 1.0 / self._scale  # float64 on the host
        flags, owners, grads = [], [], []
        for p in params:
            g = p.grad
            if g is None:
                continue
            if g.dtype == B.float16:
                raise ValueError(
                    f"{who}: a parameter of shape {p.shape} has a float16 gradient; unscaling "
                    "fp16 gradients loses the small values scaling protects. Keep parameters in "
                    "float32 under autocast (fp32 master weights: amp O1/O2 keep parameters "
                    "fp32) and let autocast cast them per op")
            owners.append(p)
            grads.append(g.data)
        if grads:
            # One fused multiply + inf/NaN flag per dtype group (_backend/fused.py): new arrays,
            # not in place, since the engine may share one gradient between parameters. float64
            # math for float64 grads, float32 otherwise (bfloat16 rounded once).
            unscaled, found = unscale_and_check(grads, inv)
            for p, u in zip(owners, unscaled):
                p.grad = _make(u, False, None, 0)
            flags.append(found == 0)
        lflags = [B.get_array_module(a).isfinite(a).all() for a in self._pending_losses]
        self._pending_losses = []
        if not flags and not lflags:
            return self._loss_nonfinite
        return self._sync(flags, lflags)

    def _sync(self, gflags, lflags) -> bool:
        """Reduce device flags to (grads_ok, losses_ok) and read them with one transfer."""
        arrays = gflags + lflags
        xp = B.get_array_module(arrays[0])
        g_ok = xp.stack(gflags).all() if gflags else xp.asarray(True)
        l_ok = xp.stack(lflags).all() if lflags else xp.asarray(True)
        both = xp.stack([xp.asarray(g_ok), xp.asarray(l_ok)])
        both = _ranks.agree((~both).astype(xp.int32)) == 0  # every rank makes the same call
        g_ok, l_ok = (both.get() if xp is not np else both).tolist()
        if not l_ok:
            self._loss_nonfinite = True
        return (not g_ok) or self._loss_nonfinite

    def unscale(self, grad_tensors):
        """MegEngine: unscale ``t.grad`` of each tensor; on inf/NaN drop every one of them.

        Args:
            grad_tensors: the tensors whose gradients to unscale (``gm.attached_tensors()``).

        Returns:
            The tensors, so calls can be chained.
        """
        if not self._enabled:
            return grad_tensors
        ts = [grad_tensors] if isinstance(grad_tensors, Tensor) else list(grad_tensors)
        for t in ts:
            if id(t) in self._unscaled_ids:
                raise RuntimeError(
                    "GradScaler.unscale: these gradients were already unscaled since the last "
                    "update(); call scaler.update() once per iteration before unscaling again")
        found = self._unscale_tensors(ts, "GradScaler.unscale")
        self._unscaled_ids.update(id(t) for t in ts)
        if found:
            for t in ts:  # the following opt.step() skips params without gradients
                t.grad = None
        self._free_found.append(found)
        return grad_tensors

    def unscale_(self, optimizer) -> None:
        """PyTorch: unscale the gradients of ``optimizer``'s parameters in place (once per step).

        Call it before clipping or inspecting gradients; ``step`` then does not unscale again.
        """
        if not self._enabled:
            return
        st = self._opt_state(optimizer)
        if st["stage"] is _UNSCALED:
            raise RuntimeError(
                "GradScaler.unscale_() has already been called on this optimizer since the last "
                "update(); call scaler.step(optimizer) and scaler.update() before unscaling again")
        if st["stage"] is _STEPPED:
            raise RuntimeError(
                "GradScaler.unscale_() is being called after step() for this optimizer; call "
                "scaler.update() first (unscale_ belongs between backward and step)")
        st["found_inf"] = self._unscale_tensors(_optimizer_params(optimizer),
                                                "GradScaler.unscale_")
        st["stage"] = _UNSCALED

    def _opt_state(self, optimizer) -> dict:
        st = self._opt_states.get(id(optimizer))
        if st is None:
            st = self._opt_states[id(optimizer)] = {"stage": _READY, "found_inf": False,
                                                    "opt": optimizer}
        return st

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if not yet done) and call ``optimizer.step()`` unless inf/NaN was found.

        Returns:
            ``None`` when the step was skipped, else what ``optimizer.step()`` returned.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("GradScaler.step: closures are not supported; compute the loss, "
                               "call scaler.scale(loss).backward(), then scaler.step(optimizer)")
        st = self._opt_state(optimizer)
        if st["stage"] is _STEPPED:
            raise RuntimeError(
                "GradScaler.step() has already been called for this optimizer since the last "
                "update(); call scaler.update() once per iteration, after all step() calls")
        if st["stage"] is _READY:
            self.unscale_(optimizer)
        st["stage"] = _STEPPED
        if st["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    # ------------------------------------------------------------------ update
    def update(self, new_scale=None) -> None:
        """End the iteration: adjust the scale per the rule, record telemetry.

        Args:
            new_scale: set the scale to this value instead of applying the rule.
        """
        if not self._enabled:
            return
        found = [st["found_inf"] for st in self._opt_states.values()
                 if st["stage"] is not _READY] + self._free_found
        if not found and new_scale is None:
            raise RuntimeError(
                "GradScaler.update(): no unscale/step was recorded this iteration; call "
                "scaler.step(optimizer) (or scaler.unscale_/scaler.unscale) before update(), "
                "or pass new_scale")
        found_inf = any(found)
        used = self._scale
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                new_scale = new_scale.item()
            new_scale = float(new_scale)
            if not new_scale > 0 or not math.isfinite(new_scale):
                raise ValueError(f"GradScaler.update: new_scale must be finite and > 0, got "
                                 f"{new_scale}")
            self._scale = new_scale
        elif self._growth_interval > 0:
            if found_inf:
                self._scale *= self._backoff_factor
                if self._min_scale is not None and self._scale < self._min_scale:
                    self._scale = self._min_scale
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale = min(self._scale * self._growth_factor, _F32_MAX)
                    self._growth_tracker = 0
        self._record(found, found_inf, used)
        self._reset_iteration()

    def _record(self, found, found_inf, used):
        if found:
            reason = None
            if found_inf:
                reason = "nonfinite_loss" if self._loss_nonfinite else "grad_overflow"
            self.history.append({"step": self.total_steps, "scale": used,
                                 "new_scale": self._scale, "found_inf": found_inf,
                                 "reason": reason, "where": self._debug_watch.where()
                                 if self._debug_watch is not None else None})
            self.total_steps += 1
        self.last_step_skipped = found_inf
        if not found_inf:
            self.consecutive_skips = 0
            return
        self.skipped_steps += 1
        self.consecutive_skips += 1
        if self._max_skips and self.consecutive_skips == self._max_skips:
            warnings.warn(
                f"GradScaler: {self.consecutive_skips} consecutive steps were skipped for inf/NaN "
                f"(last reason: {reason}, scale now {self._scale:g}). If the reason is "
                "nonfinite_loss the forward pass itself produces inf/NaN (bad data, a log of 0, "
                "a too-high learning rate, an op overflowing in float16: add it to "
                "autocast(fp32_ops=...)); lowering the scale will not help. If it is "
                "grad_overflow with a tiny scale, gradients are inf even unscaled.",
                RuntimeWarning, stacklevel=3)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        """Everything needed to resume bit-identically (empty when disabled, like PyTorch)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker, "min_scale": self._min_scale,
                "skipped_steps": self.skipped_steps, "consecutive_skips": self.consecutive_skips,
                "total_steps": self.total_steps}

    def load_state_dict(self, state: dict) -> None:
        """Restore a ``state_dict()``; values may be Python numbers, 0-d arrays or Tensors."""
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty (was it "
                               "saved from a disabled GradScaler?)")
        missing = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                   "_growth_tracker"} - set(state)
        if missing:
            raise KeyError(f"GradScaler.load_state_dict: missing keys {sorted(missing)}")

        def num(v, kind):
            if isinstance(v, Tensor) or hasattr(v, "item"):
                v = v.item()
            return kind(v)

        self._scale = num(state["scale"], float)
        self._growth_factor = num(state["growth_factor"], float)
        self._backoff_factor = num(state["backoff_factor"], float)
        self._growth_interval = num(state["growth_interval"], int)
        self._growth_tracker = num(state["_growth_tracker"], int)
        ms = state.get("min_scale")
        self._min_scale = None if ms is None or (isinstance(ms, float) and math.isnan(ms)) \
            else num(ms, float)
        self.skipped_steps = num(state.get("skipped_steps", 0), int)
        self.consecutive_skips = num(state.get("consecutive_skips", 0), int)
        self.total_steps = num(state.get("total_steps", 0), int)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(scale={self.get_scale():g}, enabled={self._enabled}, "
                f"growth_interval={self._growth_interval}, skipped_steps={self.skipped_steps})")


class StaticGradScaler(GradScaler):
    """A fixed loss scale (OneFlow/MindSpore ``FixedLossScaleManager``): the scale never changes,
    but steps whose gradients overflow are still skipped.

    Args:
        scale: the loss scale.
        enabled: False turns every method into a pass-through.
    """

    def __init__(self, scale: float = 128.0, enabled: bool = True):
        super().__init__(init_scale=scale, growth_interval=0, enabled=enabled)
