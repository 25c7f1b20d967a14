"""``Tensor.device`` as PyTorch's ``torch.device`` that still is minigrad's device string.

A :class:`Device` is a ``str`` (``"cpu"``, ``"cuda:0"``): it compares equal to that string,
hashes like it and is accepted wherever a device string is (``mg.zeros(2, device=x.device)``,
``t.to(d)``, ``model.to(d)``, ``isinstance(d, str)`` checks). It adds PyTorch's ``type``
(``"cpu"``/``"cuda"``) and ``index`` (an int, or None when no index is given) and PyTorch's
repr. PyTorch's ``torch.device`` is never equal to a string; minigrad's is, because its devices
were strings first.

``index`` replaces ``str.index``: when there is an index it is an ``int`` that is still callable
as ``str.index`` (``d.index(":")``), so code written for device strings keeps working (the same
device as ``Tensor.size``, an int that is also PyTorch's method).

Example:
    >>> import minigrad as mg
    >>> d = mg.device("cuda:1")
    >>> d.type, d.index, str(d), d == "cuda:1", mg.device("cuda", 1) == d
    ('cuda', 1, 'cuda:1', True, True)
    >>> mg.zeros(2).device.type
    'cpu'
"""

from __future__ import annotations

__all__ = ["Device", "as_device"]

_TYPES = {"cpu": "cpu", "cuda": "cuda", "gpu": "cuda"}


class _Index(int):
    """``Device.index``: the GPU number, also callable as the string's ``str.index``."""

    def __new__(cls, value: int, spec: str):
        self = int.__new__(cls, value)
        self._spec = spec
        return self

    def __call__(self, sub, *args):
        return self._spec.index(sub, *args)

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__

    def __reduce__(self):
        return int, (int(self),)


def _parse(spec, index):
    if isinstance(spec, Device):
        kind, idx = spec.type, spec.index
    elif isinstance(spec, int) and not isinstance(spec, bool):
        kind, idx = "cuda", spec
    elif isinstance(spec, str):
        name, sep, num = spec.strip().partition(":")
        if name not in _TYPES or (sep and not num.isdigit()):
            raise ValueError(f"device({spec!r}): unknown device; use 'cpu', 'cuda' or "
                             "'cuda:N' (minigrad runs on the CPU and CUDA GPUs)")
        kind, idx = _TYPES[name], int(num) if sep else None
    else:
        raise TypeError(f"device(): expected a string, an int or a device, got "
                        f"{spec.__class__.__name__}")
    if index is not None:
        if idx is not None:
            raise ValueError(f"device({spec!r}, {index!r}): the index is given twice (in the "
                             "string and as index=); give it once")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"device(): index must be an int >= 0, got {index!r}")
        idx = index
    if kind == "cpu":
        if idx not in (None, 0):
            raise ValueError(f"device('cpu', {idx}): there is one CPU device")
        idx = None  # PyTorch's cpu:0 is the CPU
    return kind, None if idx is None else int(idx)


class Device(str):
    """``torch.device(type_or_string, index=None)``: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, an int
    ``N`` (that GPU) or another ``Device``; ``"gpu"`` is MegEngine's name for ``"cuda"``.

    Raises:
        ValueError: an unknown device type, a malformed index, or an index given twice.
    """

    def __new__(cls, type, index=None):  # noqa: A002 - PyTorch's parameter name
        kind, idx = _parse(type, index)
        spec = kind if idx is None else f"{kind}:{idx}"
        self = str.__new__(cls, spec)
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "_index", None if idx is None else _Index(idx, spec))
        return self

    @property
    def index(self):
        """The GPU number (an int), or None for ``"cpu"`` and a bare ``"cuda"``."""
        return self._index

    def __setattr__(self, name, value):
        raise AttributeError("device objects are immutable")

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type={self.type!r})"
        return f"device(type={self.type!r}, index={int(self._index)})"

    def __reduce__(self):
        return Device, (str(self),)


_interned: dict = {}


def as_device(spec) -> Device:
    """The (shared, immutable) :class:`Device` of a device string."""
    d = _interned.get(spec)
    if d is None:
        d = _interned[spec] = Device(spec)
    return d
