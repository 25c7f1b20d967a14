"""How a peer module attaches its spellings: names onto minigrad's modules, and module paths."""

from __future__ import annotations

import sys
import types

__all__ = ["attach_module", "attach_names"]


def attach_names(module: types.ModuleType, /, **names) -> None:  # "/": a name may be "module"
    """Set ``names`` on ``module`` and list them in its ``__all__`` (``from m import *``)."""
    for name, value in names.items():
        if hasattr(module, name) and getattr(module, name) is not value:
            # one spelling, one object: a peer never silently replaces a minigrad name
            raise RuntimeError(f"compat: {module.__name__}.{name} already exists")
        setattr(module, name, value)
    if hasattr(module, "__all__"):
        module.__all__ = [*module.__all__, *[n for n in names if n not in module.__all__]]


def attach_module(path: str, module: types.ModuleType) -> None:
    """Make ``module`` importable as ``path`` (``import minigrad.optim``) and an attribute of its
    parent package (``mg.optim``)."""
    sys.modules[path] = module
    parent, _, name = path.rpartition(".")
    attach_names(sys.modules[parent], **{name: module})
