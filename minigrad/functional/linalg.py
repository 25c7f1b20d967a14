"""Linear algebra: matmul, bmm, linear, dot, einsum.

Low-precision products follow Tensor Core semantics (invariant 4) through
``_backend.kernels.matmul``: float32 accumulation, result in the input dtype. ``einsum`` has no
GEMM kernel of its own, so float16/bfloat16 operands are upcast to float32 and the result is
rounded once. Every backward is written with these ops, so double backward works (``linear``
runs the same products on arrays when the backward is not recorded).
"""

from __future__ import annotations

import math
import string

from .._backend import get_array_module, kernels
from .._backend.dtypes import float32, int64, is_low_precision, widest_float
from ..core.function import Function
from ..core.tensor import Tensor
from ._utils import (broadcast_shape, const, fast_backward, op_error, refuse_bool_product,
                     sum_to_shape)

__all__ = ["bmm", "dot", "einsum", "linear", "matmul"]


class MatMul(Function):
    name = "matmul"
    promote = "same"  # PyTorch refuses mixed dtypes (outside autocast)

    def forward(self, a, b):
        refuse_bool_product("matmul", a, b)
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError(f"matmul: operands must be at least 1-D, got shapes {a.shape} "
                             f"and {b.shape}; use mul for scalars")
        if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
            raise ValueError(
                f"matmul: inner dimensions differ: a {a.shape} ({a.dtype}) @ b {b.shape} "
                f"({b.dtype}); a.shape[-1] must equal b.shape[-2]")
        self.save_for_backward(a, b)
        try:
            return kernels.matmul(a, b)
        except ValueError:
            if a.ndim > 2 and b.ndim > 2:  # name the batch dimensions, not NumPy's remap
                broadcast_shape(f"matmul (batch dimensions of a {a.shape} and b {b.shape})",
                                a.shape[:-2], b.shape[:-2])
            raise

    def backward(self, gy):
        need_a, need_b = self.needs_input_grad
        a, b = self.saved_tensors_used(need_b, need_a)
        if a.ndim == 1 and b.ndim == 1:  # inner product: gy is 0-d
            return (gy * b if need_a else None), (gy * a if need_b else None)
        # Promote 1-D operands to matrices (and gy with them) so one formula covers every case.
        a2 = a.reshape((1,) + a.shape) if a.ndim == 1 else a
        b2 = b.reshape(b.shape + (1,)) if b.ndim == 1 else b
        g2 = gy
        if a.ndim == 1:
            g2 = g2.reshape(g2.shape[:-1] + (1,) + g2.shape[-1:])
        if b.ndim == 1:
            g2 = g2.reshape(g2.shape + (1,))
        ga = gb = None
        if need_a:
            ga = matmul(g2, b2.swapaxes(-1, -2))
            ga = sum_to_shape(ga, a2.shape).reshape(a.shape)
        if need_b:
            if b2.ndim == 2 and a2.ndim > 2:
                # Weight shared across a batch: fold the batch into one 2-D GEMM instead of a
                # batched product followed by a sum (faster, and 2-D is the fp16 GEMM path).
                k, n = b2.shape
                gb = matmul(a2.reshape((-1, k)).swapaxes(0, 1), g2.reshape((-1, n)))
            else:
                gb = sum_to_shape(matmul(a2.swapaxes(-1, -2), g2), b2.shape)
            gb = gb.reshape(b.shape)
        return ga, gb


class Bmm(Function):
    name = "bmm"
    promote = "same"  # PyTorch refuses mixed dtypes (outside autocast)

    def forward(self, a, b):
        refuse_bool_product("bmm", a, b)
        if a.ndim != 3 or b.ndim != 3:
            raise op_error("bmm", "both operands must be 3-D (batch, rows, cols); use matmul "
                           "for broadcasting or other ranks", a=a.shape, b=b.shape)
        if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
            raise op_error("bmm", "expected a (B, n, m) and b (B, m, p) with equal batch sizes "
                           "and a.shape[2] == b.shape[1]", a=a.shape, b=b.shape)
        self.save_for_backward(a, b)
        return kernels.matmul(a, b)

    def backward(self, gy):
        a, b = self.saved_tensors
        need_a, need_b = self.needs_input_grad
        return (bmm(gy, b.swapaxes(1, 2)) if need_a else None,
                bmm(a.swapaxes(1, 2), gy) if need_b else None)


class Linear(Function):
    name = "linear"
    promote = "same"  # PyTorch refuses mixed dtypes (outside autocast)

    def forward(self, x, weight, bias):
        refuse_bool_product("linear", x, weight, bias)
        if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
            raise op_error("linear", "expected x (..., in_features) and weight (out_features, "
                           "in_features) (PyTorch layout; transpose a (in, out) weight)",
                           x=x.shape, weight=weight.shape)
        out_features = weight.shape[0]
        if bias is not None and bias.shape != (out_features,):
            raise op_error("linear", f"bias must have shape ({out_features},)",
                           bias=bias.shape, weight=weight.shape)
        self.save_for_backward(x, weight)
        lead = x.shape[:-1]
        # Fold every leading dim into the rows of ONE 2-D GEMM: the 2-D shape is what reaches
        # cuBLAS GemmEx for fp16/bf16, and one large BLAS call beats a batch of small ones.
        # fp16/bf16: the bias is added to the float32 accumulator, then rounded once (PyTorch)
        y = kernels.matmul_bias(x.reshape(math.prod(lead), x.shape[-1]), weight.T, bias)
        return y.reshape(lead + (out_features,))

    def backward(self, gy):
        need_x, need_w, need_b = self.needs_input_grad
        x, w = self.saved_tensors_used(need_w, need_x)  # x for dW, w for dX (PyTorch's saves)
        out_features, in_features = w.shape
        rows = math.prod(x.shape[:-1])
        if fast_backward():  # the same three products on arrays, without recording ops
            g2 = gy.data.reshape(rows, out_features)
            return (const(kernels.matmul(g2, w.data).reshape(x.shape)) if need_x else None,
                    const(kernels.matmul(g2.T, x.data.reshape(rows, in_features)))
                    if need_w else None,
                    const(kernels.sum_fp32(g2, axis=0).astype(g2.dtype, copy=False))
                    if need_b else None)
        g2 = gy.reshape((rows, out_features))
        gx = matmul(g2, w).reshape(x.shape) if need_x else None
        gw = matmul(g2.T, x.reshape((rows, in_features))) if need_w else None
        gb = g2.sum(0) if need_b else None
        return gx, gw, gb


class Dot(Function):
    name = "dot"
    promote = "same"  # PyTorch refuses mixed dtypes (outside autocast)

    def forward(self, a, b):
        refuse_bool_product("dot", a, b)
        if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
            raise op_error("dot", "expected two 1-D tensors of the same length; use matmul "
                           "or einsum for other shapes", a=a.shape, b=b.shape)
        self.save_for_backward(a, b)
        return kernels.matmul(a, b)

    def backward(self, gy):
        a, b = self.saved_tensors
        need_a, need_b = self.needs_input_grad
        return (gy * b if need_a else None), (gy * a if need_b else None)


class Einsum(Function):
    name = "einsum"

    def forward(self, *ops, equation):
        # ``equation`` is canonical here: explicit "->", letters only, consistent sizes.
        if len(ops) > 1:   # one operand only sums or permutes, which bools allow
            refuse_bool_product("einsum", *ops)
        self.save_for_backward(*ops)
        lhs, self.out = equation.split("->")
        self.terms = lhs.split(",")
        self.sizes = {c: n for t, o in zip(self.terms, ops) for c, n in zip(t, o.shape)}
        self.equation = equation
        xp = get_array_module(ops[0])
        dtypes = [o.dtype for o in ops]
        optimize = len(ops) > 1  # lets NumPy/CuPy route contractions through BLAS
        if any(is_low_precision(d) for d in dtypes):
            # No native fp16 einsum kernel: accumulate in fp32, round once (invariant 4).
            out_dtype = dtypes[0] if len(set(dtypes)) == 1 else widest_float(dtypes)
            y = xp.einsum(equation, *[o.astype(float32) for o in ops], optimize=optimize)
            return y.astype(out_dtype)
        y = xp.einsum(equation, *ops, optimize=optimize)
        # One-operand forms may return a (read-only) view of the input: never alias it.
        return y.copy() if len(ops) == 1 and y.base is not None else y

    def backward(self, gy):
        ops = self.saved_tensors
        used = set(self.equation)
        fresh = [c for c in string.ascii_letters if c not in used]
        grads = []
        for i, need in enumerate(self.needs_input_grad):
            grads.append(self._grad_of(i, gy, ops, fresh) if need else None)
        return tuple(grads)

    def _grad_of(self, i, gy, ops, fresh):
        term = self.terms[i]
        others = [j for j in range(len(ops)) if j != i]
        avail = set(self.out).union(*[self.terms[j] for j in others])
        uniq = "".join(dict.fromkeys(term))
        kept = "".join(c for c in uniq if c in avail)
        eq = ",".join([self.out] + [self.terms[j] for j in others]) + "->" + kept
        g = Einsum.apply(gy, *[ops[j] for j in others], equation=eq)
        if len(kept) < len(uniq):
            # Labels summed only inside this operand: their gradient is a broadcast.
            g = g.reshape(tuple(self.sizes[c] if c in avail else 1 for c in uniq))
            g = g.broadcast_to(tuple(self.sizes[c] for c in uniq))
        if len(uniq) < len(term):
            # Repeated labels (diagonals, traces): place the gradient on the diagonal by
            # contracting with identity matrices, one per extra occurrence.
            xp = get_array_module(g.data)
            seen, renamed, eyes, eye_terms = set(), "", [], []
            for c in term:
                if c in seen:
                    f = fresh.pop()
                    renamed += f
                    eye_terms.append(c + f)
                    eyes.append(Tensor._make(xp.eye(self.sizes[c], dtype=g.dtype), False,
                                             None, 0))
                else:
                    seen.add(c)
                    renamed += c
            g = Einsum.apply(g, *eyes, equation=",".join([uniq] + eye_terms) + "->" + renamed)
        return g


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with NumPy semantics (1-D operands, broadcast batch dims).

    float16/bfloat16 operands accumulate in float32 and return their own dtype.
    """
    return MatMul.apply(a, b)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """Batched matrix product of 3-D tensors: ``(B, n, m) @ (B, m, p) -> (B, n, p)``.

    Unlike ``matmul`` there is no broadcasting; other ranks raise a ValueError.
    """
    return Bmm.apply(a, b)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` as one op (one 2-D GEMM over the flattened leading dims).

    Args:
        x: input of shape ``(..., in_features)``.
        weight: ``(out_features, in_features)`` (PyTorch layout).
        bias: optional ``(out_features,)``.

    Returns:
        A tensor of shape ``(..., out_features)``.
    """
    return Linear.apply(x, weight, bias)


def dot(a: Tensor, b: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of the same length (a 0-d tensor)."""
    return Dot.apply(a, b)


def _canonical(equation: str, shapes: list) -> tuple:
    """Rewrite ``equation`` with explicit output and letters for ellipses.

    Returns the canonical equation and, per operand, the shape it must be broadcast to.
    """
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise op_error("einsum", f"the equation has {len(terms)} operand(s) but "
                       f"{len(shapes)} tensor(s) were given", equation=equation)
    for t in [*terms, rhs]:
        if t.count("...") > 1 or any(c not in string.ascii_letters for c in t.replace("...", "")):
            raise op_error("einsum", "subscripts must be letters with at most one '...' per "
                           "operand", equation=equation)
    fresh = [c for c in string.ascii_letters if c not in eq]
    ell_nd = max([len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t] or [0])
    ell = "".join(fresh[:ell_nd])
    out_terms = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            nd = len(s) - (len(t) - 3)
            t = t.replace("...", ell[ell_nd - nd:] if nd > 0 else "") if nd >= 0 else t
        if len(t) != len(s):
            raise op_error("einsum", f"operand subscripts {t!r} do not match its rank",
                           equation=equation, shape=s)
        out_terms.append(t)
    if arrow:
        rhs = rhs.replace("...", ell)
    else:  # implicit mode: ellipsis dims, then labels seen exactly once, alphabetically
        counts = {}
        for c in "".join(out_terms):
            counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    if len(set(rhs)) != len(rhs) or not set(rhs) <= set("".join(out_terms)):
        raise op_error("einsum", "output subscripts must be distinct and appear in an input",
                       equation=equation)
    sizes: dict = {}
    for t, s in zip(out_terms, shapes):
        for c, n in zip(t, s):
            if sizes.get(c, n) != n and 1 not in (n, sizes[c]):
                raise op_error("einsum", f"label {c!r} has sizes {sizes[c]} and {n}; sizes "
                               "must match or be 1 (broadcast)", equation=equation,
                               shapes=shapes)
            if sizes.get(c, 1) == 1:  # a size-1 label broadcasts (to 0 too: not max())
                sizes[c] = n
    targets = [tuple(sizes[c] for c in t) for t in out_terms]
    return ",".join(out_terms) + "->" + rhs, targets


def einsum(equation: str, *operands: Tensor) -> Tensor:
    """Einstein summation, e.g. ``einsum("bij,bjk->bik", a, b)``.

    Supports any number of operands, implicit output (``"ij,jk"``), ``...`` with broadcasting,
    and repeated labels (``"ii->i"``). float16/bfloat16 compute in float32 and round once.

    Args:
        equation: subscripts in NumPy/PyTorch notation.
        *operands: the tensors (a single list or tuple is accepted too).

    Returns:
        The contracted tensor.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise op_error("einsum", "needs at least one operand", equation=equation)
    eq, targets = _canonical(equation, [o.shape for o in operands])
    operands = [o if o.shape == t else o.broadcast_to(t) for o, t in zip(operands, targets)]
    lhs, rhs = eq.split("->")
    if len(operands) == 1 and operands[0].dtype.kind in "biu" and set(lhs) - set(rhs):
        # a pure sum: integers and bools sum in int64, as ``sum`` does (NumPy would or bools)
        operands = [operands[0].astype(int64)]
    return Einsum.apply(*operands, equation=eq)
