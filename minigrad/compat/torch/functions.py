"""PyTorch's top-level functions (``torch.cat``, ``torch.sum(x, dim=1, keepdim=True)``,
``torch.long``, ``torch.device``, ...), attached to ``minigrad`` by ``compat.torch``.

Each is minigrad's own op (the same function where the signatures agree) or a thin wrapper that
takes PyTorch's argument names: ``dim``/``keepdim`` (NumPy's ``axis``/``keepdims`` are accepted
too, as PyTorch does; both at once raise), ``start_dim``/``end_dim``, ``min``/``max``. Where a
name means something else in another peer, the PyTorch meaning lives here and the other under
its own path: ``mg.split(x, 2)`` cuts pieces of size 2 (PyTorch), ``F.split(x, 2)`` two equal
parts (MegEngine).

Names that shadow Python builtins (``sum``, ``abs``, ``all``, ``any``, ``pow``, ``float``,
``int``, ``bool``) are attributes of ``minigrad`` but not in its ``__all__``, so
``from minigrad import *`` never replaces a builtin.
"""

from __future__ import annotations

import functools

import numpy as np

from ... import functional as F
from ..._backend import random as _random
from ..._backend.dtypes import (
    bfloat16, bool_, float16, float32, float64, get_default_dtype, is_floating, set_default_dtype,
)
from ...core import creation as _creation
from ...core.device import Device
from ...core.grad_mode import set_grad_enabled
from ...core.modes import grad_enabled
from ...core.size import Size
from ...core.tensor import Tensor
from ...functional import reduction as _reduction
from ...functional import sorting as _sorting
from ...functional._axes import one_of
from ...functional._tensor_methods_torch import torch_chunk, torch_split

__all__ = ["BUILTIN_SHADOWS", "EXPORTED", "NAMES"]


def _dim(op, dim, axis):
    return one_of(op, dim, axis, ("dim", "axis"))


def _keep(op, keepdim, keepdims):
    return bool(one_of(op, keepdim, keepdims, ("keepdim", "keepdims")))


# ---------------------------------------------------------------------------- reductions
def sum(input, dim=None, keepdim=None, *, dtype=None, axis=None, keepdims=None):  # noqa: A001
    """``torch.sum(input, dim=None, keepdim=False, dtype=None)``."""
    x = input if dtype is None else input.astype(dtype)
    return F.sum(x, _dim("sum", dim, axis), _keep("sum", keepdim, keepdims))


def mean(input, dim=None, keepdim=None, *, dtype=None, axis=None, keepdims=None):
    """``torch.mean(input, dim=None, keepdim=False, dtype=None)``."""
    x = input if dtype is None else input.astype(dtype)
    return F.mean(x, _dim("mean", dim, axis), _keep("mean", keepdim, keepdims))


def prod(input, dim=None, keepdim=None, *, axis=None, keepdims=None):
    return F.prod(input, _dim("prod", dim, axis), _keep("prod", keepdim, keepdims))


def argmax(input, dim=None, keepdim=None, *, axis=None, keepdims=None):
    return F.argmax(input, _dim("argmax", dim, axis), _keep("argmax", keepdim, keepdims))


def argmin(input, dim=None, keepdim=None, *, axis=None, keepdims=None):
    return F.argmin(input, _dim("argmin", dim, axis), _keep("argmin", keepdim, keepdims))


def logsumexp(input, dim, keepdim=None, *, axis=None, keepdims=None):
    return F.logsumexp(input, _dim("logsumexp", dim, axis),
                       _keep("logsumexp", keepdim, keepdims))


def all(input, dim=None, keepdim=False):  # noqa: A001
    return input.all(dim, keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001
    return input.any(dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """``torch.norm``: the elementwise p-norm over ``dim`` (all elements for None)."""
    x = input if dtype is None else input.astype(dtype)
    return F.norm(x, 2 if p in ("fro", None) else p, dim, keepdim)


def cumsum(input, dim, *, dtype=None):
    x = input if dtype is None else input.astype(dtype)
    return F.cumsum(x, dim)


def softmax(input, dim, dtype=None):
    return F.softmax(input, dim=dim, dtype=dtype)


def log_softmax(input, dim, dtype=None):
    return F.log_softmax(input, dim=dim, dtype=dtype)


# ---------------------------------------------------------------------------- shape
def cat(tensors, dim=None, *, axis=None):
    """``torch.cat(tensors, dim=0)`` (also ``torch.concat``/``concatenate``)."""
    dim = _dim("cat", dim, axis)
    return F.concat(list(tensors), 0 if dim is None else dim)


def stack(tensors, dim=None, *, axis=None):
    """``torch.stack(tensors, dim=0)``."""
    dim = _dim("stack", dim, axis)
    return F.stack(list(tensors), 0 if dim is None else dim)


def flatten(input, start_dim=0, end_dim=-1):
    return F.flatten(input, start_dim, end_dim)


def squeeze(input, dim=None):
    return input.squeeze(dim)  # PyTorch's: a named axis of another size stays


def unsqueeze(input, dim):
    return F.expand_dims(input, dim)


def transpose(input, dim0, dim1):
    """``torch.transpose``: swap two dimensions (``F.transpose`` permutes all of them)."""
    return F.swapaxes(input, dim0, dim1)


swapaxes = swapdims = transpose


def permute(input, dims):
    return F.permute(input, tuple(dims))


def reshape(input, shape):
    return F.reshape(input, tuple(shape))


def t(input):
    return input.t()


def narrow(input, dim, start, length):
    return input.narrow(dim, start, length)


def chunk(input, chunks, dim=0):
    return torch_chunk(input, chunks, dim)


def split(tensor, split_size_or_sections, dim=0):
    return torch_split(tensor, split_size_or_sections, dim)


def gather(input, dim, index):
    return F.gather(input, dim, index)


def index_select(input, dim, index):
    return F.index_select(input, dim, index)


def masked_fill(input, mask, value):
    return input.masked_fill(mask, value)


def _tri(input, diagonal, keep_upper):
    if input.ndim < 2:
        raise ValueError(f"{'triu' if keep_upper else 'tril'}: expects a tensor with >= 2 "
                         f"dimensions, got shape {input.shape}")
    n, m = input.shape[-2:]
    rows, cols = np.arange(n)[:, None], np.arange(m)[None, :]
    keep = cols - rows >= diagonal if keep_upper else cols - rows <= diagonal
    mask = Tensor(keep, device=input.device)
    return F.where(mask, input, 0).astype(input.dtype)


def triu(input, diagonal=0):
    """The upper triangle of the last two dimensions (from ``diagonal`` up); zeros elsewhere."""
    return _tri(input, diagonal, True)


def tril(input, diagonal=0):
    """The lower triangle of the last two dimensions (up to ``diagonal``); zeros elsewhere."""
    return _tri(input, diagonal, False)


def einsum(equation, *operands):
    """``torch.einsum(eq, a, b)`` or ``torch.einsum(eq, [a, b])``."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return F.einsum(equation, *operands)


# ---------------------------------------------------------------------------- elementwise
def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    return F.clip(input, min, max)


def pow(input, exponent):  # noqa: A001
    return F.pow(input, exponent)


def eq(input, other):
    return F.equal(input, other)


def equal(input, other) -> bool:
    """``torch.equal``: True when both have the same shape and the same values (a bool;
    ``mg.eq`` is the elementwise comparison)."""
    return tuple(input.shape) == tuple(other.shape) and bool(
        np.array_equal(np.asarray(input.numpy()), np.asarray(other.numpy())))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """``torch.allclose``: ``|input - other| <= atol + rtol * |other|`` everywhere (a bool)."""
    a, b = (np.asarray(t.numpy() if isinstance(t, Tensor) else t) for t in (input, other))
    if a.dtype == bfloat16 or b.dtype == bfloat16:
        a, b = a.astype(np.float32), b.astype(np.float32)
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = (np.asarray(t.numpy() if isinstance(t, Tensor) else t) for t in (input, other))
    dev = input.device if isinstance(input, Tensor) else "cpu"
    return Tensor(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan), device=dev)


# ---------------------------------------------------------------------------- creation
def _like(input, dtype, device):
    return dict(dtype=dtype or input.dtype, device=device or input.device)


def randn_like(input, *, dtype=None, device=None, requires_grad=False):
    return _creation.randn(*input.shape, **_like(input, dtype, device),
                           requires_grad=requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False):
    return _creation.rand(*input.shape, **_like(input, dtype, device),
                          requires_grad=requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False):
    return _creation.empty(*input.shape, **_like(input, dtype, device),
                           requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None):
    return _creation.randint(low, high, input.shape, **_like(input, dtype, device))


def randperm(n, *, dtype=np.int64, device=None, requires_grad=False):
    """A random permutation of ``0..n-1`` from minigrad's CPU generator (``mg.manual_seed``)."""
    perm = _random.generator("cpu").permutation(int(n))
    return Tensor(perm.astype(dtype), device=device, requires_grad=requires_grad)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input) -> bool:
    return is_floating(input.dtype)


def numel(input) -> int:
    return input.numel()


class inference_mode(set_grad_enabled):  # noqa: N801 - PyTorch's name
    """``torch.inference_mode(mode=True)``: a region (or decorated function) that records no
    graph, minigrad's ``no_grad``; ``mode=False`` leaves the grad mode as it is. Also
    ``@mg.inference_mode`` without parentheses.

    PyTorch additionally marks the outputs as inference tensors that autograd later refuses;
    minigrad's are ordinary tensors that do not require grad.
    """

    _mode = False  # a region, like no_grad: building one switches nothing

    def __new__(cls, mode=True):
        if callable(mode):  # bare decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        super().__init__(False)
        self.inference = bool(mode)

    def __enter__(self):
        if self.inference:
            return super().__enter__()
        self._tokens.append(grad_enabled.set(grad_enabled.get()))
        return self

    def __call__(self, func):
        inference = self.inference

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with inference_mode(inference):
                return func(*args, **kwargs)
        return wrapper


BUILTIN_SHADOWS = ("sum", "abs", "all", "any", "pow", "float", "int", "bool", "max", "min")

def var_mean(input, dim=None, unbiased=None, keepdim=None, *, correction=None):  # noqa: A002
    """``torch.var_mean``: ``(var, mean)``, the variance dividing by ``N - 1`` by default."""
    axis = None if isinstance(dim, bool) else dim
    return (_reduction.torch_var(input, dim, unbiased, keepdim, correction=correction),
            F.mean(input, axis=axis, keepdims=bool(keepdim)))


def std_mean(input, dim=None, unbiased=None, keepdim=None, *, correction=None):  # noqa: A002
    """``torch.std_mean``: ``(std, mean)``, the deviation dividing by ``N - 1`` by default."""
    axis = None if isinstance(dim, bool) else dim
    return (_reduction.torch_std(input, dim, unbiased, keepdim, correction=correction),
            F.mean(input, axis=axis, keepdims=bool(keepdim)))


NAMES = dict(
    # dtypes (PyTorch's short names) and types
    float=float32, double=float64, half=float16, long=np.dtype(np.int64),
    int=np.dtype(np.int32), short=np.dtype(np.int16), bool=bool_, Size=Size, device=Device,
    # ops whose minigrad signature is already PyTorch's
    abs=F.abs, exp=F.exp, log=F.log, log2=F.log2, log10=F.log10, log1p=F.log1p, expm1=F.expm1,
    sin=F.sin, cos=F.cos, tan=F.tan, sinh=F.sinh, cosh=F.cosh, asin=F.asin, acos=F.acos,
    atan2=F.atan2, tanh=F.tanh, sigmoid=F.sigmoid, relu=F.relu, sqrt=F.sqrt, rsqrt=F.rsqrt,
    square=F.square, sign=F.sign, neg=F.neg, negative=F.neg, reciprocal=F.reciprocal, erf=F.erf,
    erfinv=F.erfinv, isnan=F.isnan, isinf=F.isinf, isfinite=F.isfinite, where=F.where,
    maximum=F.maximum, minimum=F.minimum, mm=F.mm, matmul=F.matmul, bmm=F.bmm, mv=F.mv,
    dot=F.dot, addmm=F.addmm, baddbmm=F.baddbmm, tensordot=F.tensordot, cdist=F.cdist,
    cosine_similarity=F.cosine_similarity, cumprod=F.cumprod, ne=F.not_equal, lt=F.less,
    le=F.less_equal, gt=F.greater, ge=F.greater_equal, greater=F.greater, less=F.less,
    greater_equal=F.greater_equal, less_equal=F.less_equal, not_equal=F.not_equal,
    logical_and=F.logical_and, logical_or=F.logical_or, logical_not=F.logical_not,
    broadcast_to=F.broadcast_to, tile=F.tile, repeat_interleave=F.repeat, clone=F.clone,
    # PyTorch's argument names over minigrad's ops
    sum=sum, mean=mean, prod=prod, argmax=argmax, argmin=argmin, logsumexp=logsumexp, all=all,
    any=any, norm=norm, cumsum=cumsum, softmax=softmax, log_softmax=log_softmax, cat=cat,
    concat=cat, concatenate=cat, stack=stack, flatten=flatten, squeeze=squeeze,
    unsqueeze=unsqueeze, transpose=transpose, swapaxes=swapaxes, swapdims=swapdims,
    permute=permute, reshape=reshape, t=t, narrow=narrow, chunk=chunk, split=split,
    gather=gather, index_select=index_select, masked_fill=masked_fill, triu=triu, tril=tril,
    einsum=einsum, clamp=clamp, clip=clamp, pow=pow, eq=eq, equal=equal, allclose=allclose,
    isclose=isclose, randn_like=randn_like, rand_like=rand_like, empty_like=empty_like,
    randint_like=randint_like, randperm=randperm, is_tensor=is_tensor,
    is_floating_point=is_floating_point, numel=numel, get_default_dtype=get_default_dtype,
    set_default_dtype=set_default_dtype,
    inference_mode=inference_mode,
    # PyTorch's meanings where F's are MegEngine's (the Tensor methods share them): max/min
    # along a dim give (values, indices) and max(a, b) is elementwise; std/var divide by N - 1
    max=_sorting.torch_max, min=_sorting.torch_min, sort=_sorting.torch_sort,
    argsort=_sorting.torch_argsort, topk=_sorting.torch_topk, kthvalue=_sorting.torch_kthvalue,
    median=_sorting.torch_median, mode=_sorting.torch_mode, std=_reduction.torch_std,
    var=_reduction.torch_var, var_mean=var_mean, std_mean=std_mean,
    amax=lambda input, dim=(), keepdim=False: input.amax(dim, keepdim),
    amin=lambda input, dim=(), keepdim=False: input.amin(dim, keepdim),
)
# what ``minigrad.__all__`` lists: every name but the builtins' (``from minigrad import *`` must
# not replace sum, int, ...)
EXPORTED = [n for n in NAMES if n not in BUILTIN_SHADOWS]
