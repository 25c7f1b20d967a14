"""Shared builders of the pointwise families' op-table entries (elementwise, transcendental,
activation)."""

import numpy as np

from ..op_table import INF, NAN, NonFinite, OpInfo, Sample, rand

# inf/NaN propagation input of every unary entry: the expected outputs are listed per op.
SPECIAL = np.array([NAN, INF, -INF])


def unary(name, family, amp, special, ref=None, domain=rand, gradgrad=True, kwargs=None,
          xfail_0d=None, xfail_0d_grad=None, nonfinite=(), **kw):
    """Entry for a unary ``op(x, **kwargs)``: a matrix, a 0-d and an empty sample; ``special``
    is the expected output for :data:`SPECIAL` (None: no such check)."""
    kwargs = kwargs or {}
    samples = (Sample((domain(3, 4),), kwargs),
               Sample((domain(),), kwargs, name="0d", xfail=xfail_0d, xfail_grad=xfail_0d_grad),
               Sample((domain(0, 3),), kwargs, name="empty"))
    checks = (NonFinite((SPECIAL,), special, kwargs),) if special is not None else ()
    return OpInfo(name, family, samples, amp, nonfinite=checks + tuple(nonfinite),
                  gradgrad=gradgrad, ref=ref, **kw)
