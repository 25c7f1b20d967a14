"""``Function``: one class per differentiable primitive, and ``apply``, the single dispatch point.

``Function.apply`` is the only place that (a) asks the precision policy in force
(``modes.dispatch_policy``, built by ``minigrad.precision``) for the compute dtype and casts
inputs, (b) decides whether to record a graph node, and (c) runs the debug hooks (dtype trace,
non-finite detection) -- invariant 1. Ops never read AMP state themselves.

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

dtype promotion (PyTorch's lattice, ``_backend.dtypes.result_type``) also happens here, per the
op's ``promote`` class attribute: ``"common"`` gives the result the promoted dtype of the inputs
(int64 + float16 -> float16, int tensor + 2.5 -> float32), ``"float"`` does the same and turns a
bool/integer result into float32 (exp, true division), ``"same"`` refuses mixing bool/int with float
after the autocast casts (matmul, linear, conv: PyTorch's dtype-mismatch error).
"""

from __future__ import annotations

import numpy as np

from .._backend import device_mismatch as _device_mismatch
from .._backend import casts
from .._backend import device_of as _device_of
from .._backend.dtypes import _FLOATS, float_result_type, is_floating, result_type
from .errors import broadcast_shape
from .tensor import Tensor
from .modes import dispatch_hooks, dispatch_policy, grad_enabled

__all__ = ["Cast", "Function"]


_make = Tensor._make
_np_generic = np.generic
_np_asarray = np.asarray
_SCALARS = (int, float, bool)


def _zero_dim_mix(arrays) -> bool:
    """True when 0-d and dimensioned arrays of different dtypes meet (PyTorch then lets the
    dimensioned ones decide within a category)."""
    zero = dims = None
    for a in arrays:
        if a.ndim:
            dims = a.dtype if dims is None else dims
        else:
            zero = a.dtype if zero is None else zero
    if zero is None or dims is None:
        return False
    return any(a.dtype != dims for a in arrays)


def _zero_dim_inputs(inputs) -> bool:
    """:func:`_zero_dim_mix` of the Tensor inputs, cheap when no input is 0-d (the usual op)."""
    for x in inputs:
        if isinstance(x, Tensor) and not x._data.ndim:
            return _zero_dim_mix([t._data for t in inputs if isinstance(t, Tensor)])
    return False


def _promote(cls, inputs):
    """``inputs`` with tensors cast to the dtype PyTorch's promotion gives op ``cls``."""
    kind = cls.promote
    first = None
    uniform = True
    scalars = []
    for x in inputs[cls.promote_skip:]:
        if isinstance(x, Tensor):
            d = x._data.dtype
            if first is None:
                first = d
            elif d is not first and d != first:
                uniform = False
        elif type(x) in _SCALARS:
            scalars.append(type(x))
    # One float dtype throughout (Python scalars never widen a float tensor): nothing to do.
    if first is None or uniform and (first in _FLOATS or not scalars and kind == "common"):
        return inputs
    tensors = [x._data for x in inputs[cls.promote_skip:] if isinstance(x, Tensor)]
    zero_dim = _zero_dim_mix(tensors)
    dims = [a.dtype for a in tensors if not zero_dim or a.ndim]
    zeros = [a.dtype for a in tensors if zero_dim and not a.ndim]
    target = (float_result_type if kind == "float" else result_type)(dims, scalars, zeros)
    # Floats of different widths are left to NumPy and the autocast "promote" row, which agree
    # with PyTorch (widest float) and record the cast on the op; only bool/int tensors, the
    # float16/bfloat16 pair NumPy cannot combine, and 0-d tensors beside dimensioned ones (NumPy
    # lets a float64 0-d widen a float32 array, PyTorch does not) are cast here.
    wide = zero_dim or target not in dims + zeros
    out = tuple([Cast.apply(x, dtype=target) if isinstance(x, Tensor) and i >= cls.promote_skip
                 and x._data.dtype != target and (wide or x._data.dtype not in _FLOATS) else x
                 for i, x in enumerate(inputs)])
    # ``inputs`` itself when nothing was cast: the caller retries only on a change (a bool
    # result of a comparison never has an input's dtype, and must not retry forever).
    return inputs if all(a is b for a, b in zip(out, inputs)) else out


def _check_same_dtype(cls, inputs):
    # PyTorch refuses every mixed product; minigrad refuses mixing categories (int64 @ float32,
    # which NumPy would silently run in float64) and keeps float-width mixes running at the
    # widest float with Tensor Core semantics (float32 data into a .half() model, MindSpore's
    # cells rely on it).
    first = None
    for x in inputs:
        if isinstance(x, Tensor):
            if first is None:
                first = x
            elif x._data.dtype != first._data.dtype and (
                    x._data.dtype not in _FLOATS or first._data.dtype not in _FLOATS):
                raise RuntimeError(
                    f"{cls.name}: expected all inputs to have the same dtype, but got "
                    f"{first._data.dtype} {tuple(first.shape)} and {x._data.dtype} "
                    f"{tuple(x.shape)}; cast one with .astype(...) (amp.autocast casts "
                    f"{cls.name} inputs for you)")


def _scalar_output(fn, out):
    """``out`` (a NumPy scalar) as a 0-d array. A saved copy of it is swapped for the array
    too: backward recognises saved outputs by identity, and a forward that saved ``y`` would
    otherwise see a constant, silently dropping the output's dependence on the inputs (second
    derivatives of std/norm/prod over all axes)."""
    arr = _np_asarray(out)
    if fn.saved:
        fn.saved = tuple([arr if s is out else s for s in fn.saved])
    return arr


def _broadcast_error(cls, inputs):
    """Replace NumPy's bare broadcast message with one naming the op and the shapes."""
    broadcast_shape(cls.name, *[x.shape for x in inputs if isinstance(x, Tensor)])


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
    promote = None      # None | "common" | "float" | "same" (see the module docstring)
    promote_skip = 0    # leading inputs promotion leaves alone (where's condition)
    materialize_grads = True  # backward gets zeros (not None) for outputs nobody used

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # PyTorch's protocol (``@staticmethod forward(ctx, ...)`` on Tensors, ``F.apply``) is
        # recognised once, at class creation: its ``apply`` runs the user's methods through a
        # graph node whose instance is ``ctx`` (:class:`_CtxNode`). Ops keep the hot path.
        if isinstance(cls.__dict__.get("forward"), staticmethod) \
                or "setup_context" in cls.__dict__:
            cls.apply = classmethod(_ctx_apply)
            cls._ctx_node = None

    def __call__(self, *inputs):
        """MegEngine's protocol: ``MyFunction()(x, ...)`` with ``forward(self, *tensors)`` and
        ``backward(self, *output_grads)`` both on Tensors (one gradient, or None, per input).

        The forward runs with recording off, under the ambient autocast policy; attributes it
        sets on ``self`` (``self.y = y``) are there for ``backward``. An instance is used once,
        as in MegEngine. minigrad's own ops (forward on arrays) are called through ``apply``.
        """
        if getattr(self, "_megengine_called", False):
            raise RuntimeError(f"{type(self).__name__}: a Function instance is used once "
                               f"(MegEngine's rule); create a new one per call: "
                               f"{type(self).__name__}()(x)")
        if type(self).apply.__func__ is _ctx_apply:
            raise TypeError(f"{type(self).__name__} has PyTorch's static forward(ctx, ...): "
                            f"call {type(self).__name__}.apply(...), not an instance")
        self._megengine_called = True
        node = _instance_node(type(self))
        on = grad_enabled.get()
        needs = tuple([on and isinstance(a, Tensor) and a.requires_grad for a in inputs])
        return node.apply(*inputs, _user=self, _originals=inputs, _needs=needs)

    def save_for_backward(self, *arrays) -> None:
        """Keep arrays (inputs, outputs or intermediates) for ``backward``.

        Inputs and outputs saved here are version-checked: modifying them in place (through
        any view or alias) before backward raises.
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

    def saved_tensors_used(self, *used) -> tuple:
        """``saved_tensors``, version-checking only the ones the backward will read (``used``,
        one flag each): a product's backward needs each factor only for the *other* factor's
        gradient, so changing a weight in place after the forward of ``x @ w`` with ``x``
        needing no gradient is fine (PyTorch saves only what it needs)."""
        if self.saved is None:
            return self.saved_tensors  # raises the freed-graph error
        return tuple(self._as_graph_tensor(arr, check) for arr, check in zip(self.saved, used))

    def _as_graph_tensor(self, arr, check: bool = True):
        if not hasattr(arr, "dtype"):
            return arr
        for i, x in enumerate(self.inputs):
            if isinstance(x, Tensor) and x._data is arr:
                vc = x._vc
                if check and vc is not None and vc[0] != (self.versions[i] or 0):
                    self._version_error("an input", arr, self.versions[i] or 0, vc[0])
                return x
        # Outputs are matched by id (recorded while they were alive, so ids were distinct) to
        # avoid keeping every op's output alive until backward; their counters were kept.
        if id(arr) in self.output_ids:
            k = self.output_ids.index(id(arr))
            vc = self.output_vcs[k]
            if vc[0]:
                self._version_error("an output", arr, 0, vc[0])
            t = _make(arr, is_floating(arr.dtype), self, k)
            t._vc = vc
            return t
        return _make(arr, False, None, 0)

    def _version_error(self, what, arr, saved, now):
        raise RuntimeError(
            f"{what} of op '{self.name}' (shape {tuple(arr.shape)}, {arr.dtype}) "
            f"that backward needs was modified in place after the forward (version "
            f"{saved} -> {now}); clone it before modifying, or modify it out of place")

    def forward(self, *arrays, **attrs):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, *grads):  # pragma: no cover - abstract
        raise NotImplementedError(
            f"op '{self.name}' has no backward; it cannot be differentiated "
            "(or twice-differentiated)")

    @classmethod
    def apply(cls, *inputs, **attrs):
        """Run the op: cast per the precision policy, compute, record, run hooks."""
        # Long on purpose: every op of every step runs this body, and each helper call it
        # made instead would add its cost to every op (benchmarks/overhead.py measures it).
        # The rare paths (errors, promotion) are the helpers above.
        policy = dispatch_policy.get()
        fn = cls.__new__(cls)
        promote = cls.promote
        if policy is not None:
            inputs, fn.compute_dtype, fn.amp_reason = policy.cast_inputs(cls, inputs)
        if promote is not None and promote == "same":
            _check_same_dtype(cls, inputs)
        try:
            out = fn.forward(*[x._data if isinstance(x, Tensor) else x for x in inputs], **attrs)
        except Exception as e:
            # Errors are explained only after they happen, so a successful op pays nothing.
            err = _device_mismatch(cls.name, [_device_of(x._data) for x in inputs
                                              if isinstance(x, Tensor)])
            if err is not None:  # NumPy/CuPy mixed: name the op and both devices
                raise err from e
            if promote is not None and promote != "same" and isinstance(e, (ValueError,
                                                                            TypeError)):
                promoted = _promote(cls, inputs)  # float16 with bfloat16: NumPy has no rule
                if promoted is not inputs:
                    return cls.apply(*promoted, **attrs)
                _broadcast_error(cls, inputs)
            raise
        if isinstance(out, _np_generic):  # NumPy turns 0-d results into scalars; keep arrays
            out = _scalar_output(fn, out)
        if promote is not None and promote != "same":
            # NumPy and PyTorch agree whenever the result has the dtype of an input (same-dtype
            # floats, float widths, integers): checking the result costs one comparison. When
            # they may differ (int64 * float32 -> float64), redo the op on promoted inputs.
            # 0-d tensors beside dimensioned ones of another dtype: NumPy lets the 0-d decide
            # (float32[2] + float64 0-d -> float64), PyTorch the dimensioned ones.
            od = out.dtype
            x = inputs[0]
            if promote == "float" and od not in _FLOATS:
                redo = True
            elif isinstance(x, Tensor) and x._data.dtype is od:
                redo = False
                for t in inputs:  # no slice: this runs for every op
                    if t is not x and isinstance(t, Tensor) and t._data.dtype is not od:
                        redo = _zero_dim_inputs(inputs)
                        break
            else:
                redo = not [t for t in inputs if isinstance(t, Tensor) and t._data.dtype is od] \
                    or _zero_dim_inputs(inputs)
            if redo:
                promoted = _promote(cls, inputs)
                if promoted is not inputs:
                    return cls.apply(*promoted, **attrs)
        record = False
        if grad_enabled.get():
            needs = tuple([isinstance(x, Tensor) and x.requires_grad for x in inputs])
            record = True in needs
        if type(out) is tuple:
            fn.n_outputs = len(out)
            out = tuple([_scalar_output(fn, o) if isinstance(o, _np_generic) else o
                         for o in out])
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
                # None for a tensor that has no counter yet (version 0): no property call here.
                fn.versions = [x._vc and x._vc[0] if isinstance(x, Tensor) else 0
                               for x in inputs]
                if type(out) is tuple:
                    fn.output_ids = tuple([id(o) for o in out])
                    vcs = []
                    for r in result:
                        r._vc = [0]
                        vcs.append(r._vc)
                    fn.output_vcs = vcs
                else:
                    fn.output_ids = (id(out),)
                    result._vc = vc = [0]  # a fresh output has no counter yet
                    fn.output_vcs = (vc,)
        hooks = dispatch_hooks.get()
        if hooks:
            outs = result if type(result) is tuple else (result,)
            for hook in hooks:
                hook("forward", fn, inputs, outs)
        return result

    def __repr__(self) -> str:
        return f"<{type(self).__name__} op '{self.name}'>"


class Cast(Function):
    """The cast primitive: what autocast and dtype promotion insert; the gradient goes back to
    the source dtype."""

    name = "cast"

    @classmethod
    def float_cast(cls, x, dtype):
        """``Cast.apply(x, dtype=dtype)`` for autocast's casts of a float Tensor ``x`` to a float
        ``dtype``, without ``apply``'s dispatch: a cast has no policy row, promotes nothing and
        saves nothing, so only the recording is left (about ten of these run in every autocast
        step). Watched runs (dispatch hooks) take ``apply``, so hooks see every cast."""
        if dispatch_hooks.get():
            return cls.apply(x, dtype=dtype)
        data = x._data
        fn = object.__new__(cls)
        fn.src_dtype = data.dtype
        out = casts.astype(data, dtype)
        if x.requires_grad and grad_enabled.get():
            fn.inputs = (x,)
            fn.needs_input_grad = (True,)
            return _make(out, True, fn, 0)
        return _make(out, False, None, 0)

    def forward(self, x, dtype):
        self.src_dtype = x.dtype
        return casts.astype(x, dtype)

    def backward(self, gy):
        if gy.dtype == self.src_dtype:
            return gy
        if not grad_enabled.get() and not dispatch_hooks.get():
            # neither recorded nor watched (functional's fast_backward): the cast on the array,
            # without an op's dispatch (autocast puts about ten of these in every step)
            return _make(casts.astype(gy._data, self.src_dtype), False, None, 0)
        return Cast.apply(gy, dtype=self.src_dtype)


# ----------------------------------------------------------------------- PyTorch's ctx protocol
class _CtxNode(Function):
    """The graph node of a user ``Function`` written in PyTorch's protocol; its instance is the
    ``ctx`` the user's static ``forward``/``backward`` receive.

    The user's forward runs on Tensors (the caller's own, when the policy left them alone),
    with recording off and the ambient autocast policy in force, so the ops it calls are cast
    as anywhere else (``a.mm(b)`` is float16 in a float16 region). Its outputs become this
    node's outputs; ``backward`` receives and returns Tensors, one gradient per input.
    """

    _user = None        # the user's Function subclass
    _non_diff = ()      # ids of the outputs marked non-differentiable
    _dirty = False

    def save_for_backward(self, *tensors) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"{self.name}: save_for_backward can only save Tensors (or "
                                f"None), but argument {i} is a {type(t).__name__}; keep other "
                                "values as ctx attributes")
        self.saved = tuple([t._data if isinstance(t, Tensor) else t for t in tensors])

    def mark_non_differentiable(self, *tensors) -> None:
        """Outputs that get no gradient (indices, masks): they never require grad."""
        self._non_diff = self._non_diff + tuple(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """False: ``backward`` gets None (not zeros) for outputs that received no gradient."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        raise RuntimeError(f"{self.name}: mark_dirty (an in-place forward) is not supported; "
                           "return a new Tensor from forward instead of modifying an input")

    def forward(self, *arrays, _originals, _needs):
        self.needs_input_grad = _needs
        user = self._user

        def run(args):
            if "setup_context" in _mro_dict(user):
                out = user.forward(*args)
                user.setup_context(self, tuple(args), out)
                return out
            return user.forward(self, *args)

        outs, result = _user_forward(self.name, _originals, arrays, run)
        self._out_tensors_ids = tuple(id(o) for o in outs)
        return result

    def backward(self, *grads):
        res = self._user.backward(self, *grads)
        res = res if isinstance(res, tuple) else (res,)
        n = len(self.inputs)
        if len(res) > n and all(g is None for g in res[n:]):
            res = res[:n]  # PyTorch accepts trailing Nones
        if len(res) != n:
            raise RuntimeError(f"function {self.name}.backward returned an incorrect number of "
                               f"gradients (expected {n}, got {len(res)})")
        for i, (x, g) in enumerate(zip(self.inputs, res)):
            if g is not None and not isinstance(x, Tensor):
                raise RuntimeError(f"function {self.name}.backward returned a gradient "
                                   f"different than None at position {i}, but the "
                                   "corresponding forward input was not a Tensor")
        return res


class _InstanceNode(Function):
    """The graph node of a user ``Function`` called as MegEngine does (``MyFunction()(x)``):
    the user's instance keeps what its forward stored; this node runs it on Tensors."""

    _user = None

    def forward(self, *arrays, _user, _originals, _needs):
        self._user = _user
        _user.needs_input_grad = _needs
        return _user_forward(self.name, _originals, arrays, lambda args: _user.forward(*args))[1]

    def backward(self, *grads):
        if grad_enabled.get():
            # What forward stored on self has no graph: a recorded backward would treat it as
            # a constant, and a second derivative would silently miss its terms.
            raise RuntimeError(
                f"function {self.name} (MegEngine's protocol) has no higher-order gradient "
                "(create_graph=True): values its forward stores on self are constants to the "
                "graph; write it in PyTorch's protocol (@staticmethod forward(ctx, ...), "
                "ctx.save_for_backward) for higher-order gradients")
        res = self._user.backward(*grads)
        res = res if isinstance(res, tuple) else (res,)
        if len(res) != len(self.inputs):
            raise RuntimeError(f"function {self.name}.backward returned {len(res)} gradients "
                               f"for {len(self.inputs)} inputs; return one (or None) per input")
        return res


def _user_forward(name, originals, arrays, run):
    """Run a user's forward on Tensors with recording off (under the ambient autocast policy):
    ``run(args)`` gets the caller's own Tensors where the policy left them alone, new leaves
    where it cast them. Returns ``(output Tensors, their arrays as the node's result)``."""
    args = [t if isinstance(t, Tensor) and t._data is a else
            (_make(a, False, None, 0) if isinstance(t, Tensor) else a)
            for t, a in zip(originals, arrays)]
    token = grad_enabled.set(False)
    try:
        out = run(args)
    finally:
        grad_enabled.reset(token)
    outs = out if isinstance(out, tuple) else (out,)
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}.forward returned a {type(o).__name__} (output {i}); "
                            "return Tensors (keep other values as attributes)")
    arrays_out = tuple(o._data for o in outs)
    return outs, (arrays_out if isinstance(out, tuple) else arrays_out[0])


def _instance_node(cls):
    """The :class:`_InstanceNode` subclass named after the user's ``cls`` (made once)."""
    node = cls.__dict__.get("_instance_node_cls")
    if node is None:
        node = type(f"{cls.__name__}Backward", (_InstanceNode,),
                    {"name": cls.__dict__.get("name", cls.__name__)})
        cls._instance_node_cls = node
    return node


def _mro_dict(cls):
    """The names defined by ``cls`` and its bases up to (excluding) ``Function``."""
    names = set()
    for c in cls.__mro__:
        if c is Function:
            break
        names.update(c.__dict__)
    return names


def _ctx_apply(cls, *args, **kwargs):
    """``apply`` of a PyTorch-protocol Function: one :class:`_CtxNode` per call."""
    if kwargs:
        raise TypeError(f"{cls.__name__}.apply takes positional arguments only (PyTorch's "
                        f"protocol), got keywords {sorted(kwargs)}")
    node = cls.__dict__.get("_ctx_node")
    if node is None:
        node = type(f"{cls.__name__}Backward", (_CtxNode,),
                    {"name": cls.__dict__.get("name", cls.__name__), "_user": cls})
        cls._ctx_node = node
    on = grad_enabled.get()
    needs = tuple([on and isinstance(a, Tensor) and a.requires_grad for a in args])
    fn_out = node.apply(*args, _originals=args, _needs=needs)
    outs = fn_out if isinstance(fn_out, tuple) else (fn_out,)
    fn = outs[0].creator
    non_diff = getattr(fn, "_non_diff", ()) if fn is not None else ()
    if non_diff:
        for r, oid in zip(outs, fn._out_tensors_ids):
            if oid in non_diff:
                r.requires_grad, r.creator = False, None
    return fn_out
