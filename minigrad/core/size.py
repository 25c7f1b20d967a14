"""``t.size`` for two peers at once, and PyTorch's ``Size``.

MegEngine's ``x.size`` is a property, the element count (an int); PyTorch's ``x.size()`` is a
method that returns the shape (``torch.Size``) and ``x.size(d)`` one dimension. ``Tensor.size``
returns an :class:`ElementCount`: an ``int`` (so ``x.size == 6``, ``x.size * 2``,
``sum(p.size for p in net.parameters())`` and every other int use work as before) that is also
callable (``x.size()`` is the shape as a :class:`Size`, ``x.size(0)`` / ``x.size(dim=-1)`` an
int). Calling it is the one thing an int cannot do, so neither spelling shadows the other.

Example:
    >>> import minigrad as mg
    >>> x = mg.zeros(2, 3)
    >>> x.size, x.size(), x.size(-1), x.numel()
    (6, minigrad.Size([2, 3]), 3, 6)
"""

from __future__ import annotations

__all__ = ["ElementCount", "Size"]


class Size(tuple):
    """PyTorch's ``torch.Size``: a tuple of dimensions (equal to the plain tuple) with
    ``numel()``."""

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        n = 1
        for d in self:
            n *= d
        return n

    def __repr__(self) -> str:
        return f"minigrad.Size({list(self)})"

    def __getitem__(self, index):
        out = tuple.__getitem__(self, index)
        return Size(out) if isinstance(index, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))


class ElementCount(int):
    """``Tensor.size``: the number of elements (an int), callable as PyTorch's ``size(dim=None)``.

    ``count()`` returns the shape as a :class:`Size`; ``count(d)`` the length of dimension ``d``
    (negative counts from the end; out of range raises ``IndexError``).
    """

    def __new__(cls, shape: tuple):
        n = 1
        for d in shape:
            n *= d
        self = int.__new__(cls, n)
        self._shape = shape
        return self

    def __call__(self, dim=None):
        shape = self._shape
        if dim is None:
            return Size(shape)
        if isinstance(dim, bool) or not hasattr(dim, "__index__"):
            raise TypeError(f"size(dim): dim must be an int, got {type(dim).__name__} {dim!r}")
        dim = dim.__index__()
        n = len(shape)
        if n == 0:
            raise IndexError(f"size({dim}): Dimension specified as {dim} but tensor has no "
                             "dimensions (a 0-d tensor); call size() for its shape ()")
        if not -n <= dim < n:
            raise IndexError(f"size({dim}): Dimension out of range (expected to be in range of "
                             f"[{-n}, {n - 1}], but got {dim}) for a tensor of shape {shape}")
        return shape[dim]

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__

    def __reduce__(self):  # copies (copy.copy, deepcopy) are plain ints
        return int, (int(self),)
