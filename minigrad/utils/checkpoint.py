"""Activation checkpointing: run a block without keeping its activations, recompute it in backward.

``checkpoint(fn, *args)`` runs ``fn`` under ``no_grad`` and records one node, ``checkpoint``,
whose inputs are the Tensors requiring grad that ``fn`` used: its arguments and whatever it
captured (a module's parameters, closed-over activations), found by a dispatch hook during the
forward. Its backward re-runs ``fn``

* in the autocast state of the original forward (AMP_REFERENCE section 4 line 7): the region's
  dtype, overrides and policy, whether backward runs inside a region or not;
* with the random generator state of the original forward (same dropout masks), CPU generator;
* on stand-ins for those inputs (fresh leaves with the same data, substituted at dispatch), so
  the recomputed graph ends at the checkpoint and its gradients flow back through the outer
  graph to the real inputs: ``loss.backward()``, ``GradManager`` and ``grad()`` all work.

Differences from PyTorch: ``use_reentrant`` is accepted and ignored (one implementation);
recomputing through ``create_graph=True`` (double backward) raises instead of returning
gradients cut from the inputs; ``fn`` must return a Tensor or a tuple/list of Tensors.

Example:
    >>> import minigrad as mg
    >>> from minigrad import nn
    >>> from minigrad.utils.checkpoint import checkpoint
    >>> block = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
    >>> x = mg.randn(2, 4, requires_grad=True)
    >>> checkpoint(block, x).sum().backward()
    >>> block[0].weight.grad.shape, x.grad.shape
    ((8, 4), (2, 4))
"""

from __future__ import annotations

from .._backend import random as _random
from ..precision.autocast import captured_state, replay_state
from ..core.engine import run_backward
from ..core.function import Function
from ..core.grad_mode import enable_grad, no_grad
from ..core.modes import dispatch_hooks, grad_enabled
from ..core.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


class _Substitute:
    """Dispatch policy of a recompute: swaps the checkpoint's inputs for their stand-ins, then
    defers to the replayed policy (autocast or per-module precision), if any."""

    __slots__ = ("inner", "sub")

    def __init__(self, sub, inner):
        if isinstance(inner, _Substitute):
            # A checkpoint recomputed inside another's recompute: the outer stand-in of a
            # tensor is what this one's mapping knows, so compose outer-then-inner into one map
            # (applying them in the other order would hand this recompute the outer stand-in,
            # whose gradient nobody captures).
            merged = {k: sub.get(id(v), v) for k, v in inner.sub.items()}
            merged.update(sub)
            sub, inner = merged, inner.inner
        self.sub = sub
        self.inner = inner

    def cast_inputs(self, fn_cls, inputs):
        sub = self.sub
        inputs = tuple([sub.get(id(x), x) if isinstance(x, Tensor) else x for x in inputs])
        if self.inner is None:
            return inputs, None, None
        return self.inner.cast_inputs(fn_cls, inputs)


class Checkpoint(Function):
    """The node standing for a checkpointed block; see the module docstring."""

    name = "checkpoint"
    materialize_grads = False  # an output nobody used gets None: its parameters stay None

    def forward(self, *arrays, run, outputs):
        self.run = run  # (fn, args, kwargs, autocast state, rng state, linked outputs, versions)
        return outputs

    def backward(self, *grads):
        if grad_enabled.get():
            raise RuntimeError(
                "checkpoint: backward with create_graph=True (double backward) through a "
                "checkpointed block is not supported; call the block without checkpoint")
        fn, args, kwargs, amp_state, rng, linked, watched = self.run
        for x, v in watched:  # every tensor the block read from outside, grad or not
            if x._version != v:
                raise RuntimeError(
                    f"checkpoint: a tensor the checkpointed block used (shape {x.shape}, "
                    f"{x.dtype}) was modified in place after the forward (version {v} -> "
                    f"{x._version}); the recompute would see other values. Modify it out of "
                    "place, or after backward")
        stand = [Tensor._make(x._data, True, None, 0) for x in self.inputs]
        sub = {id(x): s for x, s in zip(self.inputs, stand)}
        args = [sub.get(id(a), a) if isinstance(a, Tensor) else a for a in args]
        saved_rng = _random.get_state() if rng is not None else None
        try:
            if rng is not None:
                _random.set_state(rng)
            with enable_grad(), replay_state(amp_state, lambda pol: _Substitute(sub, pol)):
                out = fn(*args, **kwargs)
        finally:
            if saved_rng is not None:
                _random.set_state(saved_rng)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        outs = [outs[i] for i in linked]  # the outputs this node stands for
        pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad and g is not None]
        if not pairs:
            return (None,) * len(stand)
        return tuple(run_backward([o for o, _ in pairs], [g for _, g in pairs],
                                  capture=stand, accumulate=False))


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state: bool = True,
               **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations for backward.

    Args:
        function: a callable (a Module, a function) returning a Tensor or a tuple of Tensors.
        *args: its positional arguments (Tensors or anything else).
        use_reentrant: PyTorch's switch between two implementations; ignored.
        preserve_rng_state: replay the CPU random generator so dropout draws the same masks.
        **kwargs: its keyword arguments.

    Returns:
        What ``function`` returns; outputs are connected to the graph when any Tensor it used
        requires grad and grad mode is on.
    """
    if not grad_enabled.get():
        return function(*args, **kwargs)
    read: dict = {}    # every Tensor made outside that the block read (version-checked)
    made: set = set()  # ids of Tensors the block made
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor):
            read.setdefault(id(a), a)

    def collect(phase, fn, inputs, outputs):
        for x in inputs:
            if isinstance(x, Tensor) and id(x) not in made:
                read.setdefault(id(x), x)
        made.update(id(o) for o in outputs)

    amp_state = captured_state()
    rng = _random.get_state() if preserve_rng_state else None
    token = dispatch_hooks.set(dispatch_hooks.get() + (collect,))
    try:
        # A private weight-cast cache, as in the recompute: a cast cached earlier in the region
        # would hide the parameter behind it from ``collect``.
        with no_grad(), replay_state(amp_state):
            out = function(*args, **kwargs)
    finally:
        dispatch_hooks.reset(token)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    bad = [type(o).__name__ for o in outs if not isinstance(o, Tensor)]
    if bad:
        raise TypeError(f"checkpoint: the function must return a Tensor or a tuple of Tensors, "
                        f"got {bad}")
    # Only outputs an op of the block made join the graph; a detached tensor, a constant or an
    # input handed straight back are returned as they are (PyTorch's checkpoint does the same).
    linked = [i for i, o in enumerate(outs) if id(o) in made]
    used = [x for x in read.values() if x.requires_grad]  # the block's inputs in the graph
    if not used or not linked:
        return out
    arrays = tuple(outs[i]._data for i in linked)
    res = Checkpoint.apply(*used,
                           run=(function, args, kwargs, amp_state, rng, linked,
                                [(x, x._version) for x in read.values()]),
                           outputs=arrays if len(arrays) > 1 else arrays[0])
    res = res if isinstance(res, tuple) else (res,)
    joined = list(outs)
    for i, r in zip(linked, res):
        joined[i] = r
    if isinstance(out, (tuple, list)):
        return type(out)(joined) if isinstance(out, tuple) else joined
    return joined[0]


def checkpoint_sequential(functions, segments: int, input, use_reentrant=None,
                          preserve_rng_state: bool = True):
    """Run a sequence of layers in ``segments`` chunks, checkpointing all but the last chunk.

    Args:
        functions: an ``nn.Sequential`` or a list of callables applied in order.
        segments: number of chunks (at most the number of layers).
        input: the input Tensor of the first layer.
        use_reentrant: ignored (see :func:`checkpoint`).
        preserve_rng_state: as in :func:`checkpoint`.

    Returns:
        The output of the last layer.
    """
    layers = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if not 1 <= segments <= max(len(layers), 1):
        raise ValueError(f"checkpoint_sequential: segments must be in [1, {len(layers)}] for "
                         f"{len(layers)} layers, got {segments}")
    size = -(-len(layers) // segments)
    chunks = [layers[i:i + size] for i in range(0, len(layers), size)]

    def run(chunk):
        def forward(x):
            for layer in chunk:
                x = layer(x)
            return x
        return forward

    for chunk in chunks[:-1]:
        input = checkpoint(run(chunk), input, preserve_rng_state=preserve_rng_state)
    return run(chunks[-1])(input)
