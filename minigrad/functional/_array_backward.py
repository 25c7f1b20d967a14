"""Array-computed backward passes: the base of the dedicated backward Functions of the heavier
nn ops (normalizations, losses, attention, recurrent cells).

They compute their gradients on arrays in one pass (cheaper than a chain of ops) and are not
differentiable a second time: :class:`ArrayBackward` raises a clear error when asked to.
"""

from __future__ import annotations

from ..core.function import Function
from ..core.modes import grad_enabled
from ..core.tensor import Tensor

__all__ = ["ArrayBackward", "run_array_backward", "sum_to_array"]


def sum_to_array(g, shape):
    """Sum a broadcast array gradient back to ``shape``."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape) if axes else g.reshape(shape)


class ArrayBackward(Function):
    """Base of a backward pass computed on arrays.

    Subclasses implement ``compute(*grads, needs=..., **saved)`` returning a tuple with one
    array per input gradient that was asked for (``needs``); :func:`run_array_backward` spreads
    them back, with None for the others.
    """

    def forward(self, *arrays, n_grads, **kwargs):
        return self.compute(*arrays[:n_grads], **kwargs)

    def backward(self, *grads):
        raise NotImplementedError(
            f"double backward through '{self.name}' is not supported: its gradient is computed "
            "on arrays; differentiate a composition of simpler ops instead")


def run_array_backward(cls, grads, fwd, **kwargs):
    """Apply the array backward ``cls`` for the forward node ``fwd``.

    Returns one gradient (or None) per input of ``fwd``. Under ``create_graph=True`` the
    forward's inputs are passed along too, so the recorded node depends on them and a second
    differentiation raises instead of silently treating them as constants.
    """
    needs = fwd.needs_input_grad
    if not any(needs):
        return (None,) * len(needs)
    extra = ()
    if grad_enabled.get():
        extra = tuple([x for x in fwd.inputs if isinstance(x, Tensor) and x.requires_grad])
    outs = cls.apply(*grads, *extra, n_grads=len(grads), needs=needs, **kwargs)
    if type(outs) is not tuple:
        outs = (outs,)
    it = iter(outs)
    return tuple([next(it) if n else None for n in needs])
