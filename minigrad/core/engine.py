"""The backward engine: iterative topological walk over recorded ``Function`` nodes.

No recursion anywhere (invariant 7), so a 10,000-op chain is fine. Backward runs with the
precision policy cleared: every node replays the dtypes it recorded in forward (invariant 5).
"""

from __future__ import annotations

import weakref

import numpy as np

from .._backend import get_array_module, is_shared_memory
from .._backend.dtypes import is_floating
from .function import Cast
from .creation import ones_like, tensor
from .modes import (
    backward_seed, current_backward_node, dispatch_hooks, dispatch_policy, grad_enabled,
)
from .tensor import Tensor

__all__ = ["backward", "grad", "register_grad_ready_hook", "run_backward"]

_np_generic = np.generic
_np_asarray = np.asarray

# Gradient-ready hooks for data-parallel bucketing (minigrad.distributed): weak references to
# objects with ``watched`` (id -> leaf tensor), ``active``, ``begin()``, ``ready(leaf)`` (called
# once the leaf's ``.grad`` is final in this backward) and ``finish()`` (end of backward). Only an
# accumulating backward (``Tensor.backward``) notifies them; while the list is empty a backward
# pays one falsy check.
_grad_ready_hooks: list = []


def register_grad_ready_hook(hook):
    """Notify ``hook`` during every accumulating backward that reaches its watched leaves.

    Returns a function that unregisters it. The hook is held weakly: dropping it unregisters it.
    """
    ref = weakref.ref(hook)
    _grad_ready_hooks.append(ref)

    def remove():
        if ref in _grad_ready_hooks:
            _grad_ready_hooks.remove(ref)
    return remove


def _watch_leaves(deps):
    """(leaf id -> [uses left, hook], active hooks) for watched leaves of this graph, or None."""
    _grad_ready_hooks[:] = [r for r in _grad_ready_hooks if r() is not None]
    hooks = [h for h in (r() for r in _grad_ready_hooks) if h is not None and h.active]
    if not hooks:
        return None
    pending: dict = {}
    for fn in deps:
        for x, need in zip(fn.inputs, fn.needs_input_grad):
            if need and x.creator is None:
                entry = pending.get(id(x))
                if entry is not None:
                    entry[0] += 1
                    continue
                for h in hooks:
                    if id(x) in h.watched:
                        pending[id(x)] = [1, h]
                        break
    if not pending:
        return None
    used = list({id(e[1]): e[1] for e in pending.values()}.values())
    for h in used:
        h.begin()
    return pending, used


def _freed_error(fn) -> RuntimeError:
    return RuntimeError(
        f"trying to backward through the graph a second time: the graph of op '{fn.name}' was "
        "freed by an earlier backward. Pass retain_graph=True to the first backward (or "
        "gm.backward) if you need to run backward twice")


def _collect(roots) -> dict:
    """Count, for every node reachable from ``roots``, how many graph edges consume it."""
    deps: dict = {}
    stack = []
    for r in roots:
        fn = r.creator
        if fn is not None and fn not in deps:
            deps[fn] = 0
            stack.append(fn)
    while stack:
        fn = stack.pop()
        if fn.inputs is None:
            raise _freed_error(fn)
        for x, need in zip(fn.inputs, fn.needs_input_grad):
            if need and x.creator is not None:
                c = x.creator
                if c in deps:
                    deps[c] += 1
                else:
                    deps[c] = 1
                    stack.append(c)
    return deps


def _conform(g, x, fn):
    """Give a gradient its tensor's dtype; a shape mismatch is a bug in the op's backward.

    A backward's array expression on 0-d arrays gives a NumPy scalar (ufuncs do that): every
    gradient passes here, so this is the one place that turns it back into a 0-d array.
    """
    if isinstance(g._data, _np_generic):
        g = Tensor._make(_np_asarray(g._data), g.requires_grad, g.creator, g._out_index)
    if g.shape != x.shape:
        name = fn.name if fn is not None else "backward"
        raise RuntimeError(
            f"op '{name}' produced a gradient of shape {g.shape} for an input of shape "
            f"{x.shape}; this is a bug in that op's backward")
    if g.dtype != x.dtype and is_floating(x.dtype):
        g = g.astype(x.dtype)
    return g


def run_backward(roots, grad_roots, *, retain_graph=False, create_graph=False,
                 capture=None, accumulate=True):
    """Propagate ``grad_roots`` from ``roots`` back through the graph.

    Args:
        roots: output Tensors.
        grad_roots: one gradient Tensor per root, same shape.
        retain_graph: keep saved tensors so backward can run again.
        create_graph: record the backward itself (higher-order derivatives).
        capture: optional list of Tensors whose total gradient is returned (in that order).
        accumulate: add gradients into ``.grad`` of every leaf that requires grad.

    Returns:
        The captured gradients (``None`` for a tensor the roots do not depend on).
    """
    # Long on purpose: the walk and ``deliver`` share the per-backward state (buffers, pending
    # leaf hooks, owned memory) as closure variables, which the loop reads once per graph
    # node; splitting them into methods of a state object would add an attribute lookup per
    # read on the hottest path of a training step.
    deps = _collect(roots)
    buffers: dict = {}
    captured: dict = {}
    capture_ids = {id(t) for t in capture} if capture else ()
    watch = _watch_leaves(deps) if accumulate and _grad_ready_hooks else None
    pending = watch[0] if watch is not None else None

    owners: set = set()  # memory handed to a leaf's .grad during this backward

    def deliver(x, g, fn):
        g = _conform(g, x, fn)
        if capture_ids and id(x) in capture_ids:
            prev = captured.get(id(x))
            captured[id(x)] = g if prev is None else prev + g
        c = x.creator
        if c is None:
            if accumulate:
                if x._grad is None:
                    g = _own_grad(g, owners, fn is None)
                    x._grad = g  # the slot: no setter check
                else:
                    x._grad = x._grad + g
                if pending is not None:
                    entry = pending.get(id(x))
                    if entry is not None:
                        entry[0] -= 1
                        if entry[0] == 0:
                            entry[1].ready(x)
            return
        slots = buffers.get(c)
        if slots is None:
            slots = buffers[c] = [None] * c.n_outputs
        i = x._out_index
        slots[i] = g if slots[i] is None else slots[i] + g

    grad_token = grad_enabled.set(bool(create_graph))
    policy_token = dispatch_policy.set(None)
    try:
        for r, g in zip(roots, grad_roots):
            if not r.requires_grad:
                raise RuntimeError(
                    f"backward on a tensor of shape {r.shape} that does not require grad: no op "
                    "that produced it had an input with requires_grad=True (attach parameters "
                    "to a GradManager, or create them as Parameter / requires_grad=True)")
            deliver(r, g, None)
        ready = [fn for fn, n in deps.items() if n == 0]
        hooks = dispatch_hooks.get()
        while ready:
            fn = ready.pop()
            grads = buffers.pop(fn, None)
            if grads is None and fn.n_outputs == 1:
                # Nothing reached the only output (the op after it returned no gradient, as
                # sign's or a comparison's): its vector-Jacobian product is zero, which None
                # stands for, so its inputs get none either (no zeros of an unknown shape).
                gins = (None,) * len(fn.inputs)
            else:
                grads = grads or [None] * fn.n_outputs
                for i, g in enumerate(grads):
                    if g is None and fn.materialize_grads:
                        shape, dtype = fn.out_meta[i]   # several outputs: their metadata
                        grads[i] = Tensor._make(_zeros_like_meta(fn, shape, dtype), False,
                                                None, 0)
                if hooks:
                    node_token = current_backward_node.set(fn)
                    try:
                        gins = fn.backward(*grads)
                    finally:
                        current_backward_node.reset(node_token)
                else:
                    gins = fn.backward(*grads)
                if type(gins) is not tuple:
                    gins = (gins,)
                if len(gins) != len(fn.inputs):
                    raise RuntimeError(
                        f"op '{fn.name}' backward returned {len(gins)} gradients for "
                        f"{len(fn.inputs)} inputs")
                if hooks:
                    for hook in hooks:
                        hook("backward", fn, tuple(grads), gins)
            for x, need, g in zip(fn.inputs, fn.needs_input_grad, gins):
                if not need:
                    continue
                if g is not None:
                    deliver(x, g, fn)
                c = x.creator
                if c is not None:
                    deps[c] -= 1
                    if deps[c] == 0:
                        ready.append(c)
            if not retain_graph:
                fn.inputs = None
                fn.saved = None
        if watch is not None:
            for h in watch[1]:
                h.finish()
    finally:
        dispatch_policy.reset(policy_token)
        grad_enabled.reset(grad_token)
    if capture is None:
        return None
    return [captured.get(id(t)) for t in capture]


def _own_grad(g, owners: set, is_seed: bool):
    """``g`` as a leaf's own ``.grad``: copied when its memory already went to another leaf in
    this backward (``a + b`` hands one array to both), when it is the caller's seed, or when it
    is read-only or a broadcast, so the gradient is a writable array no other tensor sees (an
    in-place unscale or ``p.grad.mul_`` changes one parameter's gradient only)."""
    a = g._data
    owner = a.base if getattr(a, "base", None) is not None else a
    shared = is_seed or id(owner) in owners or is_shared_memory(a)
    if shared:
        a = a.copy()
        g = Tensor._make(a, g.requires_grad, g.creator, g._out_index)
        owner = a
    owners.add(id(owner))
    return g


def _zeros_like_meta(fn, shape, dtype):
    ref = next(x._data for x in fn.inputs if isinstance(x, Tensor))
    return get_array_module(ref).zeros(shape, dtype=dtype)


def _as_list(x):
    # Any iterable counts (``model.parameters()`` is a generator, as in PyTorch); a Tensor or an
    # array is one item even though it is iterable.
    if x is None:
        return []
    if isinstance(x, Tensor) or hasattr(x, "shape"):
        return [x]
    try:
        return list(x)
    except TypeError:
        return [x]


def default_grad(y: Tensor, dy, what: str = "backward") -> Tensor:
    """Check or make the seed gradient for ``y``: ones for a one-element ``y``."""
    if dy is None:
        if y.size != 1:
            raise RuntimeError(
                f"{what}: y has shape {y.shape} ({y.size} elements); pass dy of that shape, or "
                "reduce y to a scalar first (e.g. loss.mean())")
        return ones_like(y)
    if not isinstance(dy, Tensor):
        dy = tensor(dy, dtype=y.dtype, device=y.device)
    if dy.shape != y.shape:
        if dy.size == 1 and y.size == 1:
            dy = dy.reshape(y.shape)
        else:
            raise ValueError(
                f"{what}: dy has shape {dy.shape} but y has shape {y.shape}; they must match")
    if dy.dtype != y.dtype and is_floating(y.dtype):
        dy = Cast.apply(dy, dtype=y.dtype)
    return dy


def grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
         allow_unused=True):
    """Gradients of ``outputs`` with respect to ``inputs``, returned rather than accumulated.

    Args:
        outputs: a Tensor or an iterable of Tensors.
        inputs: a Tensor or an iterable of Tensors (leaves or intermediates), e.g.
            ``model.parameters()``.
        grad_outputs: seed gradients, one per output (defaults to ones for scalars).
        create_graph: record the backward so the result can be differentiated again
            (gradient penalties).
        retain_graph: keep the graph; defaults to ``create_graph``.
        allow_unused: return None for an input the outputs do not depend on (else raise).

    Returns:
        A tuple with one gradient per input (a single Tensor if ``inputs`` was one Tensor).

    Example:
        >>> import minigrad as mg
        >>> from minigrad.autodiff import grad
        >>> x = mg.tensor([3.0], requires_grad=True)
        >>> (gx,) = grad((x ** 3).sum(), [x], create_graph=True)
        >>> float(grad(gx.sum(), [x])[0].item())   # d2/dx2 x^3 = 6x
        18.0
    """
    single = isinstance(inputs, Tensor)
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    dys = _as_list(grad_outputs) or [None] * len(outs)
    if len(dys) != len(outs):
        raise ValueError(f"grad: {len(outs)} outputs but {len(dys)} grad_outputs")
    dys = [default_grad(y, dy, "grad") for y, dy in zip(outs, dys)]
    if retain_graph is None:
        retain_graph = create_graph
    res = run_backward(outs, dys, retain_graph=retain_graph, create_graph=create_graph,
                       capture=ins, accumulate=False)
    if not allow_unused:
        for i, g in enumerate(res):
            if g is None:
                raise RuntimeError(f"grad: input {i} (shape {ins[i].shape}) is not used by the "
                                   "outputs; pass allow_unused=True to get None for it")
    return res[0] if single else tuple(res)


def backward(self: Tensor, dy=None, retain_graph: bool | None = None,
             create_graph: bool = False) -> None:
    """Accumulate d(self)/d(leaf) into ``.grad`` of every leaf that requires grad.

    Inside a training step that owns ``loss.backward()`` (``modes.backward_seed``, set by
    OneFlow's ``nn.Graph``), the step first maps ``self`` to the tensor it differentiates.
    """
    seed = backward_seed.get()
    root = self if seed is None else seed(self)
    dy = default_grad(root, dy, "Tensor.backward")
    if retain_graph is None:
        retain_graph = create_graph
    run_backward([root], [dy], retain_graph=retain_graph, create_graph=create_graph)


# The engine sits above Tensor, so it installs the method that calls it.
Tensor.backward = backward
