"""Op-table entries for ``minigrad/functional/linalg.py``."""

import numpy as np

from ..op_table import ErrorInput, OpInfo, Sample, rand


def _op(name, samples, errors, ref=None, amp="lower"):
    # Products of two inputs: the gradient w.r.t. one depends on the other, so the second
    # derivative is non-trivial and checked.
    return OpInfo(name, "linalg", tuple(samples), amp, errors=tuple(errors), ref=ref,
                  gradgrad=True)


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
]
