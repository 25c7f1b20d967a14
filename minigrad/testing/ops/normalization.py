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
    # MegEngine's F.nn spellings: momentum=0.9 keeps 90% of the running statistics (PyTorch's
    # 0.1); affine comes before weight and bias
    OpInfo("nn.batch_norm", "normalization", (
        Sample(_BN_EVAL, const=(1, 2), name="eval", expect=_bn_ref(*_BN_EVAL)),
        Sample((rand(4, 3, 2, 2), np.zeros(3), np.ones(3)), {"training": True},
               const=(1, 2), name="train"),
        Sample((rand(4, 3, 2, 2), np.zeros(3), np.ones(3)),
               {"training": True, "momentum": 0.5, "inplace": False}, const=(1, 2),
               name="not_inplace", grad=False)),  # the new statistics have no gradient
        "lower_input", policy_name="batch_norm",
        errors=(ErrorInput((rand(2, 3), np.zeros(4), np.ones(4)), ValueError,
                           ("batch_norm", "running_mean"), name="channels"),)),
    OpInfo("nn.layer_norm", "normalization", (
        Sample((rand(3, 4), (4,), True, pos(4, seed=1), rand(4, seed=2))),
        Sample((rand(2, 3, 4), (3, 4), False), name="no_affine")), "fp32",
        policy_name="layer_norm",
        ref=lambda x, shape, affine=True, w=None, b=None, eps=1e-5: _ln_ref(
            x, shape, w if affine else None, b if affine else None, eps),
        errors=(ErrorInput((rand(3, 4), (4,), True), ValueError, ("layer_norm", "affine"),
                           name="affine_without_params"),)),
    OpInfo("nn.group_norm", "normalization", (
        Sample((rand(2, 4, 3), 2, True, pos(4, seed=1), rand(4, seed=2))),
        Sample((rand(2, 4, 2, 2), 4, False), name="no_affine")), "fp32",
        policy_name="group_norm",
        errors=(ErrorInput((rand(2, 4, 3), 2, pos(4, seed=1)), TypeError,
                           ("group_norm", "affine"), name="pytorch_order"),)),
    # MegEngine's F.nn.normalize: the norm of all elements unless an axis is given
    OpInfo("nn.normalize", "normalization", (
        Sample((rand(3, 4),)),
        Sample((rand(3, 4),), {"ord": 1, "axis": 0}, name="axis")), "fp32",
        policy_name="normalize", gradgrad=True,
        ref=lambda x, ord=None, axis=None, eps=1e-12: x / np.maximum(_pnorm(
            x, 2 if ord is None else ord, axis=axis, keepdims=axis is not None), eps),
        errors=(ErrorInput((rand(2, 3),), IndexError, "Dimension out of range", {"axis": 2},
                           name="bad_axis"),)),
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


def _normalize_ref(x, p=2.0, axis=None, eps=1e-12, dim=None):
    axis = 1 if axis is None and dim is None else (dim if axis is None else axis)
    return x / np.maximum(_pnorm(x, p, axis=axis, keepdims=True), eps)


OPS += [
    # a composite of norm and clip written with ops: its second derivative is declared
    OpInfo("normalize", "normalization", (
        Sample((rand(3, 4),)),
        Sample((rand(2, 3, 4), 1.0, 0), name="p1_axis0"),
        Sample((rand(2, 3, 4), INF, -1), name="pinf"),
        Sample((rand(3, 4),), {"dim": 0}, name="dim"),
        Sample((rand(0, 4),), name="empty")), "fp32", gradgrad=True, ref=_normalize_ref,
        errors=(ErrorInput((np.array([[1, 2]]),), ValueError, ("normalize", "floating"),
                           name="integer"),
                ErrorInput((rand(3),), IndexError, ("normalize", "out of range"),
                           name="bad_axis")),
        nonfinite=(NonFinite((np.array([[1.0, NAN], [INF, 1.0], [0.0, 0.0]]),),
                             [[NAN, NAN], [NAN, 0.0], [0.0, 0.0]]),)),
]


def _in_ref(x, running_mean=None, running_var=None, weight=None, bias=None,
            use_input_stats=True, momentum=0.1, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if use_input_stats:
        axes = tuple(range(2, x.ndim))
        y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    else:
        y = (x - running_mean.reshape(shape)) / np.sqrt(running_var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)


def _lrn_ref(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    sq = np.pad(x * x, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    window = sum(sq[:, j:j + c] for j in range(size))
    return x / (k + alpha / size * window) ** beta


OPS += [
    # per-instance statistics run through group norm's array backward: no second derivative
    OpInfo("instance_norm", "normalization", (
        Sample((rand(2, 3, 4),)),
        Sample((rand(2, 3, 2, 3), None, None, pos(3, seed=1), rand(3, seed=2)), name="affine"),
        Sample((rand(2, 3, 4), np.zeros(3), np.ones(3)), const=(1, 2), name="running"),
        Sample((rand(2, 3, 4), rand(3, seed=1), pos(3, seed=2), pos(3, seed=3)),
               {"use_input_stats": False}, const=(1, 2), name="running_stats"),
        Sample((rand(0, 3, 4),), name="empty")), "fp32", ref=_in_ref,
        errors=(ErrorInput((rand(2, 3, 1),), ValueError, ("instance_norm", "spatial"),
                           name="spatial"),
                ErrorInput((np.ones((2, 3, 4), np.int64),), ValueError,
                           ("instance_norm", "floating"), name="integer"),
                ErrorInput((rand(2, 3, 4), np.zeros(4), np.ones(4)), ValueError,
                           ("instance_norm", "running_mean"), name="channels"))),
    # a composite of pad, mul and pow written with ops: its second derivative is declared
    OpInfo("local_response_norm", "normalization", (
        Sample((rand(2, 4, 3), 3)),
        Sample((rand(2, 5, 3, 2), 2, 0.5, 0.5, 2.0), name="params"),
        Sample((rand(1, 3, 4), 5), name="wide_window"),
        Sample((rand(0, 3, 4), 2), name="empty")), "fp32", gradgrad=True, ref=_lrn_ref,
        errors=(ErrorInput((rand(2, 3), 2), ValueError, ("local_response_norm", "3"),
                           name="ndim"),
                ErrorInput((rand(2, 3, 4), 0), ValueError, ("local_response_norm", "size"),
                           name="size"),
                ErrorInput((np.ones((2, 3, 4), np.int64), 2), ValueError,
                           ("local_response_norm", "floating"), name="integer"))),
]



def _rms_ref(x, shape, w=None, eps=None):
    shape = (shape,) if isinstance(shape, int) else shape
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    eps = np.finfo(x.dtype).eps if eps is None else eps
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


OPS += [
    OpInfo("rms_norm", "normalization", (
        Sample((rand(3, 4), (4,), pos(4, seed=1))),
        Sample((rand(2, 3, 4), (3, 4)), {"eps": 1e-5}, name="two_axes"),
        Sample((rand(3), [3]), name="1d"),
        Sample((rand(0, 4), (4,)), name="empty")), "fp32", ref=_rms_ref, gradgrad=True,
        errors=(ErrorInput((rand(2, 3), (4,)), ValueError, ("rms_norm", "normalized_shape"),
                           name="shape"),
                ErrorInput((rand(2, 3), (3,), rand(2)), ValueError, ("rms_norm", "weight"),
                           name="weight_shape")),
        nonfinite=(NonFinite((np.array([[1.0, NAN, 2.0]]), (3,)), [[NAN, NAN, NAN]]),)),
]
