"""PyTorch's ``torch.Generator``: a seeded source that ``random_split``, the samplers and
``DataLoader(generator=)`` read their seed from (``initial_seed()``). minigrad's tensors draw
from the global generators (``mg.manual_seed``); a ``generator=`` argument to a creation
function is not accepted, so it cannot be ignored."""

from __future__ import annotations

import numpy as np

from ... import _backend as B
from ...data.sampler import seed_from

__all__ = ["Generator"]


class Generator:
    """``mg.Generator(device="cpu").manual_seed(seed)``; ``initial_seed()``, ``seed()``,
    ``get_state()``/``set_state()`` as in PyTorch (the state is a dict here)."""

    def __init__(self, device="cpu"):
        self.device = B.normalize_device(device)
        self.manual_seed(seed_from(None))

    def manual_seed(self, seed: int) -> Generator:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"Generator.manual_seed: seed must be an int, got {seed!r}")
        self._seed = int(seed) % 2 ** 64
        self._rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        """Re-seed from fresh entropy and return the new seed."""
        self.manual_seed(int(np.random.SeedSequence().entropy % 2 ** 63))
        return self._seed

    def get_state(self) -> dict:
        return {"seed": self._seed, "bit_generator": self._rng.bit_generator.state}

    def set_state(self, state: dict) -> Generator:
        self._seed = int(state["seed"])
        self._rng.bit_generator.state = state["bit_generator"]
        return self
