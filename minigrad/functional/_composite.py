"""Composite ops that are still one row of the AMP policy.

The policy works per ``Function.name`` (invariant 1): an op in the float32 list must run in
float32 under autocast *as a whole*. A composite written as a plain function of primitives would
instead have each primitive decided separately (a loss built of ``sub``/``abs``/``mean`` would
subtract in float16). So each composite op here is one ``Function`` subclass made by
:func:`composite`: ``Function.apply`` casts its inputs per the op's own row, and ``forward``
runs the primitive formula on them with the policy cleared (so the inner ops keep the dtype the
row chose) and without recording.

Backward recomputes the formula on detached copies of the inputs and differentiates it (the
region is checkpointed: nothing of the inner graph outlives the forward). When the backward is
itself recorded (``create_graph=True``) the vector-Jacobian product runs as another composite
(``<name>_backward``) over the real inputs, so higher derivatives work through the same
mechanism. Composites cost one extra forward of their formula in backward; hot ops stay
primitives.
"""

from __future__ import annotations

from ..core.engine import run_backward
from ..core.function import Function
from ..core.modes import dispatch_policy, grad_enabled
from ..core.tensor import Tensor
from ._utils import fast_backward

__all__ = ["composite"]

_make = Tensor._make


def _run_inner(impl, inputs, kw, needs, detach=True):
    """``impl`` on leaves made of ``inputs``; grads flow to the leaves.

    ``detach``: cut every input from its graph (the op's own backward must not walk into the
    rest of the model). A nested vector-Jacobian product passes False: its inputs are already
    the leaves of the enclosing one, and the connection is what makes higher derivatives work.
    """
    leaves = []
    for x, need in zip(inputs, needs):
        if isinstance(x, Tensor):
            if detach or not x.requires_grad:
                x = _make(x._data, bool(need), None, 0)
        elif hasattr(x, "dtype") and hasattr(x, "shape"):
            x = _make(x, bool(need), None, 0)
        leaves.append(x)
    out = impl(*leaves, **kw)
    return leaves, out


class _Composite(Function):
    impl = None  # staticmethod set by ``composite``

    def forward(self, *arrays, kw):
        self.kw = kw
        # Saving the inputs arms the version check: backward recomputes from them, so an
        # in-place change after the forward must raise rather than give a wrong gradient.
        self.save_for_backward(*arrays)
        p_tok = dispatch_policy.set(None)
        g_tok = grad_enabled.set(False)
        try:
            _, out = _run_inner(type(self).impl, arrays, kw, (False,) * len(arrays))
        finally:
            grad_enabled.reset(g_tok)
            dispatch_policy.reset(p_tok)
        if isinstance(out, tuple):
            return tuple(o._data for o in out)
        return out._data

    def backward(self, *gys):
        needs = self.needs_input_grad
        inputs = self.saved_tensors
        if fast_backward():
            return _vjp(type(self).impl, self.kw, needs, *inputs, *gys)
        vjp_cls = _vjp_class(type(self))
        grads = vjp_cls.apply(*inputs, *gys,
                              kw={"impl": type(self).impl, "kw": self.kw, "needs": needs})
        grads = grads if isinstance(grads, tuple) else (grads,)
        it = iter(grads)
        return tuple(next(it) if n else None for n in needs)


def _vjp(impl, kw, needs, *args, detach=True):
    """Gradients of ``impl(*inputs, **kw)`` with respect to the inputs flagged in ``needs``,
    seeded with the output gradients (``args`` = inputs followed by one grad per output)."""
    n = len(needs)
    inputs, gys = args[:n], args[n:]
    g_tok = grad_enabled.set(True)
    p_tok = dispatch_policy.set(None)
    try:
        leaves, out = _run_inner(impl, inputs, kw, needs, detach)
    finally:
        dispatch_policy.reset(p_tok)
        grad_enabled.reset(g_tok)
    outs = out if isinstance(out, tuple) else (out,)
    roots, seeds = [], []
    for o, g in zip(outs, gys):
        if isinstance(o, Tensor) and o.requires_grad and g is not None:
            roots.append(o)
            seeds.append(g if isinstance(g, Tensor) else _make(g, False, None, 0))
    wanted = [x for x, need in zip(leaves, needs) if need]
    if roots:
        # A recorded backward references the inner graph's tensors: keep it then (like grad()).
        cg = grad_enabled.get()
        res = run_backward(roots, seeds, retain_graph=cg, create_graph=cg, capture=wanted,
                           accumulate=False)
    else:
        res = [None] * len(wanted)
    it = iter(res)
    out = []
    for x, need in zip(leaves, needs):
        if not need:
            out.append(None)
            continue
        g = next(it)
        if g is None:  # the output does not depend on this input
            g = _make(x._data * 0, False, None, 0)
        out.append(g)
    return tuple(out)


def _vjp_impl(*args, impl, kw, needs):
    grads = _vjp(impl, kw, needs, *args, detach=False)
    return tuple(g for g in grads if g is not None)


_VJP_CLASSES: dict = {}


def _vjp_class(cls):
    """The recorded backward of composite ``cls``: itself a composite (``<name>_backward``)."""
    vjp = _VJP_CLASSES.get(cls)
    if vjp is None:
        vjp = _VJP_CLASSES[cls] = composite(cls.name + "_backward", _vjp_impl,
                                            module=cls.__module__)
    return vjp


def composite(name: str, impl, module: str | None = None) -> type:
    """A ``Function`` subclass named ``name`` that computes ``impl(*inputs, **kw)``.

    Call it as ``cls.apply(*tensors, kw={...})``: positional arguments are the op's inputs
    (Tensors, arrays, Python scalars or None), ``kw`` its non-tensor options.
    """
    cls_name = "".join(p.title() for p in name.split("_")) or "Composite"
    attrs = {"name": name, "impl": staticmethod(impl),
             "__module__": module or getattr(impl, "__module__", __name__),
             "__doc__": f"``{name}`` as one policy row (see ``_composite``)."}
    return type(cls_name, (_Composite,), attrs)
