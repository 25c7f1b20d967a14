"""``mg.autograd.gradcheck`` / ``gradgradcheck``: PyTorch's spelling of minigrad's shared float64
finite-difference check (:func:`minigrad.testing.gradcheck`).

As in PyTorch, only the inputs that require grad are checked; the others (and non-Tensor
arguments) are passed to ``func`` unchanged. The check itself runs in float64 whatever the
inputs' dtype (minigrad's helper converts them), so float32 inputs check as well as float64 ones.

Example:
    >>> import minigrad as mg
    >>> x = mg.randn(3, dtype=mg.float64, requires_grad=True)
    >>> mg.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
"""

from __future__ import annotations

from ...core.tensor import Tensor
from ...testing import gradcheck as _gradcheck
from ...testing import gradgradcheck as _gradgradcheck

__all__ = ["gradcheck", "gradgradcheck"]


def _split(inputs):
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad; create the inputs with "
                         "requires_grad=True (PyTorch's rule)")

    def call(func):
        def fn(*diff):
            args = list(inputs)
            for i, d in zip(checked, diff):
                args[i] = d
            return func(*args)
        return fn

    return [inputs[i] for i in checked], call


def _run(check, func, inputs, eps, atol, rtol, raise_exception):
    diff, call = _split(inputs)
    try:
        return check(call(func), diff, eps=eps, atol=atol, rtol=rtol)
    except AssertionError as e:
        if raise_exception:
            raise RuntimeError(f"Jacobian mismatch: {e}") from None
        return False


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **ignored) -> bool:
    """``torch.autograd.gradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3,
    raise_exception=True)``: True when ``func``'s analytic gradients match central differences;
    else raises ``RuntimeError`` (or returns False with ``raise_exception=False``). PyTorch's
    other keywords (``nondet_tol``, ``fast_mode``, ...) are accepted and ignored."""
    return _run(_gradcheck, func, inputs, eps, atol, rtol, raise_exception)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, **ignored) -> bool:
    """``torch.autograd.gradgradcheck``: :func:`gradcheck` of the second derivatives
    (``grad_outputs`` is accepted; random output weights are used instead)."""
    return _run(_gradgradcheck, func, inputs, eps, atol, rtol, raise_exception)
