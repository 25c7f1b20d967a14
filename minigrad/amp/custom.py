"""``custom_fwd`` / ``custom_bwd``: autocast for user-defined ``Function`` subclasses (PyTorch's
``torch.amp.custom_fwd``/``custom_bwd``).

A user Function is unlisted in the policy table, so autocast passes its inputs through in
whatever dtype they arrive. ``@custom_fwd(cast_inputs=dtype)`` on ``forward`` casts the floating
input arrays to ``dtype`` and runs the forward with autocast off when called inside an enabled
region; ``@custom_bwd`` on ``backward`` runs the backward in the autocast state its forward ran
in (the engine otherwise runs backward with autocast off, invariant 5). Both are decorators over
the methods: ``Function.apply`` is unchanged.

They decorate both protocols: minigrad's (``forward(self, *arrays)``: the forward computes on
arrays, so only ``cast_inputs`` matters) and PyTorch's (``@staticmethod forward(ctx, *tensors)``
on ``mg.autograd.Function``): there the forward's own ops are dispatched, so without
``cast_inputs`` they run under the ambient autocast (PyTorch's ``MyMM`` example, ``a.mm(b)``
inside ``@custom_fwd``, is float16 in a float16 region), and ``cast_inputs`` casts the Tensors.

Example:
    >>> import minigrad as mg
    >>> from minigrad import amp
    >>> from minigrad.autodiff import Function
    >>> class Square(Function):
    ...     name = "my_square"
    ...     @amp.custom_fwd(cast_inputs=mg.float32)
    ...     def forward(self, x):
    ...         self.save_for_backward(x)
    ...         return x * x
    ...     @amp.custom_bwd
    ...     def backward(self, gy):
    ...         (x,) = self.saved_tensors
    ...         return 2 * x * gy
    >>> with amp.autocast():
    ...     y = Square.apply(mg.ones(2, dtype="float16"))
    >>> str(y.dtype)
    'float32'
"""

from __future__ import annotations

import functools

from .._backend.dtypes import is_floating, normalize_dtype
from ..precision.autocast import captured_state, replay_state

__all__ = ["custom_bwd", "custom_fwd"]


def custom_fwd(fwd=None, *, device_type=None, cast_inputs=None):
    """Decorate ``Function.forward`` (with or without arguments).

    Args:
        fwd: the forward method (when used as ``@custom_fwd`` without parentheses).
        device_type: PyTorch's argument; accepted and unused (minigrad's regions cover every
            device).
        cast_inputs: a floating dtype. Inside an enabled autocast region the floating input
            arrays are cast to it and the forward runs with autocast off; outside one the
            forward runs unchanged. None runs the forward in the ambient autocast state.
    """
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    if not callable(fwd):
        raise TypeError(f"custom_fwd decorates a Function's forward method, got "
                        f"{type(fwd).__name__}")
    target = normalize_dtype(cast_inputs)
    if target is not None and not is_floating(target):
        raise ValueError(f"custom_fwd: cast_inputs must be a floating dtype, got {cast_inputs!r}")

    @functools.wraps(fwd)
    def forward(self, *arrays, **attrs):
        state = captured_state()
        on = state[0] is not None and state[0].enabled
        if target is None or not on:
            self._amp_fwd_state = state
            return fwd(self, *arrays, **attrs)
        arrays = [a.astype(target) if hasattr(a, "dtype") and is_floating(a.dtype)
                  and a.dtype != target else a for a in arrays]
        self._amp_fwd_state = (None, None)
        with replay_state((None, None)):
            return fwd(self, *arrays, **attrs)

    return forward


def custom_bwd(bwd=None, *, device_type=None):
    """Decorate ``Function.backward`` so it runs in the autocast state of its forward.

    The forward must be decorated with ``custom_fwd`` (which records that state); ``device_type``
    is PyTorch's argument, accepted and unused.
    """
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    if not callable(bwd):
        raise TypeError(f"custom_bwd decorates a Function's backward method, got "
                        f"{type(bwd).__name__}")

    @functools.wraps(bwd)
    def backward(self, *grads):
        state = getattr(self, "_amp_fwd_state", None)
        if state is None:
            raise RuntimeError(
                f"custom_bwd on op '{self.name}': its forward is not decorated with custom_fwd, "
                "so the forward's autocast state is unknown; decorate forward with @custom_fwd")
        with replay_state(state):
            return bwd(self, *grads)

    return backward
