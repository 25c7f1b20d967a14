"""Softmax and log-softmax, plus the array-level helpers the neural-network families share.

Both ops subtract the row maximum and accumulate in float32 (float64 for float64 input) whatever
the input dtype (invariant 3), then round the result to the input dtype: a float16 softmax over
4096 logits still sums to one. Their backward passes are written with ops, so double backward
(gradient penalties, meta-learning) works.

``ArrayBackward`` is the base of the dedicated backward Functions of the heavier nn ops (norms,
losses, attention, recurrent cells): they compute their gradients on arrays in one pass and are
not differentiable a second time.
"""

from __future__ import annotations

from .._backend import get_array_module
from ..core.function import Function
from ..core.modes import grad_enabled
from ..core.tensor import Tensor
from ._axes import check_axis
from ._utils import acc_dtype, check_floating

__all__ = ["log_softmax", "softmax"]


# --------------------------------------------------------------------------- shared helpers
def softmax_array(x, axis):
    """Max-subtracted softmax of an array, computed and returned in ``acc_dtype(x.dtype)``."""
    xp = get_array_module(x)
    z = x.astype(acc_dtype(x.dtype), copy=False)
    if z.size == 0:  # an empty axis (or batch): an empty result, as in PyTorch
        return z.copy()
    e = xp.exp(z - z.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


def log_softmax_array(x, axis):
    """Max-subtracted log-softmax of an array in ``acc_dtype(x.dtype)``."""
    xp = get_array_module(x)
    z = x.astype(acc_dtype(x.dtype), copy=False)
    if z.size == 0:
        return z.copy()
    s = z - z.max(axis=axis, keepdims=True)
    s -= xp.log(xp.exp(s).sum(axis=axis, keepdims=True))
    return s


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


# --------------------------------------------------------------------------- ops
class Softmax(Function):
    name = "softmax"

    def forward(self, x, axis):
        check_floating("softmax", x)
        self.axis = axis
        y = softmax_array(x, axis).astype(x.dtype, copy=False)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return y * (gy - (gy * y).sum(self.axis, keepdims=True))


class LogSoftmax(Function):
    name = "log_softmax"

    def forward(self, x, axis):
        check_floating("log_softmax", x)
        self.axis = axis
        y = log_softmax_array(x, axis).astype(x.dtype, copy=False)
        self.save_for_backward(y)
        return y

    def backward(self, gy):
        (y,) = self.saved_tensors
        return gy - y.exp() * gy.sum(self.axis, keepdims=True)


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """Softmax along ``axis``, max-subtracted and accumulated in float32.

    Args:
        x: floating Tensor (float16/bfloat16 are computed in float32 and rounded back).
        axis: the axis that sums to one.

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    return Softmax.apply(x, axis=_axis(x, axis, "softmax"))


def _axis(x, axis, op):
    # A 0-d input normalises over its one element (None: NumPy has no axis 0 there).
    return check_axis(axis, x.ndim, op) if x.ndim else None


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """``log(softmax(x))`` computed stably (``x - max - log(sum(exp(x - max)))``) in float32.

    Args:
        x: floating Tensor.
        axis: the normalised axis.

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    return LogSoftmax.apply(x, axis=_axis(x, axis, "log_softmax"))
