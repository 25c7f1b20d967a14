"""``minigrad.random``: MegEngine's ``megengine.random`` (``seed``, ``normal``, ``uniform``,
``permutation``, ``shuffle``) and PyTorch's ``torch.random`` (``manual_seed``, ``seed``,
``get_rng_state``, ``set_rng_state``, ``initial_seed``) over minigrad's one generator.

``seed(n)`` is MegEngine's (seed with ``n``); ``seed()`` without an argument is PyTorch's (seed
with a fresh nondeterministic number and return it). Both are ``mg.manual_seed``.

Example:
    >>> import minigrad as mg
    >>> mg.random.seed(7); a = mg.random.normal(size=(2,))
    >>> mg.random.seed(7); b = mg.random.normal(size=(2,))
    >>> bool((a == b).all())
    True
"""

from __future__ import annotations

import secrets

import numpy as np

from ..._backend import random as _random
from ...core import creation as _creation
from ...core.tensor import Tensor

__all__ = ["get_rng_state", "initial_seed", "manual_seed", "normal", "permutation", "seed",
           "set_rng_state", "shuffle", "uniform"]

_last = [0]


def manual_seed(seed: int) -> None:
    """Seed minigrad's generators (CPU and GPU): ``mg.manual_seed``."""
    _last[0] = int(seed)
    _creation.manual_seed(int(seed))


def seed(seed: int | None = None):
    """Seed with ``seed`` (MegEngine's ``seed(n)``, returns None), or with a fresh random number
    when None (PyTorch's ``torch.random.seed()``, returns that number)."""
    value = secrets.randbits(63) if seed is None else int(seed)
    manual_seed(value)
    return value if seed is None else None


def initial_seed() -> int:
    """The last seed set through this module (0 before any)."""
    return _last[0]


get_rng_state = _creation.get_rng_state
set_rng_state = _creation.set_rng_state


def _size(size):
    return () if size is None else size


def normal(mean: float = 0.0, std: float = 1.0, size=None) -> Tensor:
    """``megengine.random.normal(mean=0, std=1, size=None)``: float32 samples of N(mean, std^2)
    (a 0-d tensor for ``size=None``)."""
    return _creation.normal(mean, std, _size(size))


def uniform(low: float = 0.0, high: float = 1.0, size=None) -> Tensor:
    """``megengine.random.uniform(low=0, high=1, size=None)``: float32 samples of U[low, high)."""
    return _creation.uniform(low, high, _size(size))


def permutation(n, *, dtype="int32"):
    """``megengine.random.permutation(n)``: a random order of ``0..n-1`` (int32, MegEngine's
    default); given a Tensor, its rows in a random order."""
    gen = _random.generator("cpu")
    if isinstance(n, Tensor):
        return n[Tensor(gen.permutation(n.shape[0]), device=n.device)]
    return Tensor(gen.permutation(int(n)).astype(np.dtype(dtype)))


def shuffle(inp: Tensor) -> None:
    """``megengine.random.shuffle(inp)``: permute ``inp``'s rows in place."""
    order = Tensor(_random.generator("cpu").permutation(inp.shape[0]), device=inp.device)
    inp.copy_(inp.detach()[order])
