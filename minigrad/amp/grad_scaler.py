"""Dynamic loss scaling: ``GradScaler`` (PyTorch and MegEngine APIs) and ``StaticGradScaler``.

Update rule (AMP_REFERENCE section 2), applied once per iteration by ``update()``; it is written
once, as ``_backend/loss_scale_rule.adjust``, which both paths below run:

* a loss passed to ``scale``/``backward`` was inf/NaN: the scale and the growth tracker are kept
  (a model or data problem, not a scale problem); ``max_nonfinite_losses`` such iterations in a
  row raise;
* else inf/NaN in the gradients seen by any ``unscale``/``unscale_``/``step`` of the iteration:
  ``scale *= backoff_factor`` (not below ``min_scale``) and the growth tracker resets to 0;
* otherwise ``tracker += 1`` and when ``tracker == growth_interval``:
  ``scale *= growth_factor`` (capped at ``max_scale``, default float32 max) and ``tracker = 0``;
* ``growth_interval == 0`` is a static scale (MegEngine): never changed, overflowing steps are
  still skipped.

Each optimizer skips on its own gradients only (as PyTorch). Unscaling multiplies each gradient by
``1 / scale`` computed in float64 and applied in float32 (``_backend/fused.py``).

Two paths, the same decisions bit for bit:

* host (default): the scale is a Python float; each unscale reads its flags (this optimizer's
  gradients, the pending losses) with one transfer;
* ``sync_free=True``: scale, growth tracker and flags stay on the device (``_sync_free``:
  1-element arrays, NumPy ones on the CPU); optimizers receive the flag and skip inside their
  kernels (gradients checked by the MegEngine-style ``unscale()`` carry it themselves), the rule
  runs as ``fused.scale_update``; nothing is read until the user asks (``step()``'s report,
  telemetry, ``get_scale()``), so a whole AMP step can be captured as a CUDA graph.

The arithmetic of unscaling (in place where safe) is in ``_unscale``; the cross-rank agreement of
the flags in ``_ranks``.

Every flag read goes through ``_ranks.agree`` first (all ranks decide alike) and through
``sync_debug.host_read`` (``mg.cuda.set_sync_debug_mode`` sees it). Telemetry (``history``,
``skipped_steps``, ...) records each iteration with a reason: ``"nonfinite_loss"`` or
``"grad_overflow"``.
"""

from __future__ import annotations

import collections
import inspect
import math
import numbers
import warnings
import weakref

import numpy as np

from .. import _backend as B
from .._backend import loss_scale_rule
from .._backend.sync_debug import host_read
from ..core.engine import default_grad
from ..core.cast import cast
from ..optimizer.optimizer import mark_found_inf
from ..core.tensor import Tensor
from ..core.creation import ones_like
from . import _ranks
from ._sync_free import DeviceState, LazyStep
from ._unscale import unscale_arrays

__all__ = ["GradScaler", "StaticGradScaler", "LazyStep"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"
_F32_MAX = loss_scale_rule.F32_MAX
_make = Tensor._make
_POSITIONAL = ("init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled")


def _optimizer_params(opt) -> list:
    groups = getattr(opt, "param_groups", None)
    if groups is None:
        raise TypeError(f"GradScaler: {type(opt).__name__} has no param_groups; pass a "
                        "minigrad optimizer (SGD, Adam, ...)")
    return [p for g in groups for p in g["params"]]


def _takes_found_inf(optimizer) -> bool:
    """Whether ``optimizer.step`` accepts ``found_inf`` (minigrad's optimizers do)."""
    try:
        return "found_inf" in inspect.signature(optimizer.step).parameters
    except (TypeError, ValueError):
        return False


def _gradients(params, who: str):
    """The params that have a gradient, their gradient arrays and whether each gradient is
    part of a differentiable graph; refuses float16 gradients."""
    owners, grads, in_graph = [], [], []
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
        grads.append(g._data)
        in_graph.append(g.requires_grad)
    return owners, grads, in_graph


def _finite(a) -> bool:
    """``np.isfinite(a).all()`` of a loss array; a NumPy scalar float loss (the usual case)
    through ``math.isfinite``, which skips the ufunc and its reduction (~2 µs)."""
    if type(a) is np.ndarray and a.ndim == 0 and a.dtype.kind == "f":
        return math.isfinite(a)
    return bool(np.isfinite(a).all())


class _ByObject:
    """Per-iteration values keyed by object identity; a weakref proves the key is the same
    object (an id alone is reused by the next object allocated at that address)."""

    def __init__(self):
        self._d: dict = {}

    def get(self, obj):
        e = self._d.get(id(obj))
        return e[1] if e is not None and e[0]() is obj else None

    def set(self, obj, value) -> None:
        self._d[id(obj)] = (weakref.ref(obj), value)

    def set_all(self, objs, values) -> None:
        """``set`` for each pair, in one dict update."""
        ref = weakref.ref
        self._d.update({id(o): (ref(o), v) for o, v in zip(objs, values)})

    def __bool__(self) -> bool:
        """Whether anything was set."""
        return bool(self._d)

    def values(self) -> list:
        return [v for _, v in self._d.values()]


class _ScaledLoss(Tensor):
    """The result of ``scaler.scale(loss)``: its ``backward`` silences NumPy's overflow/invalid
    warnings, since a too-high scale overflowing in float16 is expected and handled (the step is
    skipped, the scale backs off)."""

    __slots__ = ()

    def backward(self, dy=None, retain_graph=None, create_graph=False):
        with np.errstate(over="ignore", invalid="ignore"):
            return super().backward(dy, retain_graph, create_graph)


class GradScaler:
    """Scale the loss so small float16 gradients do not flush to zero, then unscale and skip
    steps whose gradients overflowed.

    Args:
        device: PyTorch's first argument (``"cuda"``, ``"cpu"``): where the sync-free state
            lives (default: where the first loss is). A number here is taken as ``init_scale``
            (minigrad's and MegEngine's positional order), so ``GradScaler(2.**16)`` works.
        init_scale: initial scale.
        growth_factor: multiplier applied after ``growth_interval`` clean iterations.
        backoff_factor: multiplier applied after an iteration with inf/NaN gradients.
        growth_interval: clean iterations between growths; 0 keeps the scale static.
        enabled: False turns every method into a pass-through.
        min_scale: the scale never backs off below this (None: no floor).
        max_scale: the scale never grows above this (None: float32 max; Chainer clamps to
            65504, the float16 max).
        max_consecutive_skips: warn after this many skipped iterations in a row (None: 50).
        max_nonfinite_losses: raise after this many iterations in a row whose loss itself was
            inf/NaN (None: 20; 0: never).
        sync_free: keep scale, tracker and found-inf flags on the device and never read them
            during a step (see the module docstring).
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
        opt.step().clear_grad()                # a skipped step changes nothing
    """

    def __init__(self, device=None, *args, init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True,
                 min_scale: float | None = None, max_scale: float | None = None,
                 max_consecutive_skips: int | None = None,
                 max_nonfinite_losses: int | None = None, sync_free: bool = False,
                 debug_overflow=False):
        if isinstance(device, numbers.Real) and not isinstance(device, bool):
            args, device = (device, *args), None
        if len(args) > len(_POSITIONAL):
            raise TypeError(f"GradScaler takes at most {len(_POSITIONAL) + 1} positional "
                            f"arguments (device, {', '.join(_POSITIONAL)})")
        given = dict(zip(_POSITIONAL, args))
        init_scale = float(given.get("init_scale", init_scale))
        growth_factor = float(given.get("growth_factor", growth_factor))
        backoff_factor = float(given.get("backoff_factor", backoff_factor))
        growth_interval = given.get("growth_interval", growth_interval)
        enabled = given.get("enabled", enabled)
        if device is not None and not isinstance(device, str):
            raise TypeError(f"GradScaler: device must be a string such as 'cuda' or 'cpu', got "
                            f"{type(device).__name__}")
        if not init_scale > 0 or not math.isfinite(init_scale):
            raise ValueError(f"GradScaler: init_scale must be a finite number > 0, got "
                             f"{init_scale}")
        self._check_factors(growth_factor, backoff_factor, growth_interval)
        self._device = None if device is None else B.normalize_device(device)
        self._enabled = bool(enabled)
        self._sync_free = bool(sync_free)
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = int(growth_interval)
        self._min_scale = None if min_scale is None else float(min_scale)
        self._max_scale = _F32_MAX if max_scale is None else min(float(max_scale), _F32_MAX)
        self._max_skips = 50 if max_consecutive_skips is None else int(max_consecutive_skips)
        self._max_bad_losses = 20 if max_nonfinite_losses is None else int(max_nonfinite_losses)
        self._host_scale = init_scale
        self._host_tracker = 0
        self._dev = None                 # sync-free: the DeviceState, made on first use
        self._skipped_steps = 0
        self._consecutive_skips = 0
        self._consecutive_bad_losses = 0
        self._total_steps = 0
        self._last_step_skipped = False
        self._history: collections.deque = collections.deque(maxlen=10_000)
        self._reset_iteration()
        self._debug_watch = None
        self.debug_overflow = debug_overflow

    @staticmethod
    def _check_factors(growth_factor, backoff_factor, growth_interval):
        if growth_factor < 1.0:
            raise ValueError(f"GradScaler: growth_factor must be >= 1, got {growth_factor}")
        if not 0.0 < backoff_factor <= 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1], got {backoff_factor}")
        if isinstance(growth_interval, bool) or growth_interval < 0 \
                or int(growth_interval) != growth_interval:
            raise ValueError(f"GradScaler: growth_interval must be an int >= 0, got "
                             f"{growth_interval}")

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

    def _reset_iteration(self):
        self._opt_states = _ByObject()   # optimizer -> {"stage", "found_inf"}
        self._unscaled = _ByObject()     # tensors unscaled by unscale() this iteration
        self._free_found: list = []      # found flags of unscale() calls on plain tensor lists
        self._pending_losses: list = []  # loss arrays to check at the next unscale
        self._loss_nonfinite = False     # host path; sync-free: self._loss_flag
        self._loss_flag = None
        self._scaled = False             # scale()/backward() ran: the gradients carry the scale

    # ------------------------------------------------------------------ scale and telemetry
    @property
    def _scale(self) -> float:
        """The scale as a Python float (reads the device in sync-free mode)."""
        if self._dev is None:
            return self._host_scale
        return float(host_read(self._dev.scale, "GradScaler scale")[0])

    @_scale.setter
    def _scale(self, value) -> None:
        self._host_scale = float(value)
        if self._dev is not None:
            self._dev.scale[...] = self._host_scale

    def _flush(self) -> None:
        """Sync-free: read the pending iteration records (one transfer) into the telemetry."""
        dev = self._dev
        if dev is None or not dev.pending:
            return
        values = host_read(dev.pending_values(), "GradScaler telemetry")
        errors = [self._record(*rec) for rec in dev.take_records(values)]
        errors = [e for e in errors if e is not None]
        if errors:
            raise errors[0]

    def _telemetry(name, doc):  # noqa: N805 - builds the lazily read telemetry properties
        def get(self):
            self._flush()
            return getattr(self, name)

        def put(self, value):
            self._flush()
            setattr(self, name, value)
        return property(get, put, doc=doc)

    history = _telemetry("_history", "Per-iteration records (deque of dicts): step, scale, "
                         "new_scale, found_inf, reason, where (and ranks when distributed).")
    skipped_steps = _telemetry("_skipped_steps", "Iterations skipped for inf/NaN.")
    consecutive_skips = _telemetry("_consecutive_skips", "Skipped iterations in a row.")
    total_steps = _telemetry("_total_steps", "Iterations recorded by update().")
    last_step_skipped = _telemetry("_last_step_skipped", "Whether the last iteration skipped.")
    del _telemetry

    def get_history(self) -> list:
        """``history`` as a list of plain dicts (step, scale, new_scale, found_inf, reason,
        where), oldest first; ``amp.plot_scaler`` draws it."""
        return [dict(h) for h in self.history]

    @property
    def scale_factor(self) -> float:
        """The current scale (MegEngine's attribute; assignable)."""
        return self.get_scale()

    @scale_factor.setter
    def scale_factor(self, value) -> None:
        value = float(value.item() if hasattr(value, "item") else value)
        if not value > 0 or not math.isfinite(value):
            raise ValueError(f"GradScaler.scale_factor must be finite and > 0, got {value}")
        self._scale = value

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def is_enabled(self) -> bool:
        return self._enabled

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._check_factors(float(new_factor), self._backoff_factor, self._growth_interval)
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._check_factors(self._growth_factor, float(new_factor), self._growth_interval)
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._check_factors(self._growth_factor, self._backoff_factor, new_interval)
        self._growth_interval = int(new_interval)

    # ------------------------------------------------------------------ device state
    def _device_state(self, like) -> DeviceState:
        """Sync-free: the device state, made on first use where ``like`` lives."""
        if self._dev is None:
            self._dev = DeviceState(self._host_scale, self._host_tracker,
                                    self._device or B.device_of(like))
        return self._dev

    def _scale_array(self, dtype, like):
        """The scale for multiplying ``like``: a Python float, or a device array of ``dtype``."""
        if not self._sync_free:
            return self._host_scale
        return self._device_state(like).scale.astype(dtype).reshape(())

    # ------------------------------------------------------------------ scaling
    def scale(self, outputs):
        """Multiply ``outputs`` (a Tensor, a dict, or any iterable of Tensors) by the scale.

        A float16/bfloat16 output is cast to float32 first (differentiably) and the scaled
        result is float32: 65536 times an fp16 loss would overflow the fp16 range before any
        gradient exists. The gradient flowing back into the fp16 graph is cast to fp16 by the
        cast's backward, where a too-large scale shows up as inf and is backed off.
        The outputs are remembered and checked for inf/NaN at the next unscale.

        Returns:
            The scaled Tensor, dict of them, tuple/list of the input's type, or a list for any
            other iterable.
        """
        if not self._enabled:
            return outputs
        self._scaled = True
        if isinstance(outputs, Tensor):
            self._pending_losses.append(outputs._data)
            x = outputs
            if x.dtype == B.float16 or x.dtype == B.bfloat16:
                x = cast(x, B.float32)
            s = self._scale_array(x.dtype, x._data)
            y = x * (s if isinstance(s, float) else _make(s, False, None, 0))
            if type(y) is Tensor:
                y.__class__ = _ScaledLoss
            return y
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(v) for v in outputs)
        try:
            items = iter(outputs)
        except TypeError:
            raise TypeError(f"GradScaler.scale: expected a Tensor, a dict or an iterable of "
                            f"Tensors, got {type(outputs).__name__}") from None
        return [self.scale(v) for v in items]

    def backward(self, gm, y, dy=None, *, unscale_grad: bool = True, update_scale: bool = True):
        """MegEngine: ``gm.backward`` with ``dy * scale``, then unscale and update.

        Args:
            gm: the recording GradManager.
            y: the loss (a Tensor or list of Tensors); without ``dy`` a non-scalar ``y`` is
                seeded with ones, as in MegEngine.
            dy: seed gradients (default ones).
            unscale_grad: unscale the attached tensors' gradients afterwards.
            update_scale: call ``update()`` afterwards (needs ``unscale_grad``).
        """
        if not self._enabled:
            gm.backward(y, dy)
            return
        self._scaled = True
        ys = list(y) if isinstance(y, (list, tuple)) else [y]
        dys = list(dy) if isinstance(dy, (list, tuple)) else [dy] * len(ys)
        seeds, roots = [], []
        for yi, di in zip(ys, dys):
            self._pending_losses.append(yi._data)
            di = ones_like(yi) if di is None else default_grad(yi, di, "GradScaler.backward")
            if yi.dtype == B.float16 or yi.dtype == B.bfloat16:
                # seed in float32 (see scale()); the cast's backward rounds into y's dtype
                yi = cast(yi, B.float32)
            d = di._data
            if d.dtype != yi.dtype:
                d = d.astype(yi.dtype)
            s = self._scale_array(d.dtype, d)
            # a NumPy scalar, never a 0-d NumPy array: CuPy refuses to multiply by those
            roots.append(yi)
            seeds.append(_make(d * (d.dtype.type(s) if isinstance(s, float) else s), False,
                               None, 0))
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is handled: no warning
            gm.backward(roots if len(roots) > 1 else roots[0],
                        seeds if len(seeds) > 1 else seeds[0])
        if unscale_grad:
            self.unscale(gm.attached_tensors())
            if update_scale:
                self.update()

    # ------------------------------------------------------------------ unscaling
    def _unscale_tensors(self, params, who: str):
        """Unscale ``p.grad`` of every param; return this call's gradient found-inf flag:
        a bool (host path, one read) or a 1-element int32 device array (sync-free)."""
        owners, grads, in_graph = _gradients(params, who)
        losses, self._pending_losses = self._pending_losses, []
        like = grads[0] if grads else losses[0] if losses else None
        if like is None:
            return None
        xp = B.get_array_module(like)
        if self._sync_free:
            scale = self._device_state(like).scale
            inv = float(1.0) / scale  # float64 on the device, as the host's 1.0 / scale
        else:
            inv = 1.0 / self._host_scale
        if grads:
            unscaled, found = unscale_arrays(grads, inv, in_graph, self._flag_like)
            if unscaled is not grads:  # some were unscaled into new arrays
                for p, g, u in zip(owners, grads, unscaled):
                    if u is not g:
                        p.grad = _make(u, False, None, 0)
        else:
            found = xp.zeros((), np.int32)
        flags = _ranks.agree(self._flags(xp, found, losses))
        if self._sync_free:
            self._loss_flag = flags[1:] if self._loss_flag is None \
                else xp.maximum(self._loss_flag, flags[1:])
            return flags[:1] if grads else None
        g_bad, l_bad = host_read(flags, "GradScaler found-inf check").tolist()
        self._loss_nonfinite = self._loss_nonfinite or bool(l_bad)
        return bool(g_bad) if grads else None

    def _flags(self, xp, found, losses):
        """``[gradients found inf/NaN, some loss is inf/NaN]`` as a 2-element int32 array on
        the gradients' device, for ``_ranks.agree``."""
        if xp is np and not self._sync_free:
            # host path on NumPy: the same two values in one array call instead of the five
            # below (~6 µs a step); a scalar loss is checked by math.isfinite
            return np.array([found, not all(map(_finite, losses))], np.int32)
        bad = xp.zeros((), np.int32)
        for a in losses:
            bad = bad | ~xp.isfinite(a).all()
        return xp.stack([found.reshape(()), bad]).astype(np.int32)

    def _flag_like(self, array):
        """This scaler's reusable 0-d int32 found-inf flag on ``array``'s device."""
        flags = self.__dict__.setdefault("_unscale_flags", {})
        key = B.device_of(array)
        f = flags.get(key)
        if f is None:
            f = flags[key] = B.get_array_module(array).zeros((), np.int32)
        return f

    def unscale(self, grad_tensors):
        """MegEngine: unscale ``t.grad`` of each tensor; on inf/NaN drop every one of them.

        In sync-free mode the gradients are kept and marked with the device flag instead, and
        the next ``opt.step()`` over them skips on the device.

        Args:
            grad_tensors: the tensors whose gradients to unscale (``gm.attached_tensors()``).

        Returns:
            The tensors, so calls can be chained.
        """
        if not self._enabled:
            return grad_tensors
        ts = [grad_tensors] if isinstance(grad_tensors, Tensor) else list(grad_tensors)
        done = self._unscaled
        # the same gradient twice is refused; a new backward's gradient (a new object) is not,
        # as MegEngine's own tests loop backward(unscale_grad=False) + unscale. Only an earlier
        # unscale() of this iteration can have recorded one.
        if done and any(t.grad is not None and done.get(t) is t.grad for t in ts):
            raise RuntimeError(
                "GradScaler.unscale: these gradients were already unscaled since the last "
                "update(); call scaler.update() once per iteration before unscaling again")
        found = self._unscale_tensors(ts, "GradScaler.unscale")
        done.set_all(ts, [t.grad for t in ts])
        if found is None:
            return grad_tensors
        if self._sync_free:
            mark_found_inf([t.grad for t in ts if t.grad is not None], found)
        elif found:
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
        if not self._scaled:
            raise RuntimeError(
                "GradScaler.unscale_/step: no loss was scaled since the last update(), so the "
                "gradients do not carry the scale and unscaling would divide them by it; call "
                "scaler.scale(loss).backward() (or scaler.backward(gm, loss)) first")
        st["found_inf"] = self._unscale_tensors(_optimizer_params(optimizer),
                                                "GradScaler.unscale_")
        st["stage"] = _UNSCALED

    def _opt_state(self, optimizer) -> dict:
        st = self._opt_states.get(optimizer)
        if st is None:
            st = {"stage": _READY, "found_inf": None}
            self._opt_states.set(optimizer, st)
        return st

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if not yet done) and call ``optimizer.step()`` unless inf/NaN was found.

        Returns:
            ``None`` when the step was skipped, else what ``optimizer.step()`` returned. In
            sync-free mode a :class:`LazyStep` whose ``skipped`` is read only when asked.

        Raises:
            RuntimeError: when no gradient of ``optimizer`` was checked (no ``scaler.scale``
                before backward, or no parameter has a gradient): stepping would apply
                gradients that were never scaled, or nothing at all.
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
        found = st["found_inf"]
        if found is None:
            raise RuntimeError(
                "GradScaler.step: no inf checks were recorded for this optimizer: none of its "
                "parameters has a gradient. Use scaler.scale(loss) and call backward() on the "
                "result before scaler.step(optimizer)")
        if self._sync_free:
            if _takes_found_inf(optimizer):
                return LazyStep(found, optimizer.step(*args, found_inf=found, **kwargs))
            # a wrapper (e.g. amp.master_weights) whose step() cannot skip on the device: read
            found = bool(host_read(found, "GradScaler.step (optimizer without found_inf)")[0])
        if found:
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
                 if st["stage"] is not _READY and st["found_inf"] is not None]
        found += [f for f in self._free_found if f is not None]
        if not found and new_scale is None:
            raise RuntimeError(
                "GradScaler.update(): no inf checks were recorded this iteration; use "
                "scaler.scale(loss) before backward and call scaler.step(optimizer) (or "
                "scaler.unscale_/scaler.unscale) before update(), or pass new_scale")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                new_scale = new_scale.item()
            new_scale = float(new_scale)
            if not new_scale > 0 or not math.isfinite(new_scale):
                raise ValueError(f"GradScaler.update: new_scale must be finite and > 0, got "
                                 f"{new_scale}")
        where = self._debug_watch.where() if self._debug_watch is not None else None
        if self._dev is not None:
            self._update_device(found, new_scale, where)
        else:
            self._update_host(found, new_scale, where)
        self._reset_iteration()

    def _rule(self) -> dict:
        """The constants of ``loss_scale_rule.adjust`` (both paths run that one rule)."""
        return {"growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "min_scale": self._min_scale,
                "max_scale": self._max_scale}

    def _update_host(self, found, new_scale, where):
        found_inf = any(found)
        bad_loss = self._loss_nonfinite
        used = self._host_scale
        if new_scale is not None:
            self._host_scale = new_scale
        else:
            self._host_scale, self._host_tracker = loss_scale_rule.adjust(
                self._host_scale, self._host_tracker, found_inf, bad_loss, **self._rule())
        error = self._record(bool(found), found_inf, bad_loss, used, self._host_scale, where,
                             _ranks.overflow_rows() if found_inf else None)
        if error is not None:
            raise error

    def _update_device(self, found, new_scale, where):
        if self._dev.full():
            self._flush()  # bound the memory of unread records: one read per PENDING_MAX steps
        self._dev.update(found, self._loss_flag, new_scale, self._rule(), where,
                         _ranks.overflow_rows())

    def _record(self, counted, found_inf, bad_loss, used, new, where, rank_rows):
        """Account one iteration; returns the error to raise after too many bad losses.
        ``rank_rows``: every rank's flags (``_ranks.overflow_rows()``), read only here."""
        reason = None
        if found_inf:
            reason = "nonfinite_loss" if bad_loss else "grad_overflow"
        if counted:
            entry = {"step": self._total_steps, "scale": used, "new_scale": new,
                     "found_inf": found_inf, "reason": reason, "where": where}
            if found_inf:
                entry["ranks"] = _ranks.ranks_of(rank_rows)
            self._history.append(entry)
            self._total_steps += 1
        self._last_step_skipped = found_inf
        self._consecutive_bad_losses = self._consecutive_bad_losses + 1 if bad_loss else 0
        error = None
        if self._max_bad_losses and self._consecutive_bad_losses >= self._max_bad_losses:
            n, self._consecutive_bad_losses = self._consecutive_bad_losses, 0
            error = FloatingPointError(
                f"GradScaler: the loss itself was inf/NaN in {n} consecutive iterations (before "
                f"any scaling; the scale stays {new:g}). This is not a loss-scale problem: check "
                "the data, the model (a log of 0, a division by 0, an op overflowing in float16: "
                "add it to autocast(fp32_ops=...)) and the learning rate; "
                "GradScaler(max_nonfinite_losses=0) turns this error off")
        if not found_inf:
            self._consecutive_skips = 0
            return error
        self._skipped_steps += 1
        self._consecutive_skips += 1
        if self._max_skips and self._consecutive_skips == self._max_skips:
            warnings.warn(
                f"GradScaler: {self._consecutive_skips} consecutive steps were skipped for "
                f"inf/NaN (last reason: {reason}, scale now {new:g}). If the reason is "
                "grad_overflow with a tiny scale, gradients are inf even unscaled: look for the "
                "op that overflows (GradScaler(debug_overflow=True)).",
                RuntimeWarning, stacklevel=4)
        return error

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        """Everything needed to resume bit-identically (empty when disabled, like PyTorch).

        Holds PyTorch's keys (``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval``, ``_growth_tracker``) and MegEngine's ``scale_factor``.
        """
        if not self._enabled:
            return {}
        self._flush()
        scale, tracker = self._scale, self._growth_tracker
        return {"scale": scale, "scale_factor": scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": tracker, "min_scale": self._min_scale,
                "max_scale": self._max_scale,
                "skipped_steps": self._skipped_steps,
                "consecutive_skips": self._consecutive_skips, "total_steps": self._total_steps}

    @property
    def _growth_tracker(self) -> int:
        if self._dev is None:
            return self._host_tracker
        return int(host_read(self._dev.tracker, "GradScaler growth tracker")[0])

    @_growth_tracker.setter
    def _growth_tracker(self, value) -> None:
        self._host_tracker = int(value)
        if self._dev is not None:
            self._dev.tracker[...] = self._host_tracker

    def load_state_dict(self, state: dict) -> None:
        """Restore a ``state_dict()`` of PyTorch's or MegEngine's keys; values may be Python
        numbers, 0-d arrays or Tensors. MegEngine's ``scale_factor`` stands for ``scale``."""
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty (was it "
                               "saved from a disabled GradScaler?)")
        state = dict(state)
        if "scale" not in state and "scale_factor" in state:
            state["scale"] = state["scale_factor"]
        missing = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                   "_growth_tracker"} - set(state)
        if missing:
            raise KeyError(f"GradScaler.load_state_dict: missing keys {sorted(missing)} (saved "
                           "keys: " + ", ".join(sorted(state)) + ")")

        def num(v, kind):
            if isinstance(v, Tensor) or hasattr(v, "item"):
                v = v.item()
            return kind(v)

        self._flush()
        self._scale = num(state["scale"], float)
        self._growth_factor = num(state["growth_factor"], float)
        self._backoff_factor = num(state["backoff_factor"], float)
        self._growth_interval = num(state["growth_interval"], int)
        self._growth_tracker = num(state["_growth_tracker"], int)
        ms = state.get("min_scale")
        self._min_scale = None if ms is None or (isinstance(ms, float) and math.isnan(ms)) \
            else num(ms, float)
        self._max_scale = num(state.get("max_scale", _F32_MAX), float)
        self._skipped_steps = num(state.get("skipped_steps", 0), int)
        self._consecutive_skips = num(state.get("consecutive_skips", 0), int)
        self._total_steps = num(state.get("total_steps", 0), int)

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
