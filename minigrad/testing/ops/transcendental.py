"""Op-table entries for ``minigrad/functional/transcendental.py``.

The backward passes are written with ops, so every unary entry declares its second derivative.
"""

import math

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, pos, rand
from ._pointwise import unary


def _unary(name, amp, special, **kw):
    return unary(name, "transcendental", amp, special, **kw)


def _inside(*shape, seed=0):
    """float64 in [-0.9, 0.9): the open domain of acos, asin and erfinv."""
    return rand(*shape, low=-0.9, high=0.9, seed=seed)


def _erfinv_ref(x):
    """Bisection on math.erf: slow but independent of the op's rational approximation."""
    def one(v):
        lo, hi = -6.0, 6.0
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        return 0.5 * (lo + hi)

    return np.vectorize(one, otypes=[np.float64])(x)


__all__ = ["OPS"]

OPS = [
    _unary("cos", "passthrough", [NAN, NAN, NAN], ref=np.cos),
    _unary("erf", "fp32", [NAN, 1.0, -1.0]),
    _unary("exp", "fp32", [NAN, INF, 0.0], ref=np.exp),
    _unary("expm1", "fp32", [NAN, INF, -1.0], ref=np.expm1),
    _unary("log", "fp32", [NAN, INF, NAN], domain=pos, ref=np.log),
    _unary("log1p", "fp32", [NAN, INF, NAN], domain=pos, ref=np.log1p),
    _unary("sin", "passthrough", [NAN, NAN, NAN], ref=np.sin),
    _unary("log2", "fp32", [NAN, INF, NAN], ref=np.log2, domain=pos),
    _unary("log10", "fp32", [NAN, INF, NAN], ref=np.log10, domain=pos),
    _unary("acos", "fp32", [NAN, NAN, NAN], ref=np.arccos, domain=_inside),
    _unary("asin", "fp32", [NAN, NAN, NAN], ref=np.arcsin, domain=_inside),
    _unary("cosh", "fp32", [NAN, INF, INF], ref=np.cosh),
    _unary("sinh", "fp32", [NAN, INF, -INF], ref=np.sinh),
    _unary("tan", "fp32", [NAN, NAN, NAN], ref=np.tan),
    _unary("erfinv", "fp32", [NAN, NAN, NAN], ref=_erfinv_ref, domain=_inside,
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
]

OPS += [
    _unary("atan", "passthrough", [NAN, np.pi / 2, -np.pi / 2], ref=np.arctan),
    _unary("exp2", "fp32", [NAN, INF, 0.0], ref=np.exp2),
]
