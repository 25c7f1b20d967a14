"""Op-table entries for ``minigrad/functional/transcendental.py``.

The unary ops' and ``atan2``'s backward passes are written with ops and ``addcmul``/
``addcdiv``/``cross`` are composites, so every entry declares its second derivative.
"""

import math

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, pos, rand

SPECIAL = np.array([NAN, INF, -INF])


def _inside(*shape, seed=0):
    """float64 in [-0.9, 0.9): the open domain of acos, asin and erfinv."""
    return rand(*shape, low=-0.9, high=0.9, seed=seed)


def _unary(name, special, ref, domain=rand, nonfinite=(), xfail_0d=None):
    samples = (Sample((domain(3, 4),)), Sample((domain(),), name="0d", xfail=xfail_0d),
               Sample((domain(0, 3),), name="empty"))
    return OpInfo(name, "transcendental", samples, "fp32", gradgrad=True, ref=ref,
                  nonfinite=(NonFinite((SPECIAL,), special), *nonfinite))


def _erfinv_ref(x):
    """Bisection on math.erf: slow but independent of the op's rational approximation."""
    def one(v):
        lo, hi = -6.0, 6.0
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        return 0.5 * (lo + hi)

    return np.vectorize(one, otypes=[np.float64])(x)


def _fused(name, ref, right=rand):
    a, b, c = rand(3, 4), rand(3, 4, seed=1), right(3, 4, seed=2)
    return OpInfo(name, "transcendental", (
        Sample((a, b, c)),
        Sample((a, b, c), {"value": -0.5}, name="value"),
        Sample((rand(4), rand(3, 1, seed=1), right(3, 4, seed=2)), name="broadcast"),
        Sample((rand(), rand(seed=1), right(seed=2)), {"value": 2.0}, name="0d"),
        Sample((rand(0, 4), rand(4, seed=1), right(4, seed=2)), name="empty")), "promote",
        gradgrad=True, ref=ref,
        nonfinite=(NonFinite((np.array([NAN, 1.0, 1.0]), np.array([1.0, INF, 1.0]),
                              np.array([1.0, 1.0, NAN])), [NAN, INF, NAN]),),
        errors=(ErrorInput((rand(2, 3), rand(4), right(2, 3)), ValueError,
                           (name, "(2, 3)", "(4,)"), name="broadcast"),))


def _cross_ref(a, b, dim=None):
    if dim is None:
        dim = list(np.broadcast_shapes(a.shape, b.shape)).index(3)
    a, b = np.broadcast_arrays(a, b)
    return np.cross(a, b, axis=dim)


__all__ = ["OPS"]

OPS = [
    _unary("log2", [NAN, INF, NAN], np.log2, domain=pos),
    _unary("log10", [NAN, INF, NAN], np.log10, domain=pos),
    _unary("acos", [NAN, NAN, NAN], np.arccos, domain=_inside),
    _unary("asin", [NAN, NAN, NAN], np.arcsin, domain=_inside),
    _unary("cosh", [NAN, INF, INF], np.cosh),
    _unary("sinh", [NAN, INF, -INF], np.sinh),
    _unary("tan", [NAN, NAN, NAN], np.tan),
    _unary("reciprocal", [NAN, 0.0, -0.0], np.reciprocal, domain=pos,
           nonfinite=(NonFinite((np.array([0.0, -0.0]),), [INF, -INF], name="zero"),)),
    _unary("erfinv", [NAN, NAN, NAN], _erfinv_ref, domain=_inside,
           nonfinite=(NonFinite((np.array([1.0, -1.0, 1.5, 0.0]),), [INF, -INF, NAN, 0.0],
                                name="edges"),)),
    OpInfo("atan2", "transcendental", (
        Sample((rand(3, 4), rand(3, 4, seed=1))),
        Sample((rand(3, 4), rand(4, seed=1)), name="broadcast"),
        Sample((rand(2, 1, 3), rand(4, 1, seed=1)), name="broadcast2"),
        Sample((rand(), rand(seed=1)), name="0d"),
        Sample((rand(0, 4), rand(4, seed=1)), name="empty")), "promote",
        gradgrad=True, ref=np.arctan2,
        nonfinite=(NonFinite((np.array([NAN, INF, 1.0, -1.0]), np.array([1.0, INF, 0.0, -INF])),
                             [NAN, np.pi / 4, np.pi / 2, -np.pi]),),
        errors=(ErrorInput((1.0, 2.0), TypeError, ("atan2", "Tensor"), name="no_tensor"),
                ErrorInput((rand(2, 3), rand(4)), ValueError, ("atan2", "(2, 3)", "(4,)"),
                           name="broadcast"))),
    _fused("addcmul", lambda x, a, b, value=1: x + value * a * b),
    _fused("addcdiv", lambda x, a, b, value=1: x + value * a / b, right=pos),
    OpInfo("cross", "transcendental", (
        Sample((rand(4, 3), rand(4, 3, seed=1)), {"dim": -1}),
        Sample((rand(3, 4), rand(3, 4, seed=1)), name="default_dim"),
        Sample((rand(2, 3), rand(3, seed=1)), {"dim": 1}, name="broadcast"),
        Sample((rand(3), rand(3, seed=1)), name="vector"),
        Sample((rand(0, 3), rand(0, 3, seed=1)), {"dim": 1}, name="empty")), "promote",
        gradgrad=True, ref=_cross_ref,
        nonfinite=(NonFinite((np.array([NAN, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])),
                             [0.0, NAN, NAN]),),
        errors=(ErrorInput((rand(2, 4), rand(2, 4)), ValueError, ("cross", "size 3")),
                ErrorInput((rand(2, 3), rand(2, 3)), ValueError, ("cross", "size 3"),
                           {"dim": 0}, name="dim_not_3"))),
]
