"""Batch normalization's array kernels: a few fused passes instead of ~45 small ones.

Composed from array ops, one training BatchNorm makes about 30 launches forward and 15 backward,
most of them full-size float32 passes over the activation (a float16 input is widened first).
Here the forward is the mean (a reduction over the input in its own dtype), the centred values
and their mean square (the two-pass variance) and one elementwise pass that writes the output;
the backward is the centred values, two reductions and one elementwise pass. Per-channel
arithmetic (C values) is done on the small arrays. Every function has the same arithmetic on
NumPy (the CPU path, and the twin that the CPU tests check the kernels' formulas against); the
statistics are float32 (float64 for float64 input) whatever the input dtype (invariant 3).
On the CPU the full-size casts go through ``casts.to_dtype`` (float16/bfloat16 <-> float32 in
``lowp_cpu``'s vectorised kernels, bit-identical to ``astype``, which converts float16 one
element at a time); the per-channel ones stay ``astype``.

Shapes: ``x`` is (N, C, *); statistics and parameters broadcast as ``pshape = (1, C, 1, ...)``.
"""

from __future__ import annotations

import numpy as np

from . import casts, cupy
from .dtypes import acc_dtype
from .fused import use_fused

__all__ = ["moments", "scale_shift", "running_update", "affine_apply", "backward_sums",
           "grad_input"]

_kernels: dict = {}


# name -> (kind, inputs, output, map or elementwise expression); {A} is the accumulation type
_SOURCES = {
    "mean": ("reduce", "T x", "{A} s", "({A})x", "s = a / ({A})(_in_ind.size() / _out_ind.size())"),
    "sum": ("reduce", "T x", "{A} s", "({A})x", "s = a"),
    # A per-channel operand broadcast into a reduction makes CuPy's reduction ~50x slower
    # (seen on an H200), so the centred values are made by an elementwise pass first.
    "centre": ("map", "T x, {A} m", "{A} d", "d = ({A})x - m"),
    "sq_mean": ("reduce", "{A} d", "{A} s", "d * d",
                "s = a / ({A})(_in_ind.size() / _out_ind.size())"),
    "dot": ("reduce", "G gy, {A} d", "{A} s", "({A})gy * d", "s = a"),
    "affine": ("map", "T x, {A} scale, {A} shift", "T y", "y = (T)(({A})x * scale + shift)"),
    "scale_shift": ("map", "{A} mean, {A} var, {A} w, {A} b, {A} eps",
                    "{A} invstd, {A} scale, {A} shift",
                    "invstd = 1.0 / sqrt(var + eps); scale = invstd * w; "
                    "shift = -mean * scale + b"),
    "running": ("map", "{A} stat, {A} keep, {A} corr_m", "R r",
                "r = (R)(r * keep + stat * corr_m)"),
    "grad_input": ("map", "G gy, T x, {A} mean, {A} k, {A} a, {A} b", "T gx",
                   "gx = (T)(k * (({A})gy - a - (({A})x - mean) * b))"),
}


def _kernel(name, acc):
    key = (name, acc.name)
    k = _kernels.get(key)
    if k is None:
        kind, ins, out, *body = _SOURCES[name]
        c = "double" if acc == np.float64 else "float"
        ins, out = ins.replace("{A}", acc.name), out.replace("{A}", acc.name)
        body = [b.replace("{A}", c) for b in body]
        if kind == "reduce":
            k = cupy.ReductionKernel(ins, out, body[0], "a + b", body[1], "0",
                                     f"minigrad_bn_{name}", reduce_type=c)
        else:
            k = cupy.ElementwiseKernel(ins, out, body[0], f"minigrad_bn_{name}")
        _kernels[key] = k
    return k


def moments(x, axes):
    """``(mean, var)`` over ``axes`` (kept as size-1 dims), in the accumulation dtype; ``var``
    is the biased two-pass variance ``mean((x - mean)^2)``."""
    acc = acc_dtype(x.dtype)
    if use_fused(x):
        mean = _kernel("mean", acc)(x, axis=axes, keepdims=True)
        centred = _kernel("centre", acc)(x, mean)
        return mean, _kernel("sq_mean", acc)(centred, axis=axes, keepdims=True)
    xf = casts.to_dtype(x, acc)
    mean = xf.mean(axis=axes, keepdims=True)
    centred = xf - mean
    return mean, (centred * centred).mean(axis=axes, keepdims=True)


def scale_shift(mean, var, eps, weight=None, bias=None):
    """Per-channel ``(invstd, scale, shift)``: ``invstd = 1 / sqrt(var + eps)``, ``scale =
    invstd * weight`` and ``shift = bias - mean * scale`` (weight 1 and bias 0 when None)."""
    acc = mean.dtype
    if use_fused(mean) and weight is not None and bias is not None:  # one launch for all three
        return _kernel("scale_shift", acc)(mean, var, weight.astype(acc, copy=False).reshape(
            mean.shape), bias.astype(acc, copy=False).reshape(mean.shape), acc.type(eps))
    xp = cupy if use_fused(mean) else np
    invstd = 1.0 / xp.sqrt(var + eps)
    scale = invstd if weight is None else invstd * weight.astype(acc).reshape(mean.shape)
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias.astype(acc).reshape(mean.shape)
    return invstd, scale, shift


def running_update(running, stat, momentum, correction=1.0):
    """``running = running * (1 - momentum) + stat * correction * momentum`` in place (the
    running-statistics update; ``correction`` turns a biased variance unbiased)."""
    stat = stat.reshape(running.shape)
    if use_fused(running):
        acc = stat.dtype
        _kernel("running", acc)(stat, acc.type(1.0 - momentum), acc.type(correction * momentum),
                                running)
        return
    new = running * (1.0 - momentum) + (stat * correction if correction != 1.0 else stat) * momentum
    running[...] = new.astype(running.dtype, copy=False)


def affine_apply(x, scale, shift):
    """``x * scale + shift`` computed in ``scale``'s dtype and rounded once to ``x``'s."""
    if use_fused(x):
        return _kernel("affine", scale.dtype)(x, scale, shift)
    return casts.to_dtype(casts.to_dtype(x, scale.dtype) * scale + shift, x.dtype)


def backward_sums(gy, x, mean, axes):
    """``(sum(gy), sum(gy * (x - mean)))`` over ``axes`` (kept), in ``mean``'s dtype."""
    if use_fused(x):
        centred = _kernel("centre", mean.dtype)(x, mean)
        return (_kernel("sum", mean.dtype)(gy, axis=axes, keepdims=True),
                _kernel("dot", mean.dtype)(gy, centred, axis=axes, keepdims=True))
    gyf = casts.to_dtype(gy, mean.dtype)
    return (gyf.sum(axis=axes, keepdims=True),
            (gyf * (casts.to_dtype(x, mean.dtype) - mean)).sum(axis=axes, keepdims=True))


def grad_input(gy, x, mean, k, a, b):
    """``k * (gy - a - (x - mean) * b)`` in ``mean``'s dtype, rounded once to ``x``'s dtype
    (per-channel ``k, a, b`` broadcast like ``mean``)."""
    if use_fused(x):
        return _kernel("grad_input", mean.dtype)(gy, x, mean, k, a, b)
    acc = mean.dtype
    gx = k * (casts.to_dtype(gy, acc) - a - (casts.to_dtype(x, acc) - mean) * b)
    return casts.to_dtype(np.asarray(gx), x.dtype)
