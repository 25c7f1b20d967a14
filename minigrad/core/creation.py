"""Creation functions: tensors from data, constants, ranges and random draws."""

from __future__ import annotations

import numpy as np

from .. import _backend as B
from .._backend import random as _random
from .._backend.dtypes import float64, get_default_dtype, normalize_dtype
from .tensor import Tensor, _same_array

__all__ = [
    "tensor", "zeros", "ones", "full", "empty", "arange", "linspace", "eye", "randn", "rand",
    "randint", "normal", "uniform", "zeros_like", "ones_like", "full_like", "manual_seed",
    "get_rng_state", "set_rng_state", "from_dlpack", "from_numpy", "as_tensor",
]


def from_numpy(array) -> Tensor:
    """A Tensor sharing ``array``'s memory (PyTorch's ``torch.from_numpy``): writes through
    either are seen by both."""
    if type(array) is not np.ndarray:
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    return Tensor(array, copy=False)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a Tensor without a copy when it is already an array (or Tensor) of
    ``dtype`` on ``device``, sharing its memory (and a Tensor's version counter); a new Tensor
    otherwise (PyTorch's ``torch.as_tensor``)."""
    if isinstance(data, Tensor):
        if _same_array(data, dtype, device):
            return data
        return data.to(device or data.device).astype(dtype or data.dtype)
    return Tensor(data, dtype=dtype, device=device, copy=False)


# --------------------------------------------------------------------- creation functions
def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Create a Tensor from a list, scalar, NumPy or CuPy array (see :class:`Tensor`)."""
    return Tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def _shape(shape, op: str = "tensor creation"):
    """``shape`` (``*ints`` or one tuple/list) as a tuple of non-negative ints, or a clear error."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    try:
        dims = tuple(d.__index__() for d in shape)  # ints, NumPy ints; not floats
    except (AttributeError, TypeError):
        raise TypeError(f"{op}: sizes must be ints, got shape {tuple(shape)!r}") from None
    for d in dims:
        if d < 0:
            raise ValueError(f"{op}: negative dimension {d} in shape {dims}; every size must be "
                             ">= 0")
    return dims


def _size(size, op: str):
    return _shape((size,) if isinstance(size, int) else size, op)


def _xp(device):
    device = B.normalize_device(device)
    if device == "cpu":
        return np, device
    B._require_cuda(device)
    return B.cupy, device


def _float_dtype(dtype):
    """``dtype`` normalised; None means the default float dtype (``mg.set_default_dtype``)."""
    return get_default_dtype() if dtype is None else normalize_dtype(dtype)


def _created(arr, device, requires_grad):
    if device != "cpu":
        arr = B.to_device(arr, device)
    return Tensor(arr, requires_grad=requires_grad) if requires_grad else Tensor._make(
        arr, False, None, 0)


def zeros(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros (of the default dtype, ``mg.get_default_dtype()``, unless ``dtype``)."""
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.zeros(_shape(shape, "zeros"), dtype=_float_dtype(dtype)), device,
                        requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones (of the default dtype, ``mg.get_default_dtype()``, unless ``dtype``)."""
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.ones(_shape(shape, "ones"), dtype=_float_dtype(dtype)), device,
                        requires_grad)


def empty(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor (of the default dtype unless ``dtype``)."""
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.empty(_shape(shape, "empty"), dtype=_float_dtype(dtype)), device,
                        requires_grad)


def full(shape, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value``: the default dtype for a Python float (float32
    unless ``mg.set_default_dtype`` changed it), int64 for an int, bool for a bool."""
    if dtype is None:
        dtype = get_default_dtype() if isinstance(fill_value, float) else \
            np.asarray(fill_value).dtype
    xp, device = _xp(device)
    shape = _size(shape, "full")
    with _on(device):
        return _created(xp.full(shape, fill_value, dtype=normalize_dtype(dtype)), device,
                        requires_grad)


def _alias(op, value, alias, names):
    if alias is None:
        return value
    if value is not None:
        raise TypeError(f"{op}: got both {names[0]}= and {names[1]}=; they are one argument "
                        f"({names[1]} is PyTorch's spelling): pass one of them")
    return alias


def arange(start=None, stop=None, step=1, dtype=None, device=None, *, end=None,
           requires_grad=False) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` (int64 for ints; the default dtype, float32
    unless ``mg.set_default_dtype`` changed it, when any bound or the step is a float).

    ``end=`` is PyTorch's spelling of ``stop`` (``arange(end=5)`` counts from 0).
    """
    stop = _alias("arange", stop, end, ("stop", "end"))
    if stop is None:
        start, stop = 0, start
    if start is None:
        start = 0
    if stop is None:
        raise TypeError("arange: missing the end of the range")
    if dtype is None:
        dtype = np.int64 if all(isinstance(v, int) for v in (start, stop, step)) else \
            get_default_dtype()
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.arange(start, stop, step, dtype=normalize_dtype(dtype)), device,
                        requires_grad)


def linspace(start, stop=None, num=None, dtype=None, device=None, *, end=None, steps=None,
             requires_grad=False) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive (PyTorch's
    ``end=``/``steps=`` too), of the default dtype unless ``dtype``."""
    stop = _alias("linspace", stop, end, ("stop", "end"))
    num = _alias("linspace", num, steps, ("num", "steps"))
    if stop is None or num is None:
        raise TypeError("linspace: needs start, stop (end) and num (steps)")
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.linspace(start, stop, num, dtype=_float_dtype(dtype)), device,
                        requires_grad)


def eye(n, m=None, dtype=None, device=None) -> Tensor:
    """The ``n x m`` identity (``m`` defaults to ``n``), of the default dtype unless ``dtype``."""
    xp, device = _xp(device)
    with _on(device):
        return _created(xp.eye(n, m, dtype=_float_dtype(dtype)), device, False)


def _random_array(device, draw, dtype):
    device = B.normalize_device(device)
    gen = _random.generator(device)
    arr = draw(gen)
    return arr.astype(dtype, copy=False)


def _draw_dtype(dtype):
    # float64 tensors get float64 draws (float32 ones would leave float64 samples on float32's
    # grid); the other floats draw in float32, rounded once to float16/bfloat16. The float32
    # stream is the same as ever, so seeded float32 programs reproduce.
    return np.float64 if dtype == float64 else np.float32


def randn(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples from the global generator (see ``mg.manual_seed``), of the
    default dtype unless ``dtype``."""
    dtype = _float_dtype(dtype)
    arr = _random_array(device, lambda g: g.standard_normal(_shape(shape, "randn"),
                                                            dtype=_draw_dtype(dtype)), dtype)
    return _created(arr, B.device_of(arr), requires_grad)


def rand(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1), of the default dtype unless ``dtype``."""
    dtype = _float_dtype(dtype)
    arr = _random_array(device, lambda g: g.random(_shape(shape, "rand"),
                                                   dtype=_draw_dtype(dtype)), dtype)
    return _created(arr, B.device_of(arr), requires_grad)


def normal(mean=0.0, std=1.0, size=(), dtype=None, device=None) -> Tensor:
    """Samples of ``N(mean, std**2)`` from the global generator, of the default dtype unless
    ``dtype``."""
    size = _size(size, "normal")
    arr = _random_array(device, lambda g: _random.normal(g, mean, std, size), _float_dtype(dtype))
    return _created(arr, B.device_of(arr), False)


def uniform(low=0.0, high=1.0, size=(), dtype=None, device=None) -> Tensor:
    """Samples of ``U[low, high)`` from the global generator, of the default dtype unless
    ``dtype``."""
    size = _size(size, "uniform")
    arr = _random_array(device, lambda g: _random.uniform(g, low, high, size),
                        _float_dtype(dtype))
    return _created(arr, B.device_of(arr), False)


def randint(low, high=None, size=(), dtype=np.int64, device=None) -> Tensor:
    if high is None:
        low, high = 0, low
    size = _size(size, "randint")
    arr = _random_array(device, lambda g: g.integers(low, high, size), normalize_dtype(dtype))
    return _created(arr, B.device_of(arr), False)


def zeros_like(t: Tensor, dtype=None, requires_grad=False, *, device=None) -> Tensor:
    return zeros(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                 requires_grad=requires_grad)


def ones_like(t: Tensor, dtype=None, requires_grad=False, *, device=None) -> Tensor:
    return ones(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)


def full_like(t: Tensor, fill_value, dtype=None, *, device=None, requires_grad=False) -> Tensor:
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)


def manual_seed(seed: int) -> None:
    """Seed minigrad's random generators (CPU and GPU)."""
    _random.manual_seed(seed)


def get_rng_state() -> dict:
    """The random generators' state, as a JSON-friendly dict a checkpoint can hold (the GPU
    generators follow from the seed kept in it). PyTorch's returns a byte tensor; both go back
    through :func:`set_rng_state`."""
    return _random.get_state()


def set_rng_state(state: dict) -> None:
    """Restore a state returned by :func:`get_rng_state`."""
    _random.set_state(state)


def from_dlpack(obj) -> Tensor:
    """Wrap a DLPack-exporting array (NumPy, CuPy, PyTorch...) as a Tensor without copying."""
    return Tensor._make(B.from_dlpack(obj), False, None, 0)


class _on:
    """Make ``device`` current for CuPy allocations (no-op on the CPU)."""

    __slots__ = ("ctx",)

    def __init__(self, device):
        self.ctx = None if device == "cpu" else B.cupy.cuda.Device(int(device.split(":")[1]))

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)
