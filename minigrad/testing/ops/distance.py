"""Op-table entries for ``minigrad/functional/distance.py``.

All are float32 rows and composites of ``norm``, so their second derivative is declared.
"""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, rand
from ._norms import P_ERR as _P_ERR
from ._norms import pnorm as _pnorm


def _cdist_ref(x1, x2, p=2.0):
    return _pnorm(x1[..., :, None, :] - x2[..., None, :, :], p, axis=-1)


def _pdist_ref(x, p=2.0):
    i, j = np.triu_indices(len(x), k=1)
    return _pnorm(x[i] - x[j], p, axis=-1)


def _op(name, samples, errors, ref, **kw):
    return OpInfo(name, "distance", tuple(samples), "fp32", errors=tuple(errors), ref=ref,
                  gradgrad=True, **kw)


__all__ = ["OPS"]

OPS = [
    _op("cdist", [
        Sample((rand(3, 4), rand(5, 4, seed=1))),
        Sample((rand(3, 4), rand(5, 4, seed=1)), {"p": 1.0}, name="p1"),
        Sample((rand(2, 3, 4), rand(2, 2, 4, seed=1)), {"p": 3.0}, name="batch_p3"),
        Sample((rand(3, 4), rand(2, 4, seed=1)), {"p": INF}, name="pinf"),
        Sample((rand(0, 4), rand(2, 4, seed=1)), name="empty")],
        [ErrorInput((rand(2, 3), rand(2, 4)), ValueError, ("cdist", "(2, 3)", "(2, 4)"),
                    name="features"),
         ErrorInput((rand(2, 3), rand(2, 3)), ValueError, ("cdist",) + _P_ERR, {"p": 0},
                    name="p0")],
        _cdist_ref,
        nonfinite=(NonFinite((np.array([[NAN, 0.0], [INF, 0.0]]), np.array([[0.0, 0.0]])),
                             [[NAN], [INF]]),)),
    _op("pdist", [
        Sample((rand(4, 3),)),
        Sample((rand(4, 3), 1.0), name="p1"),
        Sample((rand(3, 2), INF), name="pinf"),
        Sample((rand(1, 3),), name="empty_pairs"),
        Sample((rand(3, 0),), name="empty_features")],
        [ErrorInput((rand(2, 3, 4),), ValueError, ("pdist", "2-D", "(2, 3, 4)"), name="rank")],
        _pdist_ref,
        nonfinite=(NonFinite((np.array([[NAN, 0.0], [1.0, 0.0], [2.0, 0.0]]),),
                             [NAN, NAN, 1.0]),)),
    _op("dist", [
        Sample((rand(3, 4), rand(3, 4, seed=1))),
        Sample((rand(3, 4), rand(4, seed=1)), {"p": 3.0}, name="broadcast_p3"),
        Sample((rand(3, 4), rand(4, seed=1)), {"p": INF}, name="pinf"),
        Sample((rand(), rand(seed=1)), name="0d"),
        Sample((rand(0, 4), rand(4, seed=1)), name="empty", expect=0.0)],
        [ErrorInput((rand(2, 3), rand(2, 3)), ValueError, ("dist",) + _P_ERR, {"p": -1},
                    name="p_negative")],
        lambda a, b, p=2.0: _pnorm(a - b, p),
        nonfinite=(NonFinite((np.array([NAN, 1.0]), np.array([0.0, 0.0])), NAN),
                   NonFinite((np.array([INF, 1.0]), np.array([0.0, 0.0])), INF, name="inf"))),
]

OPS += [
    _op("pairwise_distance", [
        Sample((rand(3, 4), rand(3, 4, seed=1))),
        Sample((rand(3, 4), rand(4, seed=1)), {"p": 1.0, "keepdim": True}, name="p1_keepdim"),
        Sample((rand(3, 4), rand(3, 4, seed=1)), {"p": INF}, name="pinf"),
        Sample((rand(4), rand(4, seed=1)), name="1d"),
        Sample((rand(0, 4), rand(0, 4, seed=1)), name="empty")],
        [ErrorInput((rand(2, 3), rand(2, 4)), ValueError, "broadcast", name="shapes")],
        lambda a, b, p=2.0, eps=1e-6, keepdim=False: _pnorm(a - b + eps, p, axis=-1,
                                                             keepdims=keepdim)),
]
