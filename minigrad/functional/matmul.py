"""Products: matrix and vector products (``matmul``, ``mm``, ``bmm``, ``mv``, ``dot``, ``vdot``,
``cross``), the layers' products (``linear``, ``bilinear``), the fused BLAS forms ``addmm``,
``addmv``, ``addr``, ``baddbmm``, ``addbmm`` (``beta * input + alpha * product``), matrix chains
(``linalg_multi_dot``/``multi_dot``, ``chain_matmul``) and contractions (``einsum``,
``tensordot``).

Low-precision products follow Tensor Core semantics (invariant 4) through
``_backend.kernels.matmul``: float32 accumulation, result in the input dtype. ``einsum`` has no
GEMM kernel of its own, so float16/bfloat16 operands are upcast to float32 and the result is
rounded once. ``mm``/``mv``/``vdot`` are the primitives ``matmul``/``dot`` under their own names
(their own policy rows). The fused forms, chains, ``tensordot``, ``bilinear`` and ``cross`` are
composites (see ``_composite``): one row each, so under autocast the whole expression runs in one
dtype and every product in it goes through ``kernels.matmul``. Every backward is written with
these ops, so double backward works (``linear`` runs the same products on arrays when the
backward is not recorded).
"""

from __future__ import annotations

import math
import string

from .._backend import casts, get_array_module, kernels
from .._backend.dtypes import float32, int64, is_low_precision, widest_float
from ..core.function import Function
from ..core.tensor import Tensor
from ._composite import composite
from ._utils import (broadcast_shape, const, fast_backward, normalize_axis, op_error,
                     refuse_bool_product, shape_of, sum_to_shape)
from .shape import broadcast_to, stack

__all__ = [
    "addbmm", "addmm", "addmv", "addr", "baddbmm", "bilinear", "bmm", "chain_matmul", "cross",
    "dot", "einsum", "linalg_multi_dot", "linear", "matmul", "mm", "multi_dot", "mv", "tensordot",
    "vdot",
]


# --------------------------------------------------------------------------- primitives
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


class LinearFunction(Function):
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
        lead = x.shape[:-1]
        # Fold every leading dim into the rows of ONE 2-D GEMM: the 2-D shape is what reaches
        # cuBLAS GemmEx for fp16/bf16, and one large BLAS call beats a batch of small ones.
        # fp16/bf16: the bias is added to the float32 accumulator, then rounded once (PyTorch)
        x2 = x.reshape(math.prod(lead), x.shape[-1])
        if (is_low_precision(x.dtype) and x.dtype == weight.dtype
                and kernels.emulates_low_precision(x)):
            # The CPU multiplies float16/bfloat16 in float32: convert x and the weight once and
            # keep the copies for the backward's two products (freed with the graph; within the
            # byte limit of a kept im2col matrix, else backward converts again).
            x2, w32 = casts.astype(x2, float32), casts.astype(weight, float32)
            keep = x2.nbytes <= kernels.im2col_keep_bytes(x2)
            self.save_for_backward(*((x, weight, x2, w32) if keep else (x, weight)))
            b32 = None if bias is None else casts.to_dtype(bias, float32)
            y = kernels.emulated_matmul(x2, w32.T, x.dtype, b32)
        else:
            self.save_for_backward(x, weight)
            y = kernels.matmul_bias(x2, weight.T, bias)
        return y.reshape(lead + (out_features,))

    def backward(self, gy):
        need_x, need_w, need_b = self.needs_input_grad
        x, w = self.saved_tensors_used(need_w, need_x)  # x for dW, w for dX (PyTorch's saves)
        out_features, in_features = w.shape
        rows = math.prod(x.shape[:-1])
        if fast_backward():  # the same three products on arrays, without recording ops
            g2 = gy._data.reshape(rows, out_features)
            if len(self.saved) > 2:  # float32 copies of x and w (CPU float16/bfloat16)
                return _linear_backward_f32(g2, *self.saved[2:], x, need_x, need_w, need_b)
            return (const(kernels.matmul(g2, w._data).reshape(x.shape)) if need_x else None,
                    const(kernels.matmul(g2.T, x._data.reshape(rows, in_features)))
                    if need_w else None,
                    const(kernels.sum_fp32(g2, axis=0).astype(g2.dtype, copy=False))
                    if need_b else None)
        g2 = gy.reshape((rows, out_features))
        gx = matmul(g2, w).reshape(x.shape) if need_x else None
        gw = matmul(g2.T, x.reshape((rows, in_features))) if need_w else None
        gb = g2.sum(0) if need_b else None
        return gx, gw, gb


def _linear_backward_f32(g2, x32, w32, x, need_x, need_w, need_b):
    """Linear's three gradient products from the forward's float32 operand copies, each
    rounded once to the gradient's dtype; ``g2`` is converted once too."""
    dtype = g2.dtype
    g32 = casts.to_dtype(g2, float32)
    return (const(kernels.emulated_matmul(g32, w32, dtype).reshape(x.shape)) if need_x else None,
            const(kernels.emulated_matmul(g32.T, x32, dtype)) if need_w else None,
            const(casts.to_dtype(g32.sum(0), dtype)) if need_b else None)


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
            xp = get_array_module(g._data)
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


class Mm(MatMul):
    name = "mm"


class Mv(MatMul):
    name = "mv"


class Vdot(Dot):
    name = "vdot"


# --------------------------------------------------------------------------- products
def matmul(a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False,
           **megengine) -> Tensor:
    """Matrix product with NumPy semantics (1-D operands, broadcast batch dims).

    float16/bfloat16 operands accumulate in float32 and return their own dtype.
    ``transpose_a``/``transpose_b`` (MegEngine's) swap the last two axes of that operand first
    (a view, no copy); MegEngine's ``compute_mode``/``format`` are accepted and ignored.
    """
    if megengine.keys() - {"compute_mode", "format"}:
        raise TypeError(f"matmul: unexpected keyword arguments {sorted(megengine)}")
    if transpose_a:
        a = a.swapaxes(-1, -2)
    if transpose_b:
        b = b.swapaxes(-1, -2)
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
    return LinearFunction.apply(x, weight, bias)


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


# --------------------------------------------------------------------------- fused BLAS forms
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


# --------------------------------------------------------------------------- chains, contractions
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


# --------------------------------------------------------------------------- cross product
def _cross_impl(a, b, axis):
    def comp(t, i):
        idx = (slice(None),) * axis + (i,)
        return t[idx]

    a0, a1, a2 = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=axis)


_Cross = composite("cross", _cross_impl)


def cross(input: Tensor, other: Tensor, dim: int | None = None, *, axis: int | None = None):
    """Cross product of 3-vectors along ``dim`` (``axis`` is accepted as a synonym).

    Both inputs broadcast against each other. With no ``dim`` the first axis of size 3 is used
    (``torch.cross``'s old default); ``linalg.cross`` users pass ``dim=-1``.
    """
    if dim is None:
        dim = axis
    refuse_bool_product("cross", input, other)
    shape = tuple(broadcast_shape("cross", shape_of(input), shape_of(other)))
    if dim is None:
        sizes = [i for i, s in enumerate(shape) if s == 3]
        if not sizes:
            raise op_error("cross", "no axis of size 3; pass dim=", input=shape_of(input),
                           other=shape_of(other))
        dim = sizes[0]
    dim = normalize_axis(dim, len(shape), "cross")
    if shape[dim] != 3:
        raise op_error("cross", f"axis {dim} must have size 3", input=shape_of(input),
                       other=shape_of(other))
    a = input if input.shape == shape else broadcast_to(input, shape)
    b = other if other.shape == shape else broadcast_to(other, shape)
    return _Cross.apply(a, b, kw={"axis": dim})
