"""Op-table entries for ``minigrad/functional/normalization.py``.

The batch, layer and group norms' gradient is computed on arrays (a ``*_backward`` Function):
no second derivative, so ``gradgrad`` stays False (double backward raises NotImplementedError
naming the op). ``renorm`` is a composite written with ops and declares it.
"""

import numpy as np

from ..op_table import INF, NAN, ErrorInput, NonFinite, OpInfo, Sample, pos, rand
from ._norms import pnorm as _pnorm


def _bn_ref(x, mean, var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape) + bias.reshape(shape)
    return y


def _ln_ref(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return y if weight is None else y * weight + bias


def _renorm_ref(x, p, dim, maxnorm):
    others = tuple(a for a in range(x.ndim) if a != dim % x.ndim)
    n = _pnorm(x, p, axis=others, keepdims=True)
    return x * np.where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)


_BN_EVAL = (rand(4, 3), rand(3, seed=1), pos(3, seed=2), pos(3, seed=3), rand(3, seed=4))

__all__ = ["OPS"]

OPS = [
    OpInfo("batch_norm", "normalization", (
        # running statistics are buffers, never differentiated
        Sample(_BN_EVAL, {"training": False}, const=(1, 2), name="eval",
               expect=_bn_ref(*_BN_EVAL)),
        Sample((rand(4, 3, 2, 2), np.zeros(3), np.ones(3)), {"training": True},
               const=(1, 2), name="train"),
        Sample((rand(4, 3, 5), None, None, pos(3, seed=3), rand(3, seed=4)),
               {"training": True}, name="no_running"),
        Sample((rand(0, 3), rand(3, seed=1), pos(3, seed=2)), {"training": False},
               const=(1, 2), name="empty")), "lower_input",
        errors=(ErrorInput((rand(2, 3), np.zeros(4), np.ones(4)), ValueError,
                           ("batch_norm", "running_mean"), name="channels"),),
        nonfinite=(NonFinite((np.array([[1.0], [NAN]]), None, None), [[NAN], [NAN]],
                             {"training": True}),)),
    OpInfo("layer_norm", "normalization", (
        Sample((rand(3, 4), (4,), pos(4, seed=1), rand(4, seed=2))),
        Sample((rand(2, 3, 4), (3, 4)), name="two_axes"),
        Sample((rand(0, 4), (4,)), name="empty")), "fp32", ref=_ln_ref,
        errors=(ErrorInput((rand(2, 3), (4,)), ValueError, ("layer_norm", "normalized_shape"),
                           name="shape"),),
        nonfinite=(NonFinite((np.array([[1.0, NAN, 2.0]]), (3,)), [[NAN, NAN, NAN]]),)),
    OpInfo("group_norm", "normalization", (
        Sample((rand(2, 4, 3), 2, pos(4, seed=1), rand(4, seed=2))),
        Sample((rand(2, 4, 2, 2), 4), name="instance"),
        Sample((rand(0, 4, 3), 2), name="empty")), "fp32",
        errors=(ErrorInput((rand(2, 3, 4), 2), ValueError, ("group_norm", "num_groups"),
                           name="groups"),)),
    # a composite of norm (a float32 row) written with ops: its second derivative is declared
    OpInfo("renorm", "normalization", (
        Sample((2 * rand(3, 4), 2, 0, 1.0)),
        Sample((2 * rand(2, 3, 4), 1, 1, 1.5), name="p1_dim1"),
        Sample((2 * rand(3, 4), INF, -1, 0.5), name="pinf"),
        Sample((rand(0, 4), 2, 1, 1.0), name="empty")), "fp32", gradgrad=True, ref=_renorm_ref,
        errors=(ErrorInput((rand(2, 3), 2, 0, -1.0), ValueError, ("renorm", "maxnorm"),
                           name="maxnorm"),
                ErrorInput((rand(2, 3), 2, 2, 1.0), (IndexError, ValueError),
                           ("renorm", "out of range"), name="bad_dim"))),
]
