"""MegEngine's ``GradManager``: attach parameters, record, backward into ``.grad``."""

from __future__ import annotations

import weakref

from ..core.tensor import Tensor
from ..core.creation import ones_like
from ..core.engine import _as_list, default_grad, run_backward

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
    gradients are accumulated) and frees the graph. Like MegEngine's, ``gm.backward(y)`` of a
    non-scalar ``y`` seeds it with ones (``Tensor.backward`` of a non-scalar raises, as
    PyTorch's does).

    Attached tensors are held weakly (as MegEngine does): a tensor attached in one iteration and
    dropped by the user is released, and ``attached_tensors()`` lists only live ones.
    """

    def __init__(self):
        # id(tensor) -> (weak reference, callbacks); insertion order is attach order. A dead
        # tensor's entry is removed by its weakref callback, which runs at deallocation, before
        # its id can be reused.
        self._attached: dict[int, tuple] = {}
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
            entry = self._attached.get(id(p))
            if entry is None:
                entry = self._attached[id(p)] = (weakref.ref(p, _forget(self._attached, id(p))),
                                                 [])
            p.requires_grad = True
            entry[1].extend(cbs)
        return self

    def attached_tensors(self) -> list[Tensor]:
        """The live attached tensors, in attach order."""
        return [p for p in (ref() for ref, _ in list(self._attached.values())) if p is not None]

    def is_attached(self, t: Tensor) -> bool:
        entry = self._attached.get(id(t))
        return entry is not None and entry[0]() is t

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
            dy: seed gradient(s), defaulting to ones of ``y``'s shape (MegEngine).
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
        dys = [ones_like(a) if b is None else default_grad(a, b, "GradManager.backward")
               for a, b in zip(ys, dys)]
        try:
            attached = self.attached_tensors()
            grads = run_backward(ys, dys, retain_graph=retain_graph, capture=attached,
                                 accumulate=False)
            results = []
            for p, g in zip(attached, grads):
                if g is None:
                    continue
                for cb in self._attached[id(p)][1]:
                    out = cb(p, g)
                    if out is not None:
                        g = out
                results.append((p, g))
            # A callback with flush() (the bucketed all-reduce) may hand out gradients that are
            # final only once every parameter's callbacks ran: flush each once, then accumulate.
            flushed = set()
            for _, cbs in list(self._attached.values()):
                for cb in cbs:
                    if hasattr(cb, "flush") and id(cb) not in flushed:
                        flushed.add(id(cb))
                        cb.flush()
            for p, g in results:
                p.grad = g if p.grad is None else p.grad + g
        finally:
            self.release()


def _forget(attached: dict, key: int):
    """A weakref callback dropping ``attached[key]`` when its tensor dies (holds no ``gm``)."""

    def forget(ref):
        entry = attached.get(key)
        if entry is not None and entry[0] is ref:
            del attached[key]

    return forget
