"""p-norm references shared by the distance, reduction and normalization entries."""

import math

import numpy as np

# What a p that is not a positive number (or inf) is refused with.
P_ERR = ("p must be a positive number",)


def pnorm(d, p, axis=None, keepdims=False):
    """NumPy p-norm of ``d`` over ``axis`` (inf: the largest magnitude, 0 over nothing)."""
    d = np.abs(d)
    if p == math.inf:
        return d.max(axis=axis, keepdims=keepdims, initial=0.0)
    return (d ** p).sum(axis=axis, keepdims=keepdims) ** (1.0 / p)
