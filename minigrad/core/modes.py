"""Every mode of minigrad, as one ContextVar each (invariant 6).

A mode set with ``var.set(...)`` is undone with ``var.reset(token)``, so modes nest, survive
exceptions and are per thread. Reading one costs a ``.get()``; the dispatch point reads
``grad_enabled``, ``dispatch_policy`` and ``dispatch_hooks`` for every op.

Modes of the backend below this floor (sync debugging, CUDA-graph capture, index debugging)
live in ``minigrad._backend``, which cannot import upward.

The default dtype (``mg.set_default_dtype``) is not a mode: like PyTorch's it is one setting for
the whole process, not scoped or per thread, and the promotion rule in ``_backend.dtypes`` reads
it, so it lives there (``_backend.dtypes.get_default_dtype``).
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["autocast_state", "backward_seed", "current_backward_node", "dispatch_hooks",
           "dispatch_policy", "grad_enabled", "module_path"]

# Whether ops are recorded for backward (no_grad / enable_grad / set_grad_enabled).
grad_enabled: ContextVar[bool] = ContextVar("minigrad_grad_enabled", default=True)

# The precision policy in force: None, or an object with
# ``cast_inputs(fn_cls, inputs) -> (inputs, compute_dtype, reason)``. ``minigrad.precision``
# builds it for autocast regions and per-module precision; the backward engine clears it
# (invariant 5).
dispatch_policy: ContextVar = ContextVar("minigrad_dispatch_policy", default=None)

# Debug hooks in force: a tuple of callables ``hook(phase, fn, inputs, outputs)`` where phase is
# "forward" (inputs/outputs are the op's Tensors) or "backward" (inputs are the output grads,
# outputs the input grads). Empty tuple = zero cost beyond one lookup.
dispatch_hooks: ContextVar = ContextVar("minigrad_dispatch_hooks", default=())

# The node whose backward is running, for debug hooks (dtype trace, overflow localisation) that
# attribute ops dispatched inside a backward to it. Set only while hooks are installed.
current_backward_node: ContextVar = ContextVar("minigrad_backward_node", default=None)

# The settings of the innermost autocast region (``minigrad.precision.autocast.RegionState``),
# or None outside every region.
autocast_state: ContextVar = ContextVar("minigrad_autocast_state", default=None)

# A training step that owns ``loss.backward()`` (OneFlow's ``nn.Graph``): None, or a callable
# ``seed(loss) -> loss`` that ``Tensor.backward`` applies to the tensor it differentiates (the
# step scales it for loss scaling and gradient accumulation, and notes that backward ran).
backward_seed: ContextVar = ContextVar("minigrad_backward_seed", default=None)

# Names of the modules whose forward is running, outermost first (("", "layer1", "0", "conv1")),
# so AMP debugging can name the module an op ran in. Roots are named "".
module_path: ContextVar[tuple] = ContextVar("minigrad_module_path", default=())
