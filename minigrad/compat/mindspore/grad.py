"""MindSpore's functional gradients: ``mg.value_and_grad(fn, grad_position, weights, has_aux)``
and ``mg.grad``, over minigrad's ``autodiff.grad``.

As in MindSpore: ``grad_position`` picks the inputs to differentiate (an int gives one gradient,
a tuple a tuple; None none), ``weights`` a list of Parameters (their gradients come as a tuple);
with both, the gradients are ``(input_grads, weight_grads)``. With ``has_aux=True`` the function
returns a tuple whose first item is differentiated and the rest ride along in the value. An
input or weight the output does not depend on gets a zero gradient (MindSpore's), not None.

Example:
    >>> import minigrad as mg
    >>> w = mg.nn.Parameter(mg.tensor([2.0]))
    >>> f = mg.value_and_grad(lambda x: (x * w).sum(), grad_position=0, weights=[w])
    >>> value, (dx, (dw,)) = f(mg.tensor([3.0]))
    >>> float(value), dx.tolist(), dw.tolist()
    (6.0, [2.0], [3.0])
"""

from __future__ import annotations

from ...autodiff import grad as _autodiff_grad
from ...autodiff import enable_grad
from ...core.creation import zeros_like
from ...core.tensor import Tensor

__all__ = ["grad", "value_and_grad"]


def _positions(grad_position, n_args: int):
    if grad_position is None:
        return ()
    single = isinstance(grad_position, int)
    positions = (grad_position,) if single else tuple(grad_position)
    for p in positions:
        if not -n_args <= p < n_args:
            raise IndexError(f"value_and_grad: grad_position {p} is out of range for "
                             f"{n_args} inputs")
    return positions


def value_and_grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """Return ``f(*args) -> (fn's value, gradients)``; see the module docstring."""
    if return_ids:
        raise NotImplementedError("value_and_grad(return_ids=True) is not supported; "
                                  "the gradients come in the order of grad_position/weights")
    if grad_position is None and weights is None:
        raise ValueError("value_and_grad: grad_position and weights cannot both be None")
    weights = None if weights is None else list(
        weights if not isinstance(weights, Tensor) else [weights])

    def run(*args):
        positions = _positions(grad_position, len(args))
        args = list(args)
        for p in positions:
            if not isinstance(args[p], Tensor):
                raise TypeError(f"value_and_grad: input {p} is a {type(args[p]).__name__}; "
                                "only Tensor inputs can be differentiated")
            args[p] = args[p].detach().requires_grad_()
        with enable_grad():
            value = fn(*args)
        if has_aux:
            if not isinstance(value, (tuple, list)) or not value:
                raise TypeError("value_and_grad(has_aux=True): the function must return a "
                                "tuple whose first item is the value to differentiate")
            target = value[0]
        else:
            target = value
        outputs = list(target) if isinstance(target, (tuple, list)) else [target]
        sources = [args[p] for p in positions] + (weights or [])
        if any(o.requires_grad for o in outputs):
            grads = _autodiff_grad([o for o in outputs if o.requires_grad], sources,
                                   allow_unused=True)
        else:  # the value does not depend on any source
            grads = [None] * len(sources)
        grads = [zeros_like(s) if g is None else g for g, s in zip(grads, sources)]
        input_grads = grads[:len(positions)]
        weight_grads = tuple(grads[len(positions):])
        if isinstance(grad_position, int):
            input_grads = input_grads[0]
        else:
            input_grads = tuple(input_grads)
        if weights is None:
            return value, input_grads
        if grad_position is None:
            return value, weight_grads
        return value, (input_grads, weight_grads)
    return run


def grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """MindSpore's ``mindspore.grad``: the gradients of :func:`value_and_grad` (with
    ``has_aux=True``, ``(gradients, aux)``)."""
    value_and_grads = value_and_grad(fn, grad_position, weights, has_aux, return_ids)

    def run(*args):
        value, grads = value_and_grads(*args)
        return (grads, tuple(value[1:])) if has_aux else grads
    return run
