"""Normalization: the layers' functional forms batch_norm, layer_norm, group_norm,
instance_norm and local_response_norm, renorm (rescale slices to a maximum p-norm) and normalize
(slices to unit p-norm).

Statistics are computed in float32 (float64 for float64 input) whatever the input dtype
(invariant 3) and the output has the input's dtype, so a float16 activation can be normalised with
float32 running statistics and affine parameters (MegEngine's and MindSpore's AMP rule for
BatchNorm). The forward saves the input and the per-group mean / inverse std, not the normalised
activation, so a float16 model keeps float16-sized activations for backward. ``renorm`` is a
composite of ``norm`` (a float32 row of the AMP policy).
"""

from __future__ import annotations

import math

import numpy as np

from .._backend import batch_norm as BN
from .._backend import get_array_module
from .._backend.dtypes import float32, is_low_precision
from ..core.function import Function
from ..core.tensor import Tensor
from ._array_backward import ArrayBackward, run_array_backward
from ._axes import one_of
from ._composite import composite
from ._utils import acc_dtype, check_floating, const, cpu_wide, normalize_axis, op_error, to_dtype
from .elementwise import clip, rsqrt, sqrt, where
from .reduction import mean, norm, norm_order
from .shape import pad

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm",
           "normalize", "renorm", "rms_norm"]


def _stats(xf, axes, eps):
    """Mean and inverse standard deviation (biased variance) over ``axes``, kept as dims."""
    xp = get_array_module(xf)
    mean = xf.mean(axis=axes, keepdims=True)
    centered = xf - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    return mean, var, 1.0 / xp.sqrt(var + eps)


def _normalize_grad(gxhat, xhat, invstd, axes):
    """d/dx of ``xhat = (x - mean(x)) * invstd`` given d/dxhat, over the statistics' axes."""
    if gxhat.size == 0:  # no rows (an empty batch): an empty gradient of the right shape
        return gxhat * invstd
    inv_n = invstd.size / gxhat.size  # 1 / (elements per statistic)
    m1 = gxhat.sum(axis=axes, keepdims=True) * inv_n
    m2 = (gxhat * xhat).sum(axis=axes, keepdims=True) * inv_n
    return invstd * (gxhat - m1 - xhat * m2)


def _affine_grads(gyf, xhat, w, b, param_axes, needs_w, needs_b):
    out = []
    if needs_w:
        out.append(((gyf * xhat).sum(axis=param_axes)).reshape(w.shape).astype(w.dtype))
    if needs_b:
        out.append(gyf.sum(axis=param_axes).reshape(b.shape).astype(b.dtype))
    return out


# --------------------------------------------------------------------------- batch norm
class BatchNorm(Function):
    name = "batch_norm"

    def forward(self, x, weight, bias, running_mean, running_var, training, momentum, eps):
        check_floating("batch_norm", x)
        if x.ndim < 2:
            raise op_error("batch_norm", "expects (N, C) or (N, C, *) input", shape=x.shape)
        c = x.shape[1]
        self.axes = axes = (0,) + tuple(range(2, x.ndim))
        self.pshape = pshape = (1, c) + (1,) * (x.ndim - 2)
        acc = acc_dtype(x.dtype)
        self.training = training
        # CPU float16/bfloat16 widened once here: the backend's CPU path would widen (and
        # round back) with NumPy's element-by-element casts; same values, same rounding
        xw = cpu_wide(x)
        if training:
            n = x.size // c
            if n <= 1:
                raise op_error("batch_norm", "needs more than one value per channel when "
                               "training; use a larger batch or training=False", shape=x.shape)
            mean, var = BN.moments(xw, axes)
            for running, stat, corr in ((running_mean, mean, 1.0),
                                        (running_var, var, n / (n - 1))):  # unbiased variance
                if running is not None:  # in place, with a version bump (nn.BatchNorm's buffers)
                    BN.running_update(running._data, stat, momentum, corr)
                    running._set_data_(running._data)
        else:
            if running_mean is None or running_var is None:
                raise op_error("batch_norm", "training=False needs running_mean and "
                               "running_var; pass them or use training=True", shape=x.shape)
            mean = running_mean._data.astype(acc).reshape(pshape)
            var = running_var._data.astype(acc).reshape(pshape)
        invstd, scale, shift = BN.scale_shift(mean, var, eps, weight, bias)
        self.save_for_backward(x, weight, mean, invstd)
        return to_dtype(BN.affine_apply(xw, scale, shift), x.dtype)

    def backward(self, gy):
        x, w, mean, invstd = [t._data if isinstance(t, Tensor) else t for t in self.saved_tensors]
        b = self.inputs[2]
        return run_array_backward(
            BatchNormBackward, (gy,), self, x=x, w=w,
            b=b._data if isinstance(b, Tensor) else None, mean=mean, invstd=invstd,
            axes=self.axes, pshape=self.pshape, training=self.training)


class BatchNormBackward(ArrayBackward):
    name = "batch_norm_backward"

    def compute(self, gy, needs, x, w, b, mean, invstd, axes, pshape, training):
        gyw, xw = cpu_wide(gy), cpu_wide(x)  # CPU float16/bfloat16 widened once, as in forward
        if x.size == 0:  # an empty batch: empty input gradient, zero parameter gradients
            s1 = s2 = get_array_module(x).zeros(pshape, invstd.dtype)
        else:
            s1, s2 = BN.backward_sums(gyw, xw, mean, axes)  # sum(gy), sum(gy * (x - mean))
        out = []
        if needs[0]:
            k = invstd if w is None else invstd * w.astype(invstd.dtype).reshape(pshape)
            if training:  # gx = k * (gy - mean(gy) - xhat * mean(gy * xhat))
                n = x.size / invstd.size if invstd.size else 1.0
                a, bb = s1 / n, s2 * (invstd * invstd) / n
            else:         # running statistics are constants: gx = k * gy
                a = bb = get_array_module(k).zeros_like(k)
            out.append(to_dtype(BN.grad_input(gyw, xw, mean, k, a, bb), x.dtype))
        if needs[1]:  # sum(gy * xhat)
            out.append((s2 * invstd).reshape(w.shape).astype(w.dtype))
        if needs[2]:
            out.append(s1.reshape(b.shape).astype(b.dtype))
        return tuple(out)


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch normalization over (N, C) or (N, C, *) input, with PyTorch semantics.

    In training, the batch statistics normalise the input (biased variance) and the running
    statistics are updated in place: ``running = (1 - momentum) * running + momentum * stat``
    with the unbiased variance. In evaluation the running statistics are used.

    Args:
        x: input; float16/bfloat16 input is normalised in float32 and returned in its dtype.
        running_mean, running_var: (C,) buffers (may be float32 while ``x`` is float16), or
            None in training to skip the update.
        weight, bias: optional (C,) affine parameters.
        training: use batch statistics and update the running ones.
        momentum: running-statistics update factor.
        eps: added to the variance.

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    c = x.shape[1] if x.ndim >= 2 else None
    for label, t in (("running_mean", running_mean), ("running_var", running_var),
                     ("weight", weight), ("bias", bias)):
        if t is not None and t.size != c:
            raise op_error("batch_norm", f"{label} must have C = x.shape[1] elements",
                           x_shape=x.shape, **{f"{label}_shape": t.shape})
    return BatchNorm.apply(x, weight, bias, running_mean=running_mean, running_var=running_var,
                           training=bool(training), momentum=momentum, eps=eps)


# --------------------------------------------------------------------------- layer / group norm
class _GroupedNorm(Function):
    """Normalise ``x`` reshaped to ``gshape`` over ``axes``; affine parameters of ``pshape``."""

    def forward(self, x, weight, bias, gshape, axes, pshape, eps):
        check_floating(self.name, x)
        xf = to_dtype(x, acc_dtype(x.dtype)).reshape(gshape)
        mean, _, invstd = _stats(xf, axes, eps)
        y = ((xf - mean) * invstd).reshape(x.shape)
        if weight is not None:
            y *= weight.astype(y.dtype).reshape(pshape)
        if bias is not None:
            y += bias.astype(y.dtype).reshape(pshape)
        self.gshape, self.axes, self.pshape = gshape, axes, pshape
        self.save_for_backward(x, weight, mean, invstd)
        return to_dtype(y, x.dtype)

    def backward(self, gy):
        x, w, mean, invstd = [t._data if isinstance(t, Tensor) else t for t in self.saved_tensors]
        b = self.inputs[2]
        return run_array_backward(
            GroupedNormBackward, (gy,), self, x=x, w=w,
            b=b._data if isinstance(b, Tensor) else None, mean=mean, invstd=invstd,
            gshape=self.gshape, axes=self.axes, pshape=self.pshape, name=self.name)


class GroupedNormBackward(ArrayBackward):
    name = "norm_backward"

    def compute(self, gy, needs, x, w, b, mean, invstd, gshape, axes, pshape, name):
        self.name = name + "_backward"
        gyf = to_dtype(gy, invstd.dtype)
        xhat = ((to_dtype(x, invstd.dtype).reshape(gshape) - mean) * invstd
                ).reshape(x.shape)
        out = []
        if needs[0]:
            gxhat = gyf if w is None else gyf * w.astype(gyf.dtype).reshape(pshape)
            gx = _normalize_grad(gxhat.reshape(gshape), xhat.reshape(gshape), invstd, axes)
            out.append(to_dtype(gx.reshape(x.shape), x.dtype))
        param_axes = tuple(i for i, s in enumerate(pshape) if s == 1)
        out += _affine_grads(gyf, xhat, w, b, param_axes, needs[1], needs[2])
        return tuple(out)


class LayerNormFunction(_GroupedNorm):
    name = "layer_norm"


class GroupNormFunction(_GroupedNorm):
    name = "group_norm"


def layer_norm(x: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Layer normalization over the trailing ``normalized_shape`` dimensions.

    Args:
        x: input of shape (*, *normalized_shape); statistics are computed in float32.
        normalized_shape: an int or tuple, the trailing dims to normalise over.
        weight, bias: optional affine parameters of shape ``normalized_shape``.
        eps: added to the variance.

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or k > x.ndim or tuple(x.shape[x.ndim - k:]) != ns:
        raise op_error("layer_norm", "normalized_shape must equal the trailing dims of x",
                       x_shape=x.shape, normalized_shape=ns)
    for label, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise op_error("layer_norm", f"{label} must have shape normalized_shape",
                           normalized_shape=ns, **{f"{label}_shape": t.shape})
    axes = tuple(range(x.ndim - k, x.ndim))
    pshape = (1,) * (x.ndim - k) + ns
    return LayerNormFunction.apply(x, weight, bias, gshape=x.shape, axes=axes, pshape=pshape,
                                   eps=eps)


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Group normalization of (N, C, *) input: channels split into ``num_groups`` groups.

    Args:
        x: input of shape (N, C, *); C must be divisible by ``num_groups``.
        num_groups: number of channel groups, each normalised with its own statistics.
        weight, bias: optional per-channel (C,) affine parameters.
        eps: added to the variance.

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    if x.ndim < 2 or x.shape[1] % num_groups:
        raise op_error("group_norm", "expects (N, C, *) input with C divisible by num_groups",
                       x_shape=x.shape, num_groups=num_groups)
    c = x.shape[1]
    for label, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.size != c:
            raise op_error("group_norm", f"{label} must have C = x.shape[1] elements",
                           x_shape=x.shape, **{f"{label}_shape": t.shape})
    # Sizes given, not -1: NumPy cannot infer -1 beside a 0 (an empty batch).
    gshape = (x.shape[0], num_groups, c // num_groups * math.prod(x.shape[2:]))
    pshape = (1, c) + (1,) * (x.ndim - 2)
    return GroupNormFunction.apply(x, weight, bias, gshape=gshape, axes=(2,), pshape=pshape,
                                   eps=eps)


# --------------------------------------------------------------------------- renorm
def _renorm_impl(x, p, axis, maxnorm):
    others = tuple(i for i in range(x.ndim) if i != axis)
    n = norm(x, ord=p, axis=others, keepdims=True)
    # PyTorch's formula: slices above maxnorm are scaled by maxnorm / (norm + 1e-7); the
    # others (a NaN norm too) are kept as they are, and so is their gradient: their norm is
    # taken of zeros (a NaN norm's gradient, 0 * NaN, would leak into them otherwise).
    big = const(n._data > maxnorm)
    n = norm(where(big, x, 0.0), ord=p, axis=others, keepdims=True)
    scale = where(big, maxnorm / (n + 1e-7), 1.0)
    return x * scale


_Renorm = composite("renorm", _renorm_impl)


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Rescale each slice ``input.select(dim, i)`` whose p-norm exceeds ``maxnorm`` to norm
    ``maxnorm`` (slices under it are unchanged)."""
    p = norm_order("renorm", p)
    if maxnorm < 0:
        raise op_error("renorm", "maxnorm must be non-negative", maxnorm=maxnorm)
    axis = normalize_axis(dim, input.ndim, "renorm")
    return _Renorm.apply(input, kw={"p": p, "axis": axis, "maxnorm": float(maxnorm)})


# --------------------------------------------------------------------------- normalize
def _normalize_impl(x, p, axis, eps):
    # PyTorch's formula: x / max(||x||_p, eps), the norm kept as a dim; clip passes the
    # gradient at the bound (clamp_min's), and a zero slice gives zeros, not NaN.
    return x / clip(norm(x, ord=p, axis=axis, keepdims=True), lower=eps)


_Normalize = composite("normalize", _normalize_impl)


def normalize(x: Tensor, p=2.0, axis: int | None = None, eps: float = 1e-12, *,
              dim: int | None = None) -> Tensor:
    """``x / max(||x||_p, eps)`` with the p-norm taken along ``axis`` (default 1, as
    ``F.normalize``; ``dim`` is PyTorch's spelling): every slice along ``axis`` gets unit
    p-norm. Floating input only; a float32 row of the AMP policy as a whole."""
    axis = one_of("normalize", axis, dim)
    check_floating("normalize", x)
    p = norm_order("normalize", p)
    axis = normalize_axis(1 if axis is None else axis, x.ndim, "normalize")
    return _Normalize.apply(x, kw={"p": p, "axis": axis, "eps": float(eps)})


# --------------------------------------------------------------------------- instance norm
class InstanceNormFunction(_GroupedNorm):
    """Per-sample, per-channel statistics: a group norm with one channel per group; the
    running statistics (when given) take the mean over the batch of each sample's
    statistics, as PyTorch's."""

    name = "instance_norm"

    def forward(self, x, weight, bias, gshape, axes, pshape, eps, running_mean=None,
                running_var=None, momentum=0.1):
        y = super().forward(x, weight, bias, gshape, axes, pshape, eps)
        if (running_mean is not None or running_var is not None) and x.size:
            mean, var = BN.moments(x.reshape(gshape), (2,))
            n = gshape[2]
            for running, stat, corr in ((running_mean, mean.mean(0), 1.0),
                                        (running_var, var.mean(0), n / (n - 1))):
                if running is not None:  # in place, with a version bump (a layer's buffers)
                    BN.running_update(running._data, stat, momentum, corr)
                    running._set_data_(running._data)
        return y


def _instance_eval_impl(x, running_mean, running_var, weight, bias, eps):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - running_mean.reshape(shape)) / sqrt(running_var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y.astype(x.dtype)


# the running statistics normalise (use_input_stats=False): still the instance_norm row
_InstanceNormEval = composite("instance_norm", _instance_eval_impl)


def instance_norm(x: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Instance normalization of ``(N, C, *)`` input (``F.instance_norm``): each sample's
    channel is normalised over its spatial positions (biased variance, float32 statistics).

    Args:
        x: ``(N, C, *)`` with more than one spatial element.
        running_mean, running_var: optional (C,) buffers, updated in place with the batch mean
            of the per-instance statistics (unbiased variance) when ``use_input_stats``.
        weight, bias: optional (C,) affine parameters.
        use_input_stats: False normalises with the running statistics instead.
        momentum: running-statistics update factor.
        eps: added to the variance.

    Returns:
        A Tensor of ``x``'s shape and dtype.
    """
    check_floating("instance_norm", x)
    c = x.shape[1] if x.ndim >= 2 else None
    for label, t in (("running_mean", running_mean), ("running_var", running_var),
                     ("weight", weight), ("bias", bias)):
        if t is not None and t.size != c:
            raise op_error("instance_norm", f"{label} must have C = x.shape[1] elements",
                           x_shape=x.shape, **{f"{label}_shape": t.shape})
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise op_error("instance_norm", "use_input_stats=False needs running_mean and "
                           "running_var", x_shape=x.shape)
        return _InstanceNormEval.apply(x, running_mean, running_var, weight, bias,
                                       kw={"eps": eps})
    spatial = math.prod(x.shape[2:])
    if x.ndim < 3 or spatial <= 1:
        raise op_error("instance_norm", "expects (N, C, *) input with more than one spatial "
                       "element when using input statistics", x_shape=x.shape)
    gshape = (x.shape[0], c, spatial)
    pshape = (1, c) + (1,) * (x.ndim - 2)
    return InstanceNormFunction.apply(x, weight, bias, gshape=gshape, axes=(2,), pshape=pshape,
                                      eps=eps, running_mean=running_mean,
                                      running_var=running_var, momentum=momentum)


# --------------------------------------------------------------------------- local response norm
def _lrn_impl(x, size, alpha, beta, k):
    c = x.shape[1]
    xf = x.astype(acc_dtype(x.dtype))  # float16/bfloat16: the sums of squares in float32
    sq = xf * xf
    # the channel window [c - size//2, c + (size-1)//2], zeros beyond the ends (PyTorch's)
    padded = pad(sq, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    window = padded[:, 0:c]
    for j in range(1, size):
        window = window + padded[:, j:j + c]
    return (xf / (window * (alpha / size) + k) ** beta).astype(x.dtype)


_LocalResponseNorm = composite("local_response_norm", _lrn_impl)


def local_response_norm(x: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Local response normalization across channels (``F.local_response_norm``, AlexNet's):
    ``x / (k + alpha / size * sum of x**2 over the size neighbouring channels) ** beta``.

    Args:
        x: floating ``(N, C, *)`` with at least one dimension after C (computed in float32
            for float16/bfloat16, returned in its dtype).
        size: the number of channels summed (the window is centred, zeros beyond the ends).
    """
    check_floating("local_response_norm", x)  # PyTorch truncates int64 averages
    if x.ndim < 3:
        raise op_error("local_response_norm", "expects (N, C, *) input with at least 3 "
                       "dimensions", shape=x.shape)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise op_error("local_response_norm", "size must be a positive int", size=size)
    return _LocalResponseNorm.apply(x, kw={"size": size, "alpha": float(alpha),
                                           "beta": float(beta), "k": float(k)})


def _rms_norm_impl(x, weight, axes, eps):
    xf = x.astype(float32) if is_low_precision(x.dtype) else x
    ms = mean(xf * xf, axis=axes, keepdims=True)
    y = (xf * rsqrt(ms + eps)).astype(x.dtype)
    return y if weight is None else y * weight


_RMSNorm = composite("rms_norm", _rms_norm_impl)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
             eps: float | None = None) -> Tensor:
    """Root-mean-square normalization over the trailing ``normalized_shape`` dimensions:
    ``x / sqrt(mean(x**2) + eps) * weight``, the mean taken in float32 for float16/bfloat16
    input. ``eps`` None is the machine epsilon of that computation dtype (PyTorch's)."""
    check_floating("rms_norm", input)
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k > input.ndim or tuple(input.shape[input.ndim - k:]) != ns:
        raise op_error("rms_norm", "normalized_shape must equal the trailing dims of input",
                       input_shape=input.shape, normalized_shape=ns)
    if weight is not None and tuple(weight.shape) != ns:
        raise op_error("rms_norm", "weight must have shape normalized_shape",
                       normalized_shape=ns, weight_shape=weight.shape)
    if eps is None:
        eps = float(np.finfo(float32 if is_low_precision(input.dtype) else input.dtype).eps)
    axes = tuple(range(input.ndim - k, input.ndim))
    return _RMSNorm.apply(input, weight, kw={"axes": axes, "eps": eps})
