"""``Optimizer``: parameter groups, per-parameter state, ``step``/``clear_grad`` and state dicts.

Updates work directly on backend arrays, so no graph is ever recorded. The arithmetic of each
update has one body, in ``_backend/fused.py``: a kernel on the GPU, its NumPy twin on the CPU
(``SGD`` and ``Adam`` only gather arguments and state). They modify ``p._data`` in place and bump
``p._version``: an AMP weight-cast cache keys on that counter, and anything that kept a reference
to the array sees the new weights.

Optimizer state lives in the parameter's dtype or float32, whichever is wider: float16/bfloat16
parameters get float32 moments and their update is computed in float32 and rounded once into the
parameter (a float16 moment would underflow long before the weights stop changing).
"""

from __future__ import annotations

from .. import _backend as B
from .._backend import fused
from .._backend.dtypes import acc_dtype, is_floating
from ..core.grad_mode import enable_grad
from ..core.tensor import Tensor
from .clip import clip_grad_norm

__all__ = ["Optimizer"]

state_dtype = acc_dtype  # optimizer state and update math: the accumulation dtype


def run_closure(owner, closure):
    """PyTorch's ``step(closure)``: call ``closure`` (it recomputes the loss and its gradients)
    with gradients enabled and return its loss; None without a closure."""
    if closure is None:
        return None
    if not callable(closure):
        raise TypeError(f"{type(owner).__name__}.step: closure must be callable, got "
                        f"{type(closure).__name__}; a found-inf flag is passed as "
                        "step(found_inf=flag)")
    with enable_grad():
        return closure()


class Optimizer:
    """Base class: holds ``param_groups`` (dicts of ``params`` + hyperparameters) and ``state``.

    Subclasses implement ``_update_group(group)``, which walks the group's parameters once and
    skips every parameter whose ``.grad`` is None (its state is left untouched, no step counted:
    that is how a GradScaler-skipped step leaves everything unchanged).

    Args:
        params: an iterable of Parameters, or of dicts ``{"params": [...], "lr": ..., ...}``
            whose missing hyperparameters default to ``defaults``.
        defaults: the hyperparameters of this optimizer (``lr``, ...).
    """

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self.state: dict = {}
        self._param_ids: set = set()
        if isinstance(params, Tensor):
            raise TypeError(
                f"{type(self).__name__}: params must be an iterable of Parameters or of dicts, "
                "got a single Tensor; wrap it in a list: [param]")
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ groups
    def add_param_group(self, group: dict) -> None:
        """Add a dict ``{"params": [...], **hyperparameters}``; defaults fill in the rest."""
        if not isinstance(group, dict):
            raise TypeError(f"add_param_group expects a dict, got {type(group).__name__}")
        group = dict(group)
        params = group.get("params")
        if params is None:
            raise ValueError("add_param_group: the group has no 'params' entry")
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__} can only optimize Tensors/Parameters, "
                                f"got {type(p).__name__}")
            if not is_floating(p.dtype):
                raise TypeError(f"{type(self).__name__}: cannot optimize a {p.dtype} tensor of "
                                f"shape {p.shape}; only floating tensors have gradients")
            if id(p) in self._param_ids:
                raise ValueError(f"{type(self).__name__}: a parameter of shape {p.shape} appears "
                                 "in more than one parameter group (or twice in one)")
            self._param_ids.add(id(p))
        group["params"] = params
        _check_group_keys(self, group)
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    # ------------------------------------------------------------------ stepping
    def step(self, closure=None, found_inf=None):
        """Apply one update to every parameter that has a gradient; returns ``self``, or the
        closure's loss when a closure is given.

        Returning ``self`` allows the MegEngine idiom ``opt.step().clear_grad()``.

        Args:
            closure: PyTorch's ``step(closure)``: a callable that recomputes the loss (zeroing
                the gradients and calling ``backward()`` itself); it is called first, with
                gradients enabled, and its result is returned, as PyTorch's ``step`` does.
            found_inf: a 1-element int32 flag array from a sync-free ``GradScaler``; when it is
                nonzero the step changes nothing (parameters, state, step counts). On the GPU
                the fused kernels read it on the device (no host sync); on the CPU there is no
                device to wait for and the flag is read directly. Gradients that a sync-free
                ``scaler.unscale()`` (MegEngine API) checked carry their flag themselves
                (:func:`mark_found_inf`): it joins ``found_inf`` and is consumed here, skipped
                or not, so it never reaches a later step.
        """
        loss = run_closure(self, closure)
        self._step(found_inf)
        return self if closure is None else loss

    def _step(self, found_inf) -> None:
        carried = _take_grad_flags(self.param_groups)
        if carried is not None:
            found_inf = carried if found_inf is None \
                else B.get_array_module(carried).maximum(carried, found_inf)
        if found_inf is not None and not fused.use_fused(found_inf):
            if fused._host_found(found_inf):
                return
            found_inf = None
        self._condition_grads()
        for group in self.param_groups:
            self._update_group(group, found_inf)

    # MindSpore's optimizers divide the gradients by their ``loss_scale`` (Momentum sets it).
    _loss_scale = 1.0

    def _condition_grads(self) -> None:
        """The gradients the update reads: divided by the optimizer's loss scale (MindSpore),
        then clipped per group where the group asks (OneFlow's ``clip_grad_max_norm`` /
        ``clip_grad_norm_type``). Both come after a GradScaler's unscale (``scaler.step``
        unscales before calling ``step``) and before the update; a step skipped for inf/NaN
        never gets here on the CPU, and on the GPU the update kernels skip on the flag."""
        inv = 1.0 / self._loss_scale
        for group in self.param_groups:
            if inv != 1.0:
                for p in group["params"]:
                    g = p.grad
                    if g is not None:  # a new array: the engine's may be shared
                        p.grad = Tensor._make(g._data * g._data.dtype.type(inv), False, None, 0)
            max_norm = group.get("clip_grad_max_norm")
            if max_norm is not None:
                clip_grad_norm(group["params"], max_norm, group["clip_grad_norm_type"])

    def clip_grad(self) -> None:
        """OneFlow's ``optimizer.clip_grad()``: clip now, per group, the groups that set
        ``clip_grad_max_norm`` and ``clip_grad_norm_type`` (raising on a non-finite norm, as
        OneFlow does). ``step()`` clips those groups anyway; a second clip changes nothing."""
        for group in self.param_groups:
            if group.get("clip_grad_max_norm") is not None:
                clip_grad_norm(group["params"], group["clip_grad_max_norm"],
                               group["clip_grad_norm_type"], error_if_nonfinite=True)

    def _update_group(self, group: dict, found_inf=None) -> None:  # pragma: no cover
        raise NotImplementedError(f"{type(self).__name__}._update_group")

    def clear_grad(self) -> "Optimizer":
        """Drop every parameter's gradient (``p.grad = None``), MegEngine spelling."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset gradients, PyTorch spelling.

        Args:
            set_to_none: drop the gradients (default, cheapest); False zeroes them in place.
        """
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                elif g._data.flags.c_contiguous and getattr(g._data.flags, "writeable", True):
                    g._data.fill(0)
                    g._version += 1
                else:  # a broadcast or read-only view cannot be written: give it fresh zeros
                    p.grad = Tensor._make(B.get_array_module(g._data).zeros_like(g._data), False,
                                          None, 0)

    # ------------------------------------------------------------------ state dicts
    def state_dict(self) -> dict:
        """PyTorch-style state: parameters referenced by index, state as backend arrays.

        The arrays are references to the live state (like PyTorch); ``mg.save`` copies them to
        disk and ``load_state_dict`` copies them in.
        """
        index: dict = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p)
                if st is not None:
                    state[index[id(p)]] = dict(st)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyperparameters and state saved by :meth:`state_dict` (copies the arrays).

        Arrays may be NumPy, CuPy or Tensors; each is moved to its parameter's device and to
        the state dtype (the parameter's dtype or float32, whichever is wider).
        """
        name = type(self).__name__
        groups = state_dict.get("param_groups")
        if groups is None or "state" not in state_dict:
            raise ValueError(f"{name}.load_state_dict: expected a dict with 'state' and "
                             "'param_groups' (as returned by state_dict())")
        if len(groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the saved state has {len(groups)} "
                             f"parameter groups, this optimizer has {len(self.param_groups)}")
        by_index = {}
        for i, (saved, group) in enumerate(zip(groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"{name}.load_state_dict: group {i} has {len(saved['params'])} parameters "
                    f"in the saved state but {len(group['params'])} here")
            for idx, p in zip(saved["params"], group["params"]):
                by_index[int(idx)] = p
        new_state = {}
        for idx, st in state_dict["state"].items():
            p = by_index.get(int(idx))
            if p is None:
                raise ValueError(f"{name}.load_state_dict: state for parameter index {idx} "
                                 "which no parameter group references")
            for k, v in st.items():  # a state of another architecture fails here, not later
                if k != "step" and hasattr(v, "shape") and tuple(v.shape) != tuple(p.shape):
                    raise ValueError(
                        f"{name}.load_state_dict: state {k!r} of parameter {idx} has shape "
                        f"{tuple(v.shape)} but the parameter has shape {tuple(p.shape)}; the "
                        "checkpoint belongs to another model")
            new_state[p] = {k: _restore(v, p) for k, v in st.items()}
        for saved, group in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    group[k] = tuple(v) if isinstance(v, list) and k == "betas" else v
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            hp = ", ".join(f"{k}={v}" for k, v in group.items() if k != "params")
            lines.append(f"  group {i}: {len(group['params'])} params, {hp}")
        return "\n".join(lines + [")"])


# Hyperparameter names of PyTorch's, OneFlow's and MindSpore's optimizers. A parameter group
# may hold any other key (a name, a tag: PyTorch keeps them and so does minigrad), but one of
# these that this optimizer does not implement would change the numbers in the peer and be
# ignored here: refused instead. Values listed with a key are the ones that change nothing.
_PEER_HYPERPARAMETERS = {
    "lr": None, "learning_rate": None, "momentum": None, "dampening": None,
    "weight_decay": None, "nesterov": None, "use_nesterov": None, "betas": None, "beta1": None,
    "beta2": None, "eps": None, "amsgrad": None, "maximize": (False,), "alpha": None,
    "centered": None, "rho": None, "lr_decay": None, "initial_accumulator_value": None,
    "lambd": None, "t0": None, "etas": None, "step_sizes": None, "momentum_decay": None,
    "decoupled_weight_decay": None, "do_bias_correction": (True,),
    "grad_centralization": (False,), "loss_scale": (1.0,), "max_iter": None,
    "history_size": None, "line_search_fn": None, "bias_correction": (True,),
}
_CLIP_KEYS = ("clip_grad_max_norm", "clip_grad_norm_type")


def _check_group_keys(opt, group: dict) -> None:
    """Refuse keys a peer's optimizer would act on and this one would silently ignore."""
    name = type(opt).__name__
    for key, value in group.items():
        if key == "params" or key in opt.defaults or key in _CLIP_KEYS:
            continue
        harmless = _PEER_HYPERPARAMETERS.get(key, ())
        if key in _PEER_HYPERPARAMETERS and (harmless is None or value not in harmless):
            raise ValueError(
                f"{name}: parameter group key {key!r}={value!r} is not a hyperparameter of "
                f"{name} (it has {sorted(opt.defaults)}); it would change the update in the "
                "optimizer that has it and would be ignored here. Remove it, or use an "
                "optimizer that implements it")
    clip = [k for k in _CLIP_KEYS if group.get(k) is not None]
    if len(clip) == 1:
        # OneFlow clips only when both are given (and says nothing otherwise)
        raise ValueError(f"{name}: parameter group has {clip[0]!r} without "
                         f"{[k for k in _CLIP_KEYS if k != clip[0]][0]!r}; OneFlow clips a "
                         "group only when both are given: pass both (norm type 2.0 is the "
                         "usual)")
    if clip and not group["clip_grad_max_norm"] > 0:
        raise ValueError(f"{name}: clip_grad_max_norm must be > 0, got "
                         f"{group['clip_grad_max_norm']}")


def check_switches(name: str, foreach=None, fused=None, differentiable: bool = False) -> None:
    """PyTorch's implementation switches, which its optimizers take and minigrad's accept.

    ``foreach`` and ``fused`` choose PyTorch's kernels and ``capturable`` lets a PyTorch step be
    captured in a CUDA graph; none of them changes a value there, and here each optimizer has one
    body (fused on the GPU, capturable as it is), so they are accepted and change nothing.
    PyTorch's refusals are kept (``fused`` with ``foreach`` or ``differentiable``).
    ``differentiable=True`` (autograd through ``step()``, for meta-learning) is refused: an
    update here works on the raw arrays and never records a graph, so a gradient through it
    would silently be missing (PyTorch's own step refuses it on leaf parameters too).
    """
    if fused and foreach:
        raise RuntimeError(f"{name}: `fused` and `foreach` cannot be `True` together.")
    if fused and differentiable:
        raise RuntimeError(f"{name}: `fused` does not support `differentiable`")
    if differentiable:
        raise NotImplementedError(
            f"{name}(differentiable=True): minigrad's optimizer steps update the parameters "
            "outside autograd and record no graph, so no gradient can flow through step(); "
            "leave differentiable=False (write the update with differentiable ops on Tensors "
            "to differentiate through it)")


def mark_found_inf(grads, flag) -> None:
    """Attach a device found-inf ``flag`` to gradient Tensors for the next ``Optimizer.step``.

    A sync-free ``GradScaler.unscale(tensors)`` (MegEngine API) never sees the optimizer that
    will step, and must not read the flag on the host, so the flag travels on the gradients it
    describes (``Tensor._found_inf``): whichever optimizer steps over them skips on it. Nothing
    global remembers it: a gradient replaced by a new backward takes no flag along, and the flag
    is freed with the gradient.
    """
    for g in grads:
        g._found_inf = flag


def _take_grad_flags(groups):
    """The flags the parameters' gradients carry (:func:`mark_found_inf`), cleared on them as
    they are read; their maximum, or None when no gradient carries one."""
    flags = []
    for group in groups:
        for p in group["params"]:
            g = p.grad
            flag = None if g is None else getattr(g, "_found_inf", None)
            if flag is None:
                continue
            g._found_inf = None
            if not any(f is flag for f in flags):
                flags.append(flag)
    if not flags:
        return None
    found = flags[0]
    for f in flags[1:]:
        found = B.get_array_module(found).maximum(found, f)
    return found


def _restore(value, p: Tensor):
    """A saved state entry as a fresh backend array on ``p``'s device (other values as is)."""
    if isinstance(value, Tensor):
        value = value._data
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        dtype = state_dtype(p.dtype) if is_floating(value.dtype) else value.dtype
        arr = B.to_device(value, p.device)
        return arr.astype(dtype, copy=True)
    return value
