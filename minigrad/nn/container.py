"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict``.

Children of Sequential and ModuleList are named "0", "1", ... so parameter names read
``features.0.weight`` and the module path of AMP debugging is ``("", "features", "0")``.
"""

from __future__ import annotations

from collections import OrderedDict

from ..core.tensor import Parameter, Tensor
from .module import Module

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


def _check(module, owner):
    if not isinstance(module, Module):
        raise TypeError(f"{owner}: expected a Module, got {type(module).__name__}")
    return module


class Sequential(Module):
    """Run modules one after the other; ``Sequential(m0, m1, ...)`` or ``Sequential(OrderedDict)``.

    Supports ``seq[i]``, ``seq[a:b]`` (a new Sequential sharing the modules), ``len``, iteration
    and ``append``.
    """

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (dict, OrderedDict)):
            for name, m in modules[0].items():
                setattr(self, name, _check(m, "Sequential"))
        else:
            for i, m in enumerate(modules):
                setattr(self, str(i), _check(m, "Sequential"))

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        mods = list(self._modules.values())
        try:
            return mods[idx]
        except IndexError:
            raise IndexError(f"Sequential index {idx} out of range for {len(mods)} modules") \
                from None

    def __setitem__(self, idx: int, module) -> None:
        key = list(self._modules)[idx]
        setattr(self, key, _check(module, "Sequential"))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module) -> Sequential:
        """Add ``module`` at the end (named by its position)."""
        setattr(self, str(len(self._modules)), _check(module, "Sequential.append"))
        return self


class ModuleList(Module):
    """A list of sub-modules whose parameters are registered (no ``forward`` of its own)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _renumber(self, mods):
        for key in list(self._modules):
            delattr(self, key)
        for i, m in enumerate(mods):
            setattr(self, str(i), m)

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[idx]

    def __setitem__(self, idx: int, module) -> None:
        key = list(self._modules)[idx]
        setattr(self, key, _check(module, "ModuleList"))

    def __delitem__(self, idx) -> None:
        mods = list(self._modules.values())
        del mods[idx]
        self._renumber(mods)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module) -> ModuleList:
        setattr(self, str(len(self._modules)), _check(module, "ModuleList.append"))
        return self

    def extend(self, modules) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, _check(module, "ModuleList.insert"))
        self._renumber(mods)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward; iterate over it in your forward")


class ModuleDict(Module):
    """A dict of named sub-modules whose parameters are registered (insertion ordered)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module) -> None:
        if hasattr(type(self), key) or (key in self.__dict__ and key not in self._modules):
            raise KeyError(f"ModuleDict: key {key!r} clashes with a ModuleDict attribute; "
                           "choose another name")
        setattr(self, key, _check(module, "ModuleDict"))

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key: str) -> Module:
        m = self._modules[key]
        delattr(self, key)
        return m

    def update(self, modules) -> None:
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self[k] = m

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward; index it in your forward")


def _param(value, owner):
    """A Tensor as a Parameter (a Parameter as itself), as PyTorch's parameter containers."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise TypeError(f"{owner}: expected a Parameter or Tensor, got {type(value).__name__}")


class ParameterList(Module):
    """A list of Parameters registered as ``"0"``, ``"1"``, ... (Tensors are made
    Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        params = list(self._parameters.values())
        if isinstance(idx, slice):
            return ParameterList(params[idx])
        return params[idx]

    def __setitem__(self, idx: int, value) -> None:
        idx = range(len(self))[idx]
        setattr(self, str(idx), _param(value, "ParameterList"))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value) -> ParameterList:
        setattr(self, str(len(self)), _param(value, "ParameterList"))
        return self

    def extend(self, values) -> ParameterList:
        for v in values:
            self.append(v)
        return self

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList has no forward; iterate over it in your "
                                  "forward")


class ParameterDict(Module):
    """A dict of named Parameters (insertion ordered; Tensors are made Parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        setattr(self, key, _param(value, "ParameterDict"))

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def get(self, key: str, default=None):
        return self._parameters.get(key, default)

    def pop(self, key: str):
        value = self._parameters[key]
        del self[key]
        return value

    def update(self, parameters) -> None:
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterDict has no forward; index it in your forward")
