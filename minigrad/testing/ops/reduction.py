"""Op-table entries for ``minigrad/functional/reduction.py``."""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, rand
from ._norms import P_ERR as _P_ERR
from ._norms import pnorm as _pnorm

_ONE_NAN = np.array([1.0, NAN, 2.0])


def _reduction(name, amp, ref, gradgrad=False, nan_expect=NAN, empty=None, differentiable=True,
               kwargs=None, extra=(), xfail_0d=None, xfail_empty=None, **kw):
    """Entry for an ``op(x, axis=None, keepdims=False)`` reduction; ``empty`` is the expected
    value of reducing a (0,) tensor (None: it must raise, as max of nothing does)."""
    kw_ = kwargs or {}
    keep_axis = 1 if name.startswith("arg") else (0, 2)  # argmax takes one axis, like PyTorch
    samples = [Sample((rand(3, 4),), dict(kw_)),
               Sample((rand(3, 4),), dict(kw_, axis=1), name="axis"),
               Sample((rand(2, 3, 4),), dict(kw_, axis=keep_axis, keepdims=True), name="keepdims"),
               Sample((rand(3, 4),), dict(kw_, axis=-2), name="neg_axis"),
               Sample((rand(),), dict(kw_), name="0d", xfail_grad=xfail_0d), *extra]
    errors = [ErrorInput((rand(2, 3),), IndexError, "Dimension out of range", {"axis": 2},
                         name="bad_axis")]
    if empty is None:
        errors.append(ErrorInput((rand(0),), ValueError, (name, "empty"), name="empty"))
    else:
        xfail = xfail_empty
        samples += [Sample((rand(0),), dict(kw_), name="empty", expect=empty, xfail=xfail,
                           grad=xfail is None),
                    Sample((rand(0, 4),), dict(kw_, axis=0), name="empty_axis",
                           expect=np.full(4, empty), xfail=xfail, grad=xfail is None)]
    nonfinite = [NonFinite((_ONE_NAN,), nan_expect, kw_)]
    return OpInfo(name, "reduction", tuple(samples), amp, errors=tuple(errors),
                  nonfinite=tuple(nonfinite), gradgrad=gradgrad, ref=ref,
                  differentiable=differentiable, **kw)


def _np(fn):
    """NumPy reference taking minigrad's keywords (axis tuples, keepdims)."""
    def ref(x, axis=None, keepdims=False, return_indices=False, **kw):
        return fn(x, axis=axis, keepdims=keepdims, **kw)  # compared with the first output

    return ref


def _logsumexp(x, axis=None, keepdims=False):
    return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


def _norm(x, ord=2, axis=None, keepdims=False):
    return np.sum(np.abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1 / ord)


def _vector_norm_ref(x, ord=2, dim=None, keepdim=False):
    return _pnorm(x, ord, axis=dim, keepdims=keepdim)


def _matrix_norm_ref(a, ord="fro", dim=(-2, -1), keepdim=False):
    return np.linalg.norm(a, ord, axis=dim, keepdims=keepdim)


def _linalg_norm(name, samples, errors, ref, **kw):
    """Entry for ``torch.linalg``'s norms: float32 rows, composites or backward written with ops
    (second derivative declared)."""
    return OpInfo(name, "reduction", tuple(samples), "fp32", errors=tuple(errors), ref=ref,
                  gradgrad=True, **kw)


__all__ = ["OPS"]

OPS = [
    _reduction("sum", "fp32", _np(np.sum), empty=0.0),
    _reduction("mean", "fp32", None, empty=NAN),
    _reduction("var", "fp32", _np(np.var), gradgrad=True, empty=NAN),
    _reduction("std", "fp32", _np(np.std), gradgrad=True, empty=NAN),
    _reduction("prod", "fp32", _np(np.prod), gradgrad=True, empty=1.0),
    _reduction("max", "passthrough", _np(np.max), extra=(
        Sample((rand(3, 4),), {"axis": 1, "return_indices": True}, name="indices"),)),
    _reduction("min", "passthrough", _np(np.min), extra=(
        Sample((rand(3, 4),), {"axis": 1, "return_indices": True}, name="indices"),)),
    _reduction("logsumexp", "fp32", _logsumexp, gradgrad=True, empty=-INF),
    _reduction("norm", "fp32", _norm, gradgrad=True, empty=0.0),
    # PyTorch's argmax/argmin return the index of the (first) NaN.
    _reduction("argmax", "passthrough", _np(np.argmax), differentiable=False, nan_expect=1),
    _reduction("argmin", "passthrough", _np(np.argmin), differentiable=False, nan_expect=1),
    _linalg_norm("vector_norm", [
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
    _linalg_norm("matrix_norm", [
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
