"""Overflow localisation: name the first op (and module) whose forward or backward made inf/NaN.

``with amp.debug_overflow():`` installs a ``dispatch_hooks`` hook that checks every output of
every op dispatched in the block -- forward ops, each graph node's input gradients in backward,
and the ops a node's backward dispatches -- and at the first non-finite value raises
``AmpOverflowError`` (``action="raise"``) or warns once (``action="warn"``). The report names the
op, the module path it ran in (``features.3.conv``; for backward, the path captured when the
node's forward ran), the direction, the dtypes, the loss scale when a scaler is attached, and the
largest finite magnitude among the op's inputs (how close they were to the dtype's range).

``GradScaler(debug_overflow=True)`` (or ``"warn"``) watches every backward pass while the scaler
lives, which is where a too-large loss scale overflows: ``scaler.backward(gm, loss)`` and
``scaler.scale(loss).backward()`` alike, since the watch is a hook in the current context rather
than a wrapper around one call. Its forward hook only records module paths (one attribute store
per op) so backward reports can name modules; wrap the forward in ``amp.debug_overflow()`` to
check forward outputs too. ``scaler.debug_overflow = False`` removes the watch.

Off (the default), nothing is installed: ``dispatch_hooks`` stays an empty tuple.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from .._backend import get_array_module
from .._backend.dtypes import is_floating
from ..core.modes import dispatch_hooks, grad_enabled
from ..nn.module import current_module_path
from ..core.tensor import Tensor
from . import _ranks
from .trace import backward_node, module_path_of

__all__ = ["AmpOverflowError", "AmpOverflowWarning", "OverflowReport", "debug_overflow"]


class OverflowReport:
    """Where the first inf/NaN appeared. ``as_dict()`` gives plain data; ``str()`` a message.

    Attributes:
        op: the op that produced it (for an op dispatched by a backward, that op's name).
        module: dotted module path ("" for ops outside any module, None if unknown).
        direction: ``"forward"`` or ``"backward"``.
        backward_of: the graph node whose backward produced it (None in forward).
        input_dtypes, output_dtypes, input_shapes: of the op (None for non-tensor slots).
        kind: ``"inf"``, ``"nan"`` or ``"inf+nan"``.
        loss_scale: the scaler's scale at the time (None without a scaler).
        max_finite_input: the largest finite ``|x|`` among the op's inputs.
        inputs_finite: False when an input already held inf/NaN (the cause is upstream:
            data, a parameter, or an op run outside the checked region).
        rank: the distributed rank that saw it (None outside ``minigrad.distributed``).
    """

    __slots__ = ("backward_of", "direction", "input_dtypes", "input_shapes", "inputs_finite",
                 "kind", "loss_scale", "max_finite_input", "module", "op", "output_dtypes", "rank")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}

    def where(self) -> str:
        """A one-line location, e.g. ``linear @ features.2 (backward)``."""
        mod = "<unknown module>" if self.module is None else (self.module or "<root>")
        what = self.op if self.backward_of is None or self.backward_of == self.op \
            else f"{self.op} inside {self.backward_of}.backward"
        on = "" if self.rank is None else f" on rank {self.rank}"
        return f"{what} @ {mod} ({self.direction}){on}"

    def __str__(self) -> str:
        lines = [f"non-finite ({self.kind}) output first produced by {self.where()}",
                 f"  input dtypes {self.input_dtypes}, shapes {self.input_shapes}; "
                 f"output dtypes {self.output_dtypes}",
                 f"  largest finite |input| = {self.max_finite_input:.6g}"]
        if self.loss_scale is not None:
            lines.append(f"  loss scale at the time = {self.loss_scale:g}")
        if not self.inputs_finite:
            lines.append("  an input was already non-finite: the cause is upstream of this op "
                         "(input data, a parameter, or an op outside the checked region)")
        elif "float16" in self.output_dtypes and self.direction == "backward" \
                and self.loss_scale is not None:
            lines.append("  a float16 gradient overflowed: the loss scale is too large for this "
                         "layer (the scaler backs off) or the layer's weights/activations are")
        elif "float16" in self.output_dtypes:
            lines.append(f"  float16 holds at most 65504: run '{self.op}' in float32 with "
                         f"amp.autocast(fp32_ops=['{self.op}']) or fix the magnitudes")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"OverflowReport({self.where()}, {self.kind})"


class AmpOverflowError(FloatingPointError, RuntimeError):
    """Raised by ``debug_overflow(action="raise")``; ``.report`` is the ``OverflowReport``."""

    def __init__(self, report: OverflowReport):
        super().__init__(str(report))
        self.report = report


class AmpOverflowWarning(RuntimeWarning):
    """Issued by ``debug_overflow(action="warn")``; ``.report`` is the ``OverflowReport``."""

    def __init__(self, report: OverflowReport):
        super().__init__(str(report))
        self.report = report


def _bad_kind(arr):
    """None if ``arr`` is all finite, else "inf", "nan" or "inf+nan" (one sync when finite)."""
    xp = get_array_module(arr)
    if bool(xp.isfinite(arr).all()):
        return None
    has_nan = bool(xp.isnan(arr).any())
    has_inf = bool(xp.isinf(arr).any())
    return "inf+nan" if has_nan and has_inf else ("nan" if has_nan else "inf")


def _max_finite(tensors) -> tuple:
    """(largest finite |x| over the tensors, whether all were finite)."""
    best, finite = 0.0, True
    for t in tensors:
        if not isinstance(t, Tensor) or not is_floating(t.dtype) or t.size == 0:
            continue
        d = t._data
        xp = get_array_module(d)
        ok = xp.isfinite(d)
        if not bool(ok.all()):
            finite = False
        a = xp.abs(xp.where(ok, d, 0).astype(np.float32))
        best = max(best, float(a.max()))
    return best, finite


def _names(ts):
    return tuple([str(t.dtype) if isinstance(t, Tensor) else None for t in ts])


def _shapes(ts):
    return tuple([tuple(t.shape) if isinstance(t, Tensor) else None for t in ts])


class _Checker:
    """The hook: capture module paths in forward, check outputs, report the first non-finite."""

    check_forward = True

    def __init__(self, action: str, scaler=None):
        if action not in ("raise", "warn"):
            raise ValueError(f"debug_overflow: action must be 'raise' or 'warn', got {action!r}")
        self.action = action
        self._scaler = None if scaler is None else weakref.ref(scaler)
        self.reports: list = []

    @property
    def report(self):
        """The first report (None while everything was finite)."""
        return self.reports[0] if self.reports else None

    def _scale(self):
        s = self._scaler() if self._scaler is not None else None
        return None if s is None else s.get_scale()

    def _armed(self) -> bool:
        return not self.reports

    def __call__(self, phase, fn, inputs, outputs):
        if phase == "backward":
            if self._armed():
                self._check(fn, inputs, outputs, fn, "backward")
            return
        if getattr(fn, "_amp_path", None) is None:
            fn._amp_path = current_module_path.get()
        if not self._armed():
            return
        if not self.check_forward and grad_enabled.get():
            return  # a training forward: the scaler's watch only checks backward passes
        bad = None
        for o in outputs:
            if isinstance(o, Tensor) and is_floating(o.dtype) and _bad_kind(o._data):
                bad = o
                break
        if bad is None:
            return
        node = backward_node(2)
        if node is None and not self.check_forward:
            return
        self._report(fn, inputs, outputs, node, "forward" if node is None else "backward")

    def _check(self, fn, inputs, outputs, node, direction):
        for o in outputs:
            if isinstance(o, Tensor) and is_floating(o.dtype) and _bad_kind(o._data):
                self._report(fn, inputs, outputs, node, direction)
                return

    def _report(self, fn, inputs, outputs, node, direction):
        kinds = {_bad_kind(o._data) for o in outputs
                 if isinstance(o, Tensor) and is_floating(o.dtype)} - {None}
        kind = "inf+nan" if len(kinds) > 1 else kinds.pop()
        biggest, finite = _max_finite(inputs)
        if node is None:
            module = module_path_of(fn)
        else:
            module = module_path_of(node)
        rep = OverflowReport(
            op=fn.name, module=module, direction=direction,
            backward_of=None if node is None else node.name,
            input_dtypes=_names(inputs), output_dtypes=_names(outputs),
            input_shapes=_shapes(inputs), kind=kind, loss_scale=self._scale(),
            max_finite_input=biggest, inputs_finite=finite, rank=_ranks.this_rank())
        self.reports.append(rep)
        if self.action == "raise":
            raise AmpOverflowError(rep)
        warnings.warn(AmpOverflowWarning(rep), stacklevel=4)


class debug_overflow:
    """Find the first op whose forward or backward output holds inf/NaN.

    Args:
        action: ``"raise"`` (``AmpOverflowError``, a ``FloatingPointError``) or ``"warn"``
            (``AmpOverflowWarning``, once per block).
        scaler: a ``GradScaler`` whose current scale goes into the report.

    The block's object has ``.report`` (the first ``OverflowReport`` or None) and ``.reports``.
    Run the forward inside the block to capture module paths for backward reports too.

    Example:
        >>> import minigrad as mg
        >>> from minigrad import amp
        >>> x = mg.full((2,), 300.0)
        >>> try:
        ...     with amp.debug_overflow():
        ...         y = x.astype("float16") * 300.0
        ... except amp.AmpOverflowError as e:
        ...     print(e.report.where())
        mul @ <root> (forward)
    """

    def __init__(self, action: str = "raise", scaler=None):
        self._checker = _Checker(action, scaler)
        self._tokens: list = []

    @property
    def report(self):
        return self._checker.report

    @property
    def reports(self) -> list:
        return self._checker.reports

    def __enter__(self):
        self._tokens.append(dispatch_hooks.set(dispatch_hooks.get() + (self._checker,)))
        return self

    def __exit__(self, *exc):
        dispatch_hooks.reset(self._tokens.pop())
        return False


class _ScalerWatch(_Checker):
    """``GradScaler(debug_overflow=...)``: check backward passes; one report per iteration."""

    check_forward = False

    def __init__(self, action, scaler):
        super().__init__(action, scaler)
        self._step = scaler.total_steps

    def __call__(self, phase, fn, inputs, outputs):
        if self._scaler() is None:  # the scaler was garbage-collected: uninstall ourselves
            unwatch(self)
            return
        super().__call__(phase, fn, inputs, outputs)

    def _armed(self) -> bool:
        s = self._scaler()
        if s is None:
            return False
        if s.total_steps != self._step:  # a new iteration: report its first overflow again
            self._step = s.total_steps
            self.reports = []
        return not self.reports

    def where(self):
        """Location of this iteration's first overflow (for the scaler's history), or None."""
        s = self._scaler()
        if s is None or s.total_steps != self._step or not self.reports:
            return None
        return self.reports[0].where()


def watch_scaler(scaler, action):
    """Install a ``_ScalerWatch`` for ``scaler`` in the current context and return it."""
    if action is True:
        action = "raise"
    watch = _ScalerWatch(action, scaler)
    dispatch_hooks.set(dispatch_hooks.get() + (watch,))
    return watch


def unwatch(watch) -> None:
    """Remove a watch installed by ``watch_scaler`` from the current context's hooks."""
    hooks = dispatch_hooks.get()
    if watch in hooks:
        dispatch_hooks.set(tuple([h for h in hooks if h is not watch]))
