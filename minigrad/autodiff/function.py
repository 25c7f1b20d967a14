"""``Function``: one class per differentiable primitive, and ``apply``, the single dispatch point.

``Function.apply`` is the only place that (a) asks the active precision policy (installed by
``minigrad.amp``) for the compute dtype and casts inputs, (b) decides whether to record a graph
node, and (c) runs the debug hooks (dtype trace, non-finite detection) -- invariant 1. Ops never
read AMP state themselves; autodiff never imports ``minigrad.amp`` (dependencies point down).

Writing an op::

    class Exp(Function):
        name = "exp"                       # the row of the AMP policy table
        def forward(self, x):              # backend arrays in, backend array(s) out
            y = get_array_module(x).exp(x)
            self.save_for_backward(y)
            return y
        def backward(self, gy):            # Tensors in, Tensors out (one per input, or None)
            (y,) = self.saved_tensors
            return gy * y                  # written with ops, so create_graph=True works

Non-tensor arguments are passed as keywords (``Sum.apply(x, axis=1)``) and reach ``forward``.
"""

from __future__ import annotations

from contextvars import ContextVar

import numpy as np

from .._backend import device_mismatch as _device_mismatch
from .._backend import device_of as _device_of
from .._backend.dtypes import is_floating
from ..tensor import Tensor
from .grad_mode import grad_enabled

__all__ = ["Function", "dispatch_policy", "dispatch_hooks"]

# The precision policy in force: None, or an object with
# ``cast_inputs(fn_cls, inputs) -> (inputs, compute_dtype, reason)``. minigrad.amp installs it for
# autocast regions and per-module precision; the backward engine clears it (invariant 5).
dispatch_policy: ContextVar = ContextVar("minigrad_dispatch_policy", default=None)

# Debug hooks in force: a tuple of callables ``hook(phase, fn, inputs, outputs)`` where phase is
# "forward" (inputs/outputs are the op's Tensors) or "backward" (inputs are the output grads,
# outputs the input grads). Empty tuple = zero cost beyond one lookup.
dispatch_hooks: ContextVar = ContextVar("minigrad_dispatch_hooks", default=())

_make = Tensor._make
_np_generic = np.generic
_np_asarray = np.asarray


class Function:
    """Base class of every differentiable primitive.

    Subclasses implement ``forward(*arrays, **attrs)`` on backend arrays and ``backward(*grads)``
    on Tensors, returning one gradient (or None) per positional input. Call them through
    ``apply`` only.
    """

    name = "function"
    saved = ()
    inputs = None
    compute_dtype = None
    amp_reason = None
    n_outputs = 1

    def save_for_backward(self, *arrays) -> None:
        """Keep arrays (inputs, outputs or intermediates) for ``backward``.

        Inputs saved here are version-checked: modifying them in place before backward raises.
        """
        self.saved = arrays

    @property
    def saved_tensors(self) -> tuple:
        """The saved arrays as Tensors connected to the graph (so double backward works)."""
        if self.saved is None:
            raise RuntimeError(
                f"the graph of op '{self.name}' was already freed by a backward pass; "
                "pass retain_graph=True to the first backward to run it again")
        out = []
        for arr in self.saved:
            out.append(self._as_graph_tensor(arr))
        return tuple(out)

    def _as_graph_tensor(self, arr):
        if not hasattr(arr, "dtype"):
            return arr
        for i, x in enumerate(self.inputs):
            if isinstance(x, Tensor) and x.data is arr:
                if x._version != self.versions[i]:
                    raise RuntimeError(
                        f"an input of op '{self.name}' (shape {tuple(arr.shape)}, {arr.dtype}) "
                        f"that backward needs was modified in place after the forward (version "
                        f"{self.versions[i]} -> {x._version}); clone it before modifying, or "
                        "modify it out of place")
                return x
        # Outputs are matched by id (recorded while they were alive, so ids were distinct) to
        # avoid keeping every op's output alive until backward.
        if id(arr) in self.output_ids:
            return _make(arr, is_floating(arr.dtype), self, self.output_ids.index(id(arr)))
        return _make(arr, False, None, 0)

    def forward(self, *arrays, **attrs):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, *grads):  # pragma: no cover - abstract
        raise NotImplementedError(
            f"op '{self.name}' has no backward; it cannot be differentiated "
            "(or twice-differentiated)")

    @classmethod
    def apply(cls, *inputs, **attrs):
        """Run the op: cast per the precision policy, compute, record, run hooks."""
        policy = dispatch_policy.get()
        fn = cls.__new__(cls)
        if policy is not None:
            inputs, fn.compute_dtype, fn.amp_reason = policy.cast_inputs(cls, inputs)
        try:
            out = fn.forward(*[x.data if isinstance(x, Tensor) else x for x in inputs], **attrs)
        except Exception as e:  # NumPy/CuPy mixed: name the op and both devices
            err = _device_mismatch(cls.name, [_device_of(x.data) for x in inputs
                                              if isinstance(x, Tensor)])
            if err is None:
                raise
            raise err from e
        if isinstance(out, _np_generic):  # NumPy turns 0-d results into scalars; keep arrays
            out = _np_asarray(out)
        record = False
        if grad_enabled.get():
            needs = tuple([isinstance(x, Tensor) and x.requires_grad for x in inputs])
            record = True in needs
        if type(out) is tuple:
            fn.n_outputs = len(out)
            out = tuple([_np_asarray(o) if isinstance(o, _np_generic) else o for o in out])
            if record:
                fn.out_meta = [(o.shape, o.dtype) for o in out]
                result = tuple([_make(o, is_floating(o.dtype), fn, i) for i, o in enumerate(out)])
            else:
                result = tuple([_make(o, False, None, 0) for o in out])
        elif record:
            result = _make(out, is_floating(out.dtype), fn, 0)
        else:
            result = _make(out, False, None, 0)
        if record:
            fn.inputs = inputs
            fn.needs_input_grad = needs
            if fn.saved:
                fn.versions = [x._version if isinstance(x, Tensor) else 0 for x in inputs]
                fn.output_ids = tuple([id(o) for o in out]) if type(out) is tuple else (id(out),)
        hooks = dispatch_hooks.get()
        if hooks:
            outs = result if type(result) is tuple else (result,)
            for hook in hooks:
                hook("forward", fn, inputs, outs)
        return result

    def __repr__(self) -> str:
        return f"<{type(self).__name__} op '{self.name}'>"
