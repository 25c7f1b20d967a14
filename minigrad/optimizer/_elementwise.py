"""The shared frame of the element-wise optimizers written with array expressions (Adagrad,
Adadelta, RMSprop, Adamax, NAdam, RAdam): one body for NumPy and CuPy.

Each update computes the new parameter and state values out of place in the state dtype
(float32 for float16/bfloat16/float32 parameters, float64 for float64 ones) and then commits
them: the parameter is rounded once into its own dtype. When a device found-inf flag comes with
the step (a sync-free ``GradScaler`` on the GPU) every commit is masked by it, so a step whose
gradients overflowed leaves the parameter and every state buffer exactly unchanged without a
host read (invariant 9); the step count is advanced on the device by ``adam._advance``.
Scalars are combined with arrays in the order of PyTorch's single-tensor kernels
(``addcdiv(p, g, d, value=v)`` is ``p + v * g / d``), so results agree with PyTorch to the last
few ulps.
"""

from __future__ import annotations

from .. import _backend as B
from .optimizer import state_dtype

__all__ = ["Frame", "host_step", "lerp"]


def frames(group: dict, found_inf):
    """The :class:`Frame` of every parameter of ``group`` that has a gradient, with the group's
    ``maximize`` and L2 ``weight_decay`` applied (parameters without one are left alone)."""
    for p in group["params"]:
        if p.grad is not None:
            yield Frame(p, found_inf, group["maximize"], group["weight_decay"])


class Frame:
    """One parameter's update: ``w`` and ``g`` in the state dtype ``c``, ``ok`` the mask."""

    __slots__ = ("p", "xp", "c", "w", "g", "ok")

    def __init__(self, p, found_inf, maximize: bool = False, weight_decay: float = 0.0):
        data = p._data
        self.p = p
        self.xp = xp = B.get_array_module(data)
        self.c = c = state_dtype(data.dtype)
        self.w = data.astype(c)  # a copy: nothing is written before the commit
        g = xp.broadcast_to(p.grad._data, data.shape).astype(c)
        self.g = -g if maximize else g
        self.ok = None if found_inf is None else (found_inf.reshape(()) == 0)
        if weight_decay != 0:
            self.g = self.g + c.type(weight_decay) * self.w

    def zeros(self, fill: float = 0.0):
        """A new state buffer shaped like the parameter, in the state dtype."""
        with B.device_scope(self.p._data):
            return self.xp.full(self.p._data.shape, fill, self.c)

    def scalar(self, value):
        """``value`` (a host number or a device array) in the state dtype."""
        return self.c.type(value) if not hasattr(value, "shape") else value.astype(self.c)

    def store(self, buf, new) -> None:
        """Write ``new`` into the state buffer ``buf`` (masked by the found-inf flag)."""
        if self.ok is None:
            buf[...] = new
        else:
            self.xp.copyto(buf, new.astype(buf.dtype, copy=False), where=self.ok)

    def commit(self, w_new) -> None:
        """Round ``w_new`` once into the parameter (masked by the found-inf flag)."""
        data = self.p._data
        if self.ok is None:
            self.xp.copyto(data, w_new, casting="unsafe")
        else:
            self.xp.copyto(data, w_new.astype(data.dtype), where=self.ok)
        self.p._version += 1

    def keep(self, old, new):
        """``new``, or ``old`` where the step is skipped (for values kept outside buffers)."""
        if self.ok is None:
            return new
        xp = self.xp
        return xp.where(self.ok, xp.asarray(new), xp.asarray(old, dtype=xp.asarray(new).dtype))


def host_step(t) -> bool:
    """True when the step count ``t`` is a host int (Python branches may use it)."""
    return not hasattr(t, "shape")


def lerp(start, end, weight: float, c):
    """``start + weight * (end - start)``, evaluated as PyTorch's ``lerp`` is (from the nearer
    end, so either end is exact)."""
    w = c.type(weight)
    if abs(weight) < 0.5:
        return start + w * (end - start)
    return end - (end - start) * c.type(1 - weight)
