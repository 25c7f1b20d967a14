"""MindSpore's global switches: ``set_context``/``get_context`` (also as the module path
``minigrad.context``), ``GRAPH_MODE``/``PYNATIVE_MODE``, ``set_seed``/``get_seed`` and ``@jit``.

minigrad executes eagerly: ``set_context(mode=GRAPH_MODE)`` is recorded (``get_context("mode")``
returns it) and programs run exactly as in ``PYNATIVE_MODE``; ``@jit`` returns the function
itself, run eagerly. ``device_target`` does the nearest real thing: ``"CPU"`` / ``"GPU"`` become
minigrad's default device for new tensors (``mg.set_default_device``; ``device_id`` picks the
GPU), which raises when CuPy sees no GPU; ``"Ascend"`` is refused. Layers built afterwards put
their parameters there too. Other keywords (``save_graphs``,
``max_call_depth``, ``jit_config``, ...) are kept for ``get_context`` and have no effect.

Example:
    >>> import minigrad as mg
    >>> mg.set_context(mode=mg.GRAPH_MODE, device_target="CPU")
    >>> mg.get_context("mode") == mg.GRAPH_MODE
    True
    >>> mg.set_context(mode=mg.PYNATIVE_MODE)
"""

from __future__ import annotations

import sys
import types

from ... import _backend as B
from ...core.creation import manual_seed

__all__ = ["GRAPH_MODE", "PYNATIVE_MODE", "get_context", "get_seed", "jit", "namespace",
           "set_context", "set_seed"]

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_TARGETS = {"CPU": "cpu", "GPU": "cuda"}
_context = {"mode": PYNATIVE_MODE, "device_target": "CPU", "device_id": 0}
_seed = [None]


def set_context(**kwargs) -> None:
    """``mindspore.set_context(mode=..., device_target=..., device_id=..., ...)``."""
    mode = kwargs.get("mode", _context["mode"])
    if mode not in (GRAPH_MODE, PYNATIVE_MODE):
        raise ValueError(f"set_context: mode must be GRAPH_MODE (0) or PYNATIVE_MODE (1), got "
                         f"{mode!r}")
    target = kwargs.get("device_target", _context["device_target"])
    if target not in _TARGETS:
        raise ValueError(f"set_context: device_target {target!r} is not supported; minigrad "
                         "runs on 'CPU' and 'GPU' (CUDA)")
    device_id = int(kwargs.get("device_id", _context["device_id"]))
    if "device_target" in kwargs or "device_id" in kwargs:
        device = "cpu" if target == "CPU" else f"cuda:{device_id}"
        if device != "cpu" and not B.cuda_available():
            raise RuntimeError(f"set_context(device_target={target!r}): CuPy sees no GPU; use "
                               "device_target='CPU'")
        sys.modules["minigrad"].set_default_device(device)
    _context.update(kwargs, mode=mode, device_target=target, device_id=device_id)


def get_context(attr_key: str):
    """The value ``set_context`` recorded for ``attr_key`` (``"mode"``, ``"device_target"``,
    ``"device_id"``, or any other key it was given)."""
    if attr_key not in _context:
        raise ValueError(f"get_context: {attr_key!r} was never set; known: {sorted(_context)}")
    return _context[attr_key]


def set_seed(seed: int) -> None:
    """``mindspore.set_seed``: seed minigrad's generators (``mg.manual_seed``)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"set_seed: seed must be an int >= 0, got {seed!r}")
    _seed[0] = seed
    manual_seed(seed)


def get_seed():
    """The seed given to :func:`set_seed` (None before)."""
    return _seed[0]


def jit(function=None, **options):
    """``@mindspore.jit`` / ``@jit(...)``: the function itself, run eagerly (minigrad has no
    graph compiler; the results are the same).

    ``jit.script(fn)``, ``jit.trace(fn, example_inputs)`` and ``@jit.ignore`` (PyTorch's
    ``torch.jit`` spellings, whose top-level name this one shares) also return ``fn`` itself.
    """
    if function is None:
        return lambda f: f
    if not callable(function):
        raise TypeError(f"jit: expected a function, got {type(function).__name__}")
    return function


def _eager(fn=None, *example_inputs, **options):
    return (lambda f: f) if fn is None else fn


jit.script = jit.trace = jit.ignore = jit.unused = _eager


namespace = types.ModuleType("minigrad.context", "MindSpore's ``mindspore.context``.")
for _name in ("GRAPH_MODE", "PYNATIVE_MODE", "get_context", "set_context"):
    setattr(namespace, _name, getattr(sys.modules[__name__], _name))
namespace.__all__ = ["GRAPH_MODE", "PYNATIVE_MODE", "get_context", "set_context"]
