"""MegEngine's ``GradManager``: attach parameters, record, backward into ``.grad``."""

from __future__ import annotations

from ..tensor import Tensor
from .engine import _as_list, default_grad, run_backward

__all__ = ["GradManager"]


class GradManager:
    """Computes gradients of attached tensors, MegEngine style.

    Example:
        >>> import minigrad as mg
        >>> from minigrad.autodiff import GradManager
        >>> w = mg.Parameter([2.0, 3.0])
        >>> gm = GradManager().attach([w])
        >>> with gm:
        ...     loss = (w * w).sum()
        ...     gm.backward(loss)
        >>> w.grad.numpy().tolist()
        [4.0, 6.0]

    ``gm.backward(y, dy)`` differentiates ``y`` with respect to the attached tensors only,
    accumulates into their ``.grad``, calls each attach callback as ``callback(param, grad)``
    (a returned tensor replaces the gradient; this is where a distributed all-reduce hooks in;
    a callback with a ``flush()`` method is flushed once after all of them ran, before the
    gradients are accumulated) and frees the graph.
    """

    def __init__(self):
        self._attached: list[Tensor] = []
        self._index: dict[int, int] = {}
        self._callbacks: dict[int, list] = {}
        self._recording = False

    def attach(self, params, callbacks=None) -> "GradManager":
        """Track ``params`` (a Tensor or an iterable); may be called again to add more."""
        if isinstance(params, Tensor):
            params = [params]
        cbs = _as_list(callbacks)
        for cb in cbs:
            if not callable(cb):
                raise TypeError(f"GradManager.attach: callback {cb!r} is not callable")
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"GradManager.attach expects Tensors or Parameters, got {type(p).__name__}")
            if id(p) not in self._index:
                self._index[id(p)] = len(self._attached)
                self._attached.append(p)
                self._callbacks[id(p)] = []
            p.requires_grad = True
            self._callbacks[id(p)].extend(cbs)
        return self

    def attached_tensors(self) -> list[Tensor]:
        """The attached tensors, in attach order."""
        return list(self._attached)

    def is_attached(self, t: Tensor) -> bool:
        return id(t) in self._index

    def record(self) -> None:
        """Start recording (``with gm:`` calls this)."""
        if self._recording:
            raise RuntimeError("GradManager.record: already recording; call release() first")
        self._recording = True

    def release(self) -> None:
        """Stop recording (``with gm:`` calls this on exit)."""
        self._recording = False

    def __enter__(self):
        self.record()
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def backward(self, y=None, dy=None, retain_graph: bool = False) -> None:
        """Differentiate ``y`` (a Tensor or list) w.r.t. the attached tensors.

        Args:
            y: the value(s) to differentiate; None only ends recording.
            dy: seed gradient(s), defaulting to ones for one-element ``y``.
            retain_graph: keep the graph for another backward.
        """
        if not self._recording:
            raise RuntimeError(
                "GradManager.backward called while not recording: run the forward pass and "
                "gm.backward(loss) inside `with gm:` (or between gm.record() and gm.release())")
        if y is None:
            self.release()
            return
        ys = _as_list(y)
        dys = _as_list(dy) if dy is not None else [None] * len(ys)
        if len(dys) != len(ys):
            raise ValueError(f"GradManager.backward: {len(ys)} values of y but {len(dys)} of dy")
        dys = [default_grad(a, b, "GradManager.backward") for a, b in zip(ys, dys)]
        try:
            grads = run_backward(ys, dys, retain_graph=retain_graph, capture=self._attached,
                                 accumulate=False)
            results = []
            for p, g in zip(self._attached, grads):
                if g is None:
                    continue
                for cb in self._callbacks[id(p)]:
                    out = cb(p, g)
                    if out is not None:
                        g = out
                results.append((p, g))
            # A callback with flush() (the bucketed all-reduce) may hand out gradients that are
            # final only once every parameter's callbacks ran: flush each once, then accumulate.
            flushed = set()
            for cbs in self._callbacks.values():
                for cb in cbs:
                    if hasattr(cb, "flush") and id(cb) not in flushed:
                        flushed.add(id(cb))
                        cb.flush()
            for p, g in results:
                p.grad = g if p.grad is None else p.grad + g
        finally:
            self.release()
