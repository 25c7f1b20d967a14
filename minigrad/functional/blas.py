"""BLAS-style products: mm, mv, addmm, addmv, addr, addbmm, baddbmm, chain_matmul,
linalg_multi_dot, vdot, tensordot, bilinear.

``mm``/``mv``/``vdot`` are the primitives ``matmul``/``dot`` under their own names (their own
policy rows). The fused forms (``beta * input + alpha * product``) are composites (see
``_composite``): one row each, so under autocast the whole expression runs in the low-precision
dtype and every product in it goes through ``_backend.kernels.matmul`` (float32 accumulation,
invariant 4).
"""

from __future__ import annotations

import math

from ..core.tensor import Tensor
from ._composite import composite
from ._utils import normalize_axis, op_error
from .linalg import Dot, MatMul, einsum, matmul

__all__ = [
    "addbmm", "addmm", "addmv", "addr", "baddbmm", "bilinear", "chain_matmul",
    "linalg_multi_dot", "mm", "multi_dot", "mv", "tensordot", "vdot",
]


class Mm(MatMul):
    name = "mm"


class Mv(MatMul):
    name = "mv"


class Vdot(Dot):
    name = "vdot"


def _shape(t):
    return tuple(getattr(t, "shape", ()))


def _need(op, cond, msg, **shapes):
    if not cond:
        raise op_error(op, msg, **{k: _shape(v) for k, v in shapes.items()})


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Matrix product of two 2-D tensors ``(n, m) @ (m, p)`` (no broadcasting)."""
    _need("mm", input.ndim == 2 and mat2.ndim == 2 and input.shape[1] == mat2.shape[0],
          "expected input (n, m) and mat2 (m, p); use matmul for other ranks",
          input=input, mat2=mat2)
    return Mm.apply(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product ``(n, m) @ (m,) -> (n,)``."""
    _need("mv", input.ndim == 2 and vec.ndim == 1 and input.shape[1] == vec.shape[0],
          "expected input (n, m) and vec (m,)", input=input, vec=vec)
    return Mv.apply(input, vec)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """Dot product of two 1-D tensors (real dtypes: the same as ``dot``)."""
    _need("vdot", input.ndim == 1 and other.ndim == 1 and input.shape == other.shape,
          "expected two 1-D tensors of the same length", input=input, other=other)
    return Vdot.apply(input, other)


def _axpby(input, prod, beta, alpha):
    """``beta * input + alpha * prod``; beta == 0 ignores input (NaN in it does not leak)."""
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return prod + (input if beta == 1 else input * beta)


def _addbmm_impl(input, b1, b2, beta, alpha):
    # sum_b b1[b] @ b2[b] is ONE (n, B*m) @ (B*m, p) GEMM: float32 accumulation over the batch
    # too, and the 2-D shape is the fast low-precision path.
    nb, n, m = b1.shape
    a = b1.permute((1, 0, 2)).reshape((n, nb * m))
    return _axpby(input, matmul(a, b2.reshape((nb * m, b2.shape[2]))), beta, alpha)


_AddMm = composite("addmm", lambda input, a, b, beta, alpha: _axpby(input, matmul(a, b), beta,
                                                                      alpha))
_AddMv = composite("addmv", lambda input, a, v, beta, alpha: _axpby(input, matmul(a, v), beta,
                                                                      alpha))
def _outer(u, v):
    u, v = u.reshape((-1, 1)), v.reshape((1, -1))
    # bools have no product (matmul refuses them) but an outer "and", which PyTorch's addr gives
    return u * v if u.dtype.kind == "b" and v.dtype.kind == "b" else matmul(u, v)


_AddR = composite("addr", lambda input, u, v, beta, alpha: _axpby(input, _outer(u, v), beta,
                                                                    alpha))
_BAddBmm = composite("baddbmm", lambda input, a, b, beta, alpha: _axpby(
    input, matmul(a, b), beta, alpha))
_AddBmm = composite("addbmm", _addbmm_impl)


def _fused(cls, op, input, a, b, out_shape, beta, alpha):
    from .shape import broadcast_to

    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    try:
        if input.shape != out_shape:
            input = broadcast_to(input, out_shape)
    except ValueError:
        raise op_error(op, f"input does not broadcast to the product's shape {out_shape}",
                       input=input.shape, a=a.shape, b=b.shape) from None
    return cls.apply(input, a, b, kw={"beta": beta, "alpha": alpha})


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for 2-D ``mat1 (n, m)``, ``mat2 (m, p)``.

    ``input`` broadcasts to ``(n, p)``; with ``beta=0`` it is ignored (NaN/inf in it do not
    propagate), as in PyTorch.
    """
    _need("addmm", mat1.ndim == 2 and mat2.ndim == 2 and mat1.shape[1] == mat2.shape[0],
          "expected mat1 (n, m) and mat2 (m, p)", mat1=mat1, mat2=mat2)
    return _fused(_AddMm, "addmm", input, mat1, mat2, (mat1.shape[0], mat2.shape[1]), beta,
                  alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` for ``mat (n, m)``, ``vec (m,)``."""
    _need("addmv", mat.ndim == 2 and vec.ndim == 1 and mat.shape[1] == vec.shape[0],
          "expected mat (n, m) and vec (m,)", mat=mat, vec=vec)
    return _fused(_AddMv, "addmv", input, mat, vec, (mat.shape[0],), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)`` for 1-D ``vec1 (n,)``, ``vec2 (m,)``."""
    _need("addr", vec1.ndim == 1 and vec2.ndim == 1, "expected two 1-D vectors",
          vec1=vec1, vec2=vec2)
    return _fused(_AddR, "addr", input, vec1, vec2, (vec1.shape[0], vec2.shape[0]), beta,
                  alpha)


def _check_batches(op, b1, b2):
    _need(op, b1.ndim == 3 and b2.ndim == 3 and b1.shape[0] == b2.shape[0]
          and b1.shape[2] == b2.shape[1],
          "expected batch1 (B, n, m) and batch2 (B, m, p)", batch1=b1, batch2=b2)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``; ``input`` broadcasts to (B, n, p)."""
    _check_batches("baddbmm", batch1, batch2)
    return _fused(_BAddBmm, "baddbmm", input, batch1, batch2,
                  (batch1.shape[0], batch1.shape[1], batch2.shape[2]), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``; ``input`` broadcasts to (n, p).
    """
    _check_batches("addbmm", batch1, batch2)
    return _fused(_AddBmm, "addbmm", input, batch1, batch2,
                  (batch1.shape[1], batch2.shape[2]), beta, alpha)


def _order(dims):
    """Optimal parenthesisation of a matrix chain (classic O(n^3) dynamic programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _multi_dot_impl(*mats, first_vec, last_vec):
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    split = _order(dims)

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return matmul(product(i, k), product(k + 1, j))

    out = product(0, len(mats) - 1)
    if first_vec:
        out = out.reshape(out.shape[1:])
    if last_vec:
        out = out.reshape(out.shape[:-1])
    return out


_MultiDot = composite("linalg_multi_dot", _multi_dot_impl)
_ChainMatmul = composite("chain_matmul", _multi_dot_impl)


def _chain(cls, op, tensors, allow_vectors):
    tensors = list(tensors)
    if not tensors:
        raise op_error(op, "expected at least one tensor")
    if len(tensors) == 1:
        _need(op, tensors[0].ndim == 2, "a single operand must be 2-D", input=tensors[0])
        return cls.apply(tensors[0], kw={"first_vec": False, "last_vec": False})
    first_vec = allow_vectors and tensors[0].ndim == 1
    last_vec = allow_vectors and tensors[-1].ndim == 1
    if first_vec:
        tensors[0] = tensors[0].reshape((1, -1))
    if last_vec:
        tensors[-1] = tensors[-1].reshape((-1, 1))
    for i, t in enumerate(tensors):
        if t.ndim != 2:
            hint = ("only the first and last may be 1-D" if allow_vectors
                    else "every operand must be 2-D")
            raise op_error(op, f"operand {i} is {t.ndim}-D; {hint}", shape=t.shape)
        if i and tensors[i - 1].shape[1] != t.shape[0]:
            raise op_error(op, f"operands {i - 1} and {i} cannot be multiplied",
                           left=tensors[i - 1].shape, right=t.shape)
    return cls.apply(*tensors, kw={"first_vec": first_vec, "last_vec": last_vec})


def linalg_multi_dot(tensors) -> Tensor:
    """Product of a list of matrices in the cheapest order; the first/last may be 1-D vectors.
    """
    return _chain(_MultiDot, "linalg_multi_dot", tensors, True)


multi_dot = linalg_multi_dot  # torch.linalg.multi_dot spelling


def chain_matmul(*matrices) -> Tensor:
    """Product of 2-D matrices in the cheapest order (``torch.chain_matmul``)."""
    return _chain(_ChainMatmul, "chain_matmul", matrices, False)


def _tensordot_impl(a, b, axes_a, axes_b):
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]
    k = math.prod(a.shape[i] for i in axes_a)
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    a2 = a.permute(tuple(free_a) + tuple(axes_a)).reshape((-1, k))
    b2 = b.permute(tuple(axes_b) + tuple(free_b)).reshape((k, -1))
    return matmul(a2, b2).reshape(out_shape)


_TensorDot = composite("tensordot", _tensordot_impl)


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Contract ``a`` and ``b`` over axes (one GEMM after permuting and reshaping).

    Args:
        a, b: input tensors.
        dims: an int n (the last n axes of ``a`` with the first n of ``b``), or a pair of
            axis lists ``([a axes], [b axes])``. ``axes`` is accepted as a synonym (NumPy).
    """
    if isinstance(dims, int):
        _need("tensordot", 0 <= dims <= min(a.ndim, b.ndim), f"dims={dims} out of range",
              a=a, b=b)
        axes_a = list(range(a.ndim - dims, a.ndim))
        axes_b = list(range(dims))
    else:
        axes_a, axes_b = ([d] if isinstance(d, int) else list(d) for d in dims)
        # out-of-range axes raise (PyTorch's "Dimension out of range"), they never wrap around
        _need("tensordot", (a.ndim or not axes_a) and (b.ndim or not axes_b),
              "a 0-d tensor has no axis to contract", a=a, b=b)
        axes_a = [normalize_axis(d, a.ndim, "tensordot") for d in axes_a]
        axes_b = [normalize_axis(d, b.ndim, "tensordot") for d in axes_b]
    if len(axes_a) != len(axes_b) or any(a.shape[i] != b.shape[j]
                                         for i, j in zip(axes_a, axes_b)):
        raise op_error("tensordot", "contracted axes must pair up with equal sizes",
                       a=a.shape, b=b.shape, dims=(axes_a, axes_b))
    return _TensorDot.apply(a, b, kw={"axes_a": tuple(axes_a), "axes_b": tuple(axes_b)})


def _bilinear_impl(x1, x2, weight, bias):
    y = einsum("...i,oij,...j->...o", x1, weight, x2)
    return y if bias is None else y + bias


_Bilinear = composite("bilinear", _bilinear_impl)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """``y[..., o] = input1 @ weight[o] @ input2 + bias[o]``.

    Args:
        input1: ``(..., in1)``; input2: ``(..., in2)`` with the same leading dims.
        weight: ``(out, in1, in2)``; bias: optional ``(out,)``.
    """
    _need("bilinear", weight.ndim == 3 and input1.ndim >= 1 and input2.ndim >= 1
          and input1.shape[-1] == weight.shape[1]
          and input2.shape[-1] == weight.shape[2] and input1.shape[:-1] == input2.shape[:-1]
          and (bias is None or bias.shape == (weight.shape[0],)),
          "expected input1 (..., in1), input2 (..., in2), weight (out, in1, in2), bias (out,)",
          input1=input1, input2=input2, weight=weight, bias=bias)
    return _Bilinear.apply(input1, input2, weight, bias, kw={})
