"""The global random number generators behind ``mg.manual_seed`` and the random ops.

One NumPy ``Generator`` serves the CPU; each GPU gets a CuPy generator seeded from the same
seed. ``get_state``/``set_state`` give checkpoints plain data (no pickles) so a resumed run draws
the same numbers as an uninterrupted one.
"""

from __future__ import annotations

import numpy as np

from . import cupy, cuda_available

_seed = 0
_cpu = np.random.default_rng(_seed)
_gpu: dict[int, object] = {}


def manual_seed(seed: int) -> None:
    """Seed every generator (CPU and GPU) so runs repeat exactly."""
    global _seed, _cpu
    _seed = int(seed)
    _cpu = np.random.default_rng(_seed)
    _gpu.clear()


def generator(device: str = "cpu"):
    """The generator for ``device`` (``numpy.random.Generator`` or a CuPy one)."""
    if device == "cpu":
        return _cpu
    index = int(device.split(":")[1])
    if index not in _gpu:
        if not cuda_available():
            raise RuntimeError(f"no GPU for device {device!r}")
        with cupy.cuda.Device(index):
            _gpu[index] = cupy.random.default_rng(_seed + index)
    return _gpu[index]


def get_state() -> dict:
    """The CPU generator's state as a JSON-friendly dict."""
    return {"seed": _seed, "bit_generator": _cpu.bit_generator.state}


def set_state(state: dict) -> None:
    """Restore a state returned by :func:`get_state`."""
    global _seed
    _seed = int(state["seed"])
    _cpu.bit_generator.state = state["bit_generator"]


def normal(gen, mean, std, size):
    """``N(mean, std**2)`` samples from ``gen``: CuPy's ``Generator`` has no ``normal()``."""
    if isinstance(gen, np.random.Generator):
        return gen.normal(mean, std, size)
    return gen.standard_normal(size) * std + mean


def uniform(gen, low, high, size):
    """``U[low, high)`` samples from ``gen``: CuPy's ``Generator`` has no ``uniform()``."""
    if isinstance(gen, np.random.Generator):
        return gen.uniform(low, high, size)
    return gen.random(size) * (high - low) + low
