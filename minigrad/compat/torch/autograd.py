"""``mg.autograd``: PyTorch's spelling of :mod:`minigrad.autodiff` (``torch.autograd.grad`` and
friends are the same functions).

Example:
    >>> import minigrad as mg
    >>> x = mg.tensor([2.0], requires_grad=True)
    >>> mg.autograd.grad((x * x).sum(), x)[0].item()   # any iterable of inputs works
    4.0
"""

from ...autodiff import Function, enable_grad, grad, no_grad, set_grad_enabled
from ...core.engine import default_grad, run_backward

__all__ = ["Function", "backward", "enable_grad", "grad", "no_grad", "set_grad_enabled"]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False) -> None:
    """``torch.autograd.backward``: accumulate gradients of ``tensors`` into the leaves'
    ``.grad`` (one seed gradient per tensor; None for one-element tensors)."""
    from ...core.tensor import Tensor

    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors] * len(tensors) if grad_tensors is None else [grad_tensors]
    grad_tensors = list(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise ValueError(f"autograd.backward: {len(tensors)} tensors but {len(grad_tensors)} "
                         "grad_tensors")
    dys = [default_grad(t, g, "autograd.backward") for t, g in zip(tensors, grad_tensors)]
    run_backward(tensors, dys, retain_graph=create_graph if retain_graph is None else retain_graph,
                 create_graph=create_graph)
