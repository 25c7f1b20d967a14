"""``Module``: the base class of layers and models.

A Module keeps its Parameters, buffers and child Modules in insertion-ordered registries and
*also* in the instance ``__dict__``, so ``self.weight`` inside ``forward`` is a plain attribute
lookup (no ``__getattr__`` detour on the hot path). ``__call__`` tracks the dotted module path in
the ``current_module_path`` context variable so AMP debugging can name the module an op ran in.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from itertools import count

import numpy as np

from .. import _backend as B
from .._backend.dtypes import bfloat16, float16, float32, is_floating, is_numeric, normalize_dtype
from ..core.modes import dispatch_policy
from ..core.modes import module_path as current_module_path
from ..precision.module import precision_policy
from ..core.tensor import Parameter, Tensor

__all__ = ["IncompatibleKeys", "Module", "RemovableHandle", "current_module_path"]


IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])

_hook_ids = count()


class RemovableHandle:
    """Returned by ``register_*_hook``; ``remove()`` unregisters the hook (idempotent)."""

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(_hook_ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _is_device(spec) -> bool:
    return isinstance(spec, str) and spec.split(":")[0] in ("cpu", "cuda", "gpu")


class Module:
    """Base class for all layers and models.

    Subclasses call ``super().__init__()`` first, assign Parameters, sub-Modules and buffers
    (``register_buffer``) as attributes, and implement ``forward``.

    Example:
        >>> import minigrad.nn as nn
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return self.fc(x)
        >>> [n for n, _ in Net().named_parameters()]
        ['fc.weight', 'fc.bias']
    """

    # Name under which the parent holds this module ("" for a root); see current_module_path.
    _name = ""
    # Compute dtype set by set_compute_dtype (None: follow the caller). Explicit when set on
    # this module itself; inherited when a parent's call set it, in which case a later parent
    # call never overrides an explicit child (nearest explicit setting wins).
    _compute_dtype = None
    _precision_explicit = False

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = {}
        d["_forward_hooks"] = {}

    # ------------------------------------------------------------------ registration
    def _registries(self):
        try:
            return self.__dict__["_parameters"], self.__dict__["_buffers"], \
                self.__dict__["_modules"]
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__}: cannot assign parameters, buffers or modules before "
                "Module.__init__(); call super().__init__() first in __init__") from None

    def __setattr__(self, name, value):
        d = self.__dict__
        if isinstance(value, Parameter):
            params, buffers, modules = self._registries()
            buffers.pop(name, None)
            modules.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            params, buffers, modules = self._registries()
            params.pop(name, None)
            buffers.pop(name, None)
            modules[name] = value
            object.__setattr__(value, "_name", name)
        elif "_parameters" in d and name in d["_parameters"]:
            if value is not None:
                raise TypeError(
                    f"{type(self).__name__}.{name} is a Parameter; assign an nn.Parameter (or "
                    f"None), got {type(value).__name__}. To change its values use "
                    f"`with mg.no_grad(): module.{name}.copy_(...)`")
            d["_parameters"][name] = None
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"{type(self).__name__}.{name} is a sub-module; assign a Module "
                                f"or None, got {type(value).__name__}")
            d["_modules"][name] = None
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"{type(self).__name__}.{name} is a buffer; assign a Tensor or "
                                f"None, got {type(value).__name__}")
            d["_buffers"][name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        d = self.__dict__
        for reg in ("_parameters", "_buffers", "_modules"):
            if reg in d:
                d[reg].pop(name, None)
        d.get("_non_persistent", set()).discard(name)
        object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Register a non-trainable Tensor (running statistics, masks).

        Persistent buffers are part of ``state_dict``; non-persistent ones only move with
        ``to``/``astype``.
        """
        _, buffers, _ = self._registries()
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer({name!r}): expected a Tensor or None, got "
                            f"{type(tensor).__name__}")
        if isinstance(tensor, Parameter):
            raise TypeError(f"register_buffer({name!r}): got a Parameter; assign it as an "
                            "attribute (or register_parameter) instead")
        if name in self.__dict__ and name not in buffers:
            raise KeyError(f"register_buffer: attribute {name!r} already exists")
        buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name: str, param) -> None:
        """Register ``param`` (a Parameter or None) under ``name``."""
        if param is None:
            self._registries()[0][name] = None
            object.__setattr__(self, name, None)
        else:
            setattr(self, name, param)

    def add_module(self, name: str, module) -> None:
        """Register a child module (or None) under ``name``."""
        if module is None:
            self._registries()[2][name] = None
            object.__setattr__(self, name, None)
        else:
            setattr(self, name, module)

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The sub-module at a dotted path like ``"layer1.0.conv1"`` (``""`` is self)."""
        mod = self
        for part in target.split(".") if target else ():
            if part not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no sub-module {part!r} "
                                     f"(looking up {target!r})")
            mod = mod._modules[part]
        return mod

    # ------------------------------------------------------------------ calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not implement forward()")

    def __call__(self, *args, **kwargs):
        if self._compute_dtype is not None:
            return self._call_in_precision(args, kwargs)
        if self._forward_pre_hooks or self._forward_hooks:
            return self._call_with_hooks(args, kwargs)
        token = current_module_path.set(current_module_path.get() + (self._name,))
        try:
            return self.forward(*args, **kwargs)
        finally:
            current_module_path.reset(token)

    def _call_with_hooks(self, args, kwargs):
        token = current_module_path.set(current_module_path.get() + (self._name,))
        try:
            for hook in list(self._forward_pre_hooks.values()):
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
            out = self.forward(*args, **kwargs)
            for hook in list(self._forward_hooks.values()):
                result = hook(self, args, out)
                if result is not None:
                    out = result
            return out
        finally:
            current_module_path.reset(token)

    def _call_in_precision(self, args, kwargs):
        policy, owned = precision_policy(self._compute_dtype, dispatch_policy.get())
        cast = policy.cast_value
        args = tuple([cast(a) if isinstance(a, Tensor) else a for a in args])
        if kwargs:
            kwargs = {k: cast(v) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
        token = dispatch_policy.set(policy)
        try:
            if self._forward_pre_hooks or self._forward_hooks:
                return self._call_with_hooks(args, kwargs)
            path_token = current_module_path.set(current_module_path.get() + (self._name,))
            try:
                return self.forward(*args, **kwargs)
            finally:
                current_module_path.reset(path_token)
        finally:
            dispatch_policy.reset(token)
            if owned is not None:
                owned.clear()

    def register_forward_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, args)`` runs before forward; a non-None return replaces ``args``."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook) -> RemovableHandle:
        """``hook(module, args, output)`` runs after forward; a non-None return replaces it."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Yield ``(dotted_name, module)`` for self and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is None:
                continue
            yield from child.named_modules(memo, prefix + "." + name if prefix else name,
                                           remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def _named_members(self, registry, prefix, recurse):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, t in mod.__dict__[registry].items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield (mod_prefix + "." + name if mod_prefix else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        """Yield ``(name, Parameter)`` pairs, e.g. ``("features.0.weight", p)``.

        A parameter shared by several modules is yielded once.
        """
        return self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse: bool = True):
        """Yield every Parameter (each shared Parameter once)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------------ state
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ``OrderedDict`` of parameters and persistent buffers by dotted name.

        Values share memory with the module (detached unless ``keep_vars``).
        """
        if destination is None:
            destination = OrderedDict()
        for mod_prefix, mod in self.named_modules(prefix=prefix.rstrip(".")):
            dot = mod_prefix + "." if mod_prefix else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    destination[dot + name] = p if keep_vars else p.detach()
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent:
                    destination[dot + name] = b if keep_vars else b.detach()
        return destination

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into this module's parameters and buffers, in place.

        The Parameter objects are kept (optimizers stay attached); values are cast to each
        parameter's dtype and moved to its device. Values may be Tensors or NumPy arrays.

        Raises:
            RuntimeError: listing missing and unexpected keys (when ``strict``) and every
                shape mismatch (always).
        """
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched = []
        for k, t in own.items():
            if k in state_dict:
                shape = tuple(np.shape(state_dict[k]) if not isinstance(state_dict[k], Tensor)
                              else state_dict[k].shape)
                if shape != t.shape:
                    mismatched.append(f"{k}: checkpoint shape {shape}, model shape {t.shape}")
        errors = []
        if strict and missing:
            errors.append("missing keys: " + ", ".join(missing))
        if strict and unexpected:
            errors.append("unexpected keys: " + ", ".join(unexpected))
        if mismatched:
            errors.append("shape mismatches: " + "; ".join(mismatched))
        if errors:
            raise RuntimeError(f"load_state_dict for {type(self).__name__}: " + " | ".join(errors)
                               + ". Check that the checkpoint matches this architecture, or pass "
                               "strict=False to skip missing/unexpected keys")
        # All or nothing: every value is converted first, so a bad one (naming its key) leaves
        # the model exactly as it was instead of half loaded.
        ready = {}
        for k, t in own.items():
            if k in state_dict:
                src = state_dict[k]
                src = src._data if isinstance(src, Tensor) else np.asarray(src)
                if not is_numeric(src.dtype):
                    raise TypeError(f"load_state_dict for {type(self).__name__}: {k} holds "
                                    f"{src.dtype} values; expected numbers for {t.dtype}")
                ready[k] = B.to_device(src, t.device)
        for k, arr in ready.items():
            own[k]._set_data_(arr)
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and every descendant."""
        for m in self.modules():
            m.training = bool(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode (``train(False)``)."""
        return self.train(False)

    def requires_grad_(self, flag: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(flag)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the ``.grad`` of every parameter."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                # A fresh array: the engine may hand one gradient array to several tensors.
                g = p.grad._data
                p.grad = Tensor._make(B.get_array_module(g).zeros_like(g), False, None, 0)

    def apply(self, fn) -> Module:
        """Call ``fn(module)`` on every descendant (children first) and self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ device / dtype
    def _tensors(self):
        seen = set()
        for m in self.modules():
            for reg in (m._parameters, m._buffers):
                for t in reg.values():
                    if t is not None and id(t) not in seen:
                        seen.add(id(t))
                        yield t

    def to(self, device=None, dtype=None) -> Module:
        """Move parameters and buffers to ``device`` and/or cast floating ones to ``dtype``.

        Works in place: the Parameter objects stay the same, only their data moves.
        ``m.to("float16")`` is accepted as a cast.
        """
        if device is not None and not _is_device(device):
            device, dtype = None, device
        if device is not None:
            device = B.normalize_device(device)
            for t in self._tensors():
                t._data = B.to_device(t._data, device)
                t._version += 1
                if t.grad is not None:
                    t.grad = Tensor._make(B.to_device(t.grad._data, device), False, None, 0)
        if dtype is not None:
            self.astype(dtype)
        return self

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device="cuda") -> Module:
        return self.to(device)

    def astype(self, dtype) -> Module:
        """Cast floating parameters and buffers to ``dtype`` in place (objects are kept)."""
        dtype = normalize_dtype(dtype)
        if not is_floating(dtype):
            raise TypeError(f"Module.astype: expected a floating dtype, got {dtype}")
        for t in self._tensors():
            if is_floating(t.dtype) and t.dtype != dtype:
                t._data = t._data.astype(dtype)
                t._version += 1
                if t.grad is not None:
                    t.grad = Tensor._make(t.grad._data.astype(dtype), False, None, 0)
        return self

    def half(self) -> Module:
        return self.astype(B.float16)

    def float(self) -> Module:
        return self.astype(B.float32)

    def double(self) -> Module:
        return self.astype(B.float64)

    def bfloat16(self) -> Module:
        return self.astype(B.bfloat16)

    # ------------------------------------------------------------------ precision
    def set_compute_dtype(self, dtype) -> Module:
        """Run this module (and every descendant without its own setting) in ``dtype``.

        Floating inputs are cast to ``dtype`` when the module is called and every op inside
        runs in it (parameters are cast per op through the AMP weight-cast cache; BatchNorm
        statistics and parameters keep their dtype; reductions still accumulate in float32).
        A descendant's own setting wins over this one. MindSpore spells it ``Cell.to_float``
        and ``add_flags_recursive(fp16=True)`` (``minigrad.compat.mindspore``).

        Args:
            dtype: ``"float16"``, ``"bfloat16"`` or ``"float32"`` (None clears the setting).

        Returns:
            self, so it can be chained: ``self.fc = nn.Linear(4, 2).set_compute_dtype("float32")``.
        """
        if dtype is not None:
            dtype = normalize_dtype(dtype)
            if dtype not in (float16, bfloat16, float32):
                raise ValueError(f"{type(self).__name__}.set_compute_dtype: dtype must be "
                                 f"float16, bfloat16 or float32, got {dtype}")
        object.__setattr__(self, "_compute_dtype", dtype)
        object.__setattr__(self, "_precision_explicit", dtype is not None)
        stack = list(self.children())
        seen = {id(self)}
        while stack:
            m = stack.pop()
            if id(m) in seen or m._precision_explicit:
                continue  # an explicit setting (and its subtree) keeps its own dtype
            seen.add(id(m))
            object.__setattr__(m, "_compute_dtype", dtype)
            stack.extend(m.children())
        return self

    @property
    def compute_dtype(self):
        """The dtype set by ``set_compute_dtype`` (None: the caller's)."""
        return self._compute_dtype

    # ------------------------------------------------------------------ repr
    def extra_repr(self) -> str:
        """One line of constructor arguments, shown by ``repr``; override in layers."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = [f"({name}): " + repr(m).replace("\n", "\n  ")
                 for name, m in self._modules.items()]
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{type(self).__name__}(\n  {body}\n)"
