"""Op-table entries for ``minigrad/functional/distance.py``.

All are float32 rows and composites of ``norm``, so their second derivative is declared.
"""

import math

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, rand


def _pnorm(d, p, axis=None, keepdims=False):
    d = np.abs(d)
    if p == math.inf:
        return d.max(axis=axis, keepdims=keepdims, initial=0.0)
    return (d ** p).sum(axis=axis, keepdims=keepdims) ** (1.0 / p)


def _cdist_ref(x1, x2, p=2.0):
    return _pnorm(x1[..., :, None, :] - x2[..., None, :, :], p, axis=-1)


def _pdist_ref(x, p=2.0):
    i, j = np.triu_indices(len(x), k=1)
    return _pnorm(x[i] - x[j], p, axis=-1)


def _renorm_ref(x, p, dim, maxnorm):
    others = tuple(a for a in range(x.ndim) if a != dim % x.ndim)
    n = _pnorm(x, p, axis=others, keepdims=True)
    return x * np.where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)


def _vector_norm_ref(x, ord=2, dim=None, keepdim=False):
    return _pnorm(x, ord, axis=dim, keepdims=keepdim)


def _matrix_norm_ref(a, ord="fro", dim=(-2, -1), keepdim=False):
    return np.linalg.norm(a, ord, axis=dim, keepdims=keepdim)


_P_ERR = ("p must be a positive number",)


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
    _op("renorm", [
        Sample((2 * rand(3, 4), 2, 0, 1.0)),
        Sample((2 * rand(2, 3, 4), 1, 1, 1.5), name="p1_dim1"),
        Sample((2 * rand(3, 4), INF, -1, 0.5), name="pinf"),
        Sample((rand(0, 4), 2, 1, 1.0), name="empty")],
        [ErrorInput((rand(2, 3), 2, 0, -1.0), ValueError, ("renorm", "maxnorm"),
                    name="maxnorm"),
         ErrorInput((rand(2, 3), 2, 2, 1.0), (IndexError, ValueError),
                    ("renorm", "out of range"), name="bad_dim")],
        _renorm_ref),
    _op("vector_norm", [
        Sample((rand(3, 4),)),
        Sample((rand(3, 4),), {"ord": 3, "dim": 1}, name="p3_dim"),
        Sample((rand(2, 3, 4),), {"ord": 1, "dim": (0, 2), "keepdim": True}, name="keepdim"),
        Sample((rand(3, 4),), {"ord": INF, "dim": -1}, name="inf"),
        Sample((rand(),), name="0d"),
        Sample((rand(0, 4),), {"dim": 0}, name="empty", expect=np.zeros(4))],
        [ErrorInput((rand(2, 3),), ValueError, ("vector_norm",) + _P_ERR, {"ord": 0},
                    name="ord0")],
        _vector_norm_ref,
        nonfinite=(NonFinite((np.array([1.0, NAN, 2.0]),), NAN),
                   NonFinite((np.array([1.0, INF, 2.0]),), INF, name="inf"))),
    _op("matrix_norm", [
        Sample((rand(3, 4),)),
        Sample((rand(2, 3, 4),), {"ord": 1}, name="batch_ord1"),
        Sample((rand(3, 4),), {"ord": -1, "keepdim": True}, name="ord_minus1"),
        Sample((rand(3, 4),), {"ord": INF}, name="inf"),
        Sample((rand(3, 4, 2),), {"ord": -INF, "dim": (0, 1)}, name="minus_inf_dims"),
        Sample((rand(0, 3, 4),), name="empty")],
        [ErrorInput((rand(2, 3),), ValueError, ("matrix_norm", "ord=2", "not supported"),
                    {"ord": 2}, name="ord2"),
         ErrorInput((rand(3),), ValueError, ("matrix_norm", "2-D"), name="rank")],
        _matrix_norm_ref,
        nonfinite=(NonFinite((np.array([[1.0, NAN], [2.0, 3.0]]),), NAN),)),
]
