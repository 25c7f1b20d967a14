"""Module utilities: PyTorch-spelled gradient clipping and ``functional_call``."""

from __future__ import annotations

__all__ = ["clip_grad_norm_", "clip_grad_value_", "functional_call", "parameters_to_vector"]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None):
    """Scale gradients in place so their total ``norm_type`` norm is at most ``max_norm``.

    Same as ``minigrad.optimizer.clip_grad_norm`` (``error_if_nonfinite=True`` raises on an
    inf/NaN total norm); ``foreach`` is PyTorch's kernel choice, accepted and ignored. Returns
    the total norm before clipping.
    """
    from ..optimizer.clip import clip_grad_norm

    return clip_grad_norm(parameters, max_norm, norm_type=norm_type,
                          error_if_nonfinite=error_if_nonfinite)


def clip_grad_value_(parameters, clip_value: float, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place (``foreach``,
    PyTorch's kernel choice, is accepted and ignored)."""
    from ..optimizer.clip import clip_grad_value

    return clip_grad_value(parameters, clip_value)


def functional_call(module, tensors: dict, args=(), kwargs=None):
    """Call ``module`` with some parameters/buffers replaced by the given Tensors.

    The replacement lasts for this call only (the module is restored even on error), so
    ``gradcheck`` or meta-learning can differentiate a layer with respect to its weights.

    Args:
        module: the Module to run.
        tensors: dotted name (as in ``named_parameters``) -> Tensor.
        args: a positional argument or a tuple of them.
        kwargs: keyword arguments for forward.
    """
    if not isinstance(args, tuple):
        args = (args,)
    saved = []
    try:
        for name, value in tensors.items():
            owner_path, _, leaf = name.rpartition(".")
            owner = module.get_submodule(owner_path)
            if leaf not in owner._parameters and leaf not in owner._buffers:
                raise KeyError(f"functional_call: {type(owner).__name__} has no parameter or "
                               f"buffer {leaf!r} (from {name!r})")
            saved.append((owner, leaf, owner.__dict__[leaf]))
            # Instance attribute lookup is what forward uses, so swapping the __dict__ entry
            # suffices and leaves the registries (and state_dict) untouched.
            owner.__dict__[leaf] = value
        return module(*args, **(kwargs or {}))
    finally:
        for owner, leaf, old in reversed(saved):
            owner.__dict__[leaf] = old


def parameters_to_vector(parameters):
    """Concatenate the flattened parameters into one 1-D Tensor (differentiable)."""
    from .. import functional as F

    return F.concat([p.reshape(-1) for p in parameters], axis=0)
