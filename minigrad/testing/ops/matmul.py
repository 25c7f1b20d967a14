"""Op-table entries for ``minigrad/functional/matmul.py``.

``mm``/``mv``/``vdot`` are the matmul/dot primitives under their own rows; the fused and chained
forms, ``tensordot``, ``bilinear`` and ``cross`` are composites. All are products, so every second
derivative is non-trivial and checked.
"""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, rand


def _op(name, samples, errors, ref=None, amp="lower", **kw):
    return OpInfo(name, "matmul", tuple(samples), amp, errors=tuple(errors), ref=ref,
                  gradgrad=True, **kw)


def _axpby(prod):
    """Reference of ``beta * input + alpha * prod(a, b)``."""
    return lambda x, a, b, beta=1, alpha=1: beta * x + alpha * prod(a, b)


def _fused(name, shapes, out, prod, empty):
    """Samples for ``name(input, a, b, beta=, alpha=)``: ``input`` full-size, broadcast, 0-d."""
    a, b = rand(*shapes[0], seed=1), rand(*shapes[1], seed=2)
    nan_in = np.full(out, NAN)
    inf_a = a.copy()
    inf_a.flat[0] = INF
    with np.errstate(invalid="ignore"):  # BLAS may form 0 * inf in its padding
        inf_out = rand(*out) + prod(inf_a, b)
    return _op(name, [
        Sample((rand(*out), a, b)),
        Sample((rand(*out), a, b), {"beta": 0.5, "alpha": -2.0}, name="scaled"),
        Sample((rand(out[-1]), a, b), name="broadcast"),
        Sample((rand(), a, b), {"alpha": 0.5}, name="0d_input"),
        Sample(empty, name="empty")],
        [ErrorInput((rand(*out), b, a), ValueError, (name,), name="shapes"),
         ErrorInput((rand(out[-1] + 1), a, b), ValueError, (name, "broadcast"),
                    name="input_shape")],
        _axpby(prod),
        # beta=0 ignores input: NaN/inf there do not leak into the result (PyTorch).
        nonfinite=(NonFinite((nan_in, a, b), prod(a, b), {"beta": 0}, name="beta0"),
                   NonFinite((rand(*out), inf_a, b), inf_out, name="inf")))


def _multi_dot_ref(ts):
    return np.linalg.multi_dot(ts)


def _cross_ref(a, b, dim=None):
    if dim is None:
        dim = list(np.broadcast_shapes(a.shape, b.shape)).index(3)
    a, b = np.broadcast_arrays(a, b)
    return np.cross(a, b, axis=dim)


__all__ = ["OPS"]

OPS = [
    _op("matmul", [Sample((rand(3, 4), rand(4, 2, seed=1))),
                   Sample((rand(2, 3, 4), rand(4, 2, seed=1)), name="broadcast"),
                   Sample((rand(4), rand(4, 2, seed=1)), name="vector"),
                   Sample((rand(0, 4), rand(4, 2, seed=1)), name="empty"),
                   Sample((rand(3, 0), rand(0, 2, seed=1)), name="empty_inner")],
        [ErrorInput((rand(2, 3), rand(2, 3)), ValueError, ("matmul", "(2, 3)"), name="inner")],
        ref=np.matmul),
    _op("bmm", [Sample((rand(2, 3, 4), rand(2, 4, 2, seed=1))),
                Sample((rand(0, 3, 4), rand(0, 4, 2, seed=1)), name="empty")],
        [ErrorInput((rand(2, 3), rand(3, 2)), ValueError, ("bmm", "3-D"), name="rank")],
        ref=np.matmul),
    _op("dot", [Sample((rand(4), rand(4, seed=1))),
                Sample((rand(0), rand(0, seed=1)), name="empty")],
        [ErrorInput((rand(4), rand(3)), ValueError, ("dot", "(4,)"), name="length")],
        ref=np.dot, amp="promote"),
    _op("linear", [Sample((rand(3, 4), rand(2, 4, seed=1), rand(2, seed=2))),
                   Sample((rand(2, 3, 4), rand(2, 4, seed=1)), name="nobias_3d"),
                   Sample((rand(0, 4), rand(2, 4, seed=1), rand(2, seed=2)), name="empty")],
        [ErrorInput((rand(2, 3), rand(4, 4)), ValueError, ("linear", "weight=(4, 4)"),
                    name="features")],
        ref=lambda x, w, b=None: x @ w.T + (0 if b is None else b)),
    _op("einsum", [Sample(("ij,jk->ik", rand(3, 4), rand(4, 2, seed=1))),
                   Sample(("bij,bjk->bik", rand(2, 3, 4), rand(2, 4, 2, seed=1)), name="batch"),
                   Sample(("ii->i", rand(3, 3)), name="diagonal"),
                   Sample(("ij->", rand(3, 4)), name="full_sum"),
                   Sample(("ij,jk->ik", rand(0, 4), rand(4, 2, seed=1)), name="empty")],
        [ErrorInput(("ij,jk->ik", rand(2, 3), rand(2, 3)), ValueError, ("einsum", "'j'"),
                    name="sizes")],
        ref=np.einsum),
    _op("mm", [Sample((rand(3, 4), rand(4, 2, seed=1))),
               Sample((rand(0, 4), rand(4, 2, seed=1)), name="empty"),
               Sample((rand(3, 0), rand(0, 2, seed=1)), name="empty_inner")],
        [ErrorInput((rand(2, 3), rand(2, 3)), ValueError, ("mm", "(2, 3)"), name="inner"),
         ErrorInput((rand(2, 2, 3), rand(3, 2)), ValueError, ("mm", "matmul"), name="rank")],
        np.matmul),
    _op("mv", [Sample((rand(3, 4), rand(4, seed=1))),
               Sample((rand(0, 4), rand(4, seed=1)), name="empty")],
        [ErrorInput((rand(3, 4), rand(3)), ValueError, ("mv", "(3, 4)", "(3,)"), name="inner")],
        np.matmul),
    _op("vdot", [Sample((rand(4), rand(4, seed=1))),
                 Sample((rand(0), rand(0, seed=1)), name="empty")],
        [ErrorInput((rand(4), rand(3)), ValueError, ("vdot", "(4,)", "(3,)"), name="length")],
        np.vdot, amp="promote",
        nonfinite=(NonFinite((np.array([NAN, 1.0]), np.array([1.0, 1.0])), NAN),)),
    _fused("addmm", ((3, 4), (4, 2)), (3, 2), np.matmul,
           (rand(0, 2), rand(0, 4, seed=1), rand(4, 2, seed=2))),
    _fused("addmv", ((3, 4), (4,)), (3,), np.matmul,
           (rand(0), rand(0, 4, seed=1), rand(4, seed=2))),
    _fused("addr", ((3,), (4,)), (3, 4), np.outer,
           (rand(0, 4), rand(0, seed=1), rand(4, seed=2))),
    _fused("baddbmm", ((2, 3, 4), (2, 4, 2)), (2, 3, 2), np.matmul,
           (rand(0, 3, 2), rand(0, 3, 4, seed=1), rand(0, 4, 2, seed=2))),
    _fused("addbmm", ((2, 3, 4), (2, 4, 2)), (3, 2), lambda a, b: np.matmul(a, b).sum(0),
           (rand(3, 2), rand(0, 3, 4, seed=1), rand(0, 4, 2, seed=2))),
    _op("chain_matmul", [
        Sample((rand(2, 3), rand(3, 4, seed=1), rand(4, 2, seed=2))),
        Sample((rand(3, 3),), name="single"),
        Sample((rand(2, 0), rand(0, 4, seed=1)), name="empty_inner")],
        [ErrorInput((rand(2, 3), rand(3)), ValueError, ("chain_matmul", "2-D"), name="rank"),
         ErrorInput((rand(2, 3), rand(2, 3)), ValueError, ("chain_matmul", "(2, 3)"),
                    name="inner")],
        lambda *ts: np.linalg.multi_dot(ts) if len(ts) > 1 else ts[0]),
    *(_op(name, [
        Sample(([rand(2, 3), rand(3, 4, seed=1), rand(4, 2, seed=2)],)),
        Sample(([rand(3), rand(3, 4, seed=1), rand(4, 2, seed=2), rand(2, seed=3)],),
               name="vector_ends"),
        Sample(([rand(0, 3), rand(3, 4, seed=1)],), name="empty")],
        [ErrorInput(([rand(2, 3), rand(2, 3)],), ValueError, (name.split(".")[-1], "(2, 3)"),
                    name="inner"),
         ErrorInput(([rand(2, 3), rand(3), rand(3, 2)],), ValueError, ("multi_dot", "1-D"),
                    name="rank")],
        _multi_dot_ref, policy_name="linalg_multi_dot") for name in ("linalg_multi_dot",
                                                                        "multi_dot")),
    _op("tensordot", [
        Sample((rand(2, 3, 4), rand(3, 4, 5, seed=1))),
        Sample((rand(2, 3, 4), rand(4, 3, seed=1)), {"dims": ([1, 2], [1, 0])}, name="pairs"),
        Sample((rand(2, 3), rand(4, seed=1)), {"dims": 0}, name="outer"),
        Sample((rand(0, 3), rand(3, 2, seed=1)), {"dims": 1}, name="empty")],
        [ErrorInput((rand(2, 3), rand(4, 2)), ValueError, ("tensordot", "(2, 3)", "(4, 2)"),
                    {"dims": 1}, name="sizes")],
        lambda a, b, dims=2: np.tensordot(a, b, dims), amp="promote"),
    _op("bilinear", [
        Sample((rand(3, 4), rand(3, 5, seed=1), rand(2, 4, 5, seed=2), rand(2, seed=3))),
        Sample((rand(2, 3, 4), rand(2, 3, 5, seed=1), rand(2, 4, 5, seed=2)), name="nobias_3d"),
        Sample((rand(0, 4), rand(0, 5, seed=1), rand(2, 4, 5, seed=2), rand(2, seed=3)),
               name="empty")],
        [ErrorInput((rand(3, 4), rand(3, 5), rand(2, 5, 4)), ValueError,
                    ("bilinear", "weight=(2, 5, 4)"), name="weight")],
        lambda x1, x2, w, b=None: np.einsum("...i,oij,...j->...o", x1, w, x2)
        + (0 if b is None else b), amp="promote"),
    OpInfo("cross", "matmul", (
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
