"""PyTorch as the oracle along two more axes than tests/test_oracle.py's dtypes, over the same
op table, the same ``ORACLE`` map and the same comparisons (raise-vs-raise, dtypes, shapes,
values with NaN positions equal, the inputs after the call, gradients of a random cotangent):

* **Views.** Every sample with each of its array inputs given as a non-contiguous view of a
  larger leaf holding the same values: transposed (the reversed permutation of a transposed
  copy, ndim >= 2), strided (every second element of a buffer twice as long along the last
  axis) and offset (a slice starting at element 1 of a buffer one longer along the first axis;
  0-d inputs too). The views are built on both sides with each library's own slicing and
  permute, the buffer's other elements are NaN (or an out-of-range integer), and the gradients
  compared are the whole buffers'. minigrad's result on the view must also equal its result
  on the contiguous input bit for bit, forward and gradient (within a few ulps for the ops
  that accumulate, whose summation order follows the layout: ``_ACCUMULATING``).
* **Special values.** The pointwise, reduction, scan, activation, loss, normalization,
  pooling, upsample, distance, sorting, shape and cast samples with inf, -inf, NaN, -0.0, a
  huge value (3e38, 1e308; 6e4 in float16) and a tiny subnormal one (1e-45, 5e-324; 6e-8)
  written at fixed positions of their floating inputs (targets and affine parameters too):
  one case per value, and for pointwise ops one more holding all six at once (each meeting
  finite values and other specials). For the pointwise ops, where PyTorch's result is a zero
  its sign must be minigrad's too.

Views in float32 and float64; special values in float32 and float64, and float16 for the
pointwise ops. A mismatch fails unless it is a narrow row of ``VARIANT_DEVIATIONS`` (each also
in docs/migrating.md) or of test_oracle's ``DEVIATIONS``; a row names the ops (or one sample),
the variants (or a variant in one dtype) and what differs, down to the positions where
PyTorch's answer is not finite or minigrad's is NaN, so everything else is still compared.
Skips without PyTorch."""

import dataclasses

import numpy as np
import pytest

import minigrad as mg
from minigrad.testing.op_table import op_table

torch = pytest.importorskip("torch")

from test_oracle import (  # noqa: E402 - after the skip: it needs PyTorch too
    BROKEN_BACKWARD, EXACT, ORACLE, OTHER_GRADIENT, RANDOM, ROUNDED_GRADIENT, _compare,
    _deviation, _dtype_name, _np, _outputs, _TOL)

_DTYPES = (np.float32, np.float64)
_TABLE = op_table()
# inf and NaN inputs warn in NumPy (overflow, invalid value) on purpose
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# ------------------------------------------------------------------------------------- views
_VIEWS = ("transposed", "strided", "offset")
_FILL_INT = 10 ** 6          # never a valid index or label: reading it raises or shows


def _view(kind, arr, lib, grad):
    """``(leaf, view)``: a leaf over a buffer whose ``kind`` view holds ``arr``'s values."""
    fill = np.nan if arr.dtype.kind == "f" else True if arr.dtype.kind == "b" else _FILL_INT
    if kind == "transposed":
        buf = np.ascontiguousarray(np.transpose(arr))
    elif kind == "strided":
        buf = np.full(arr.shape[:-1] + (2 * arr.shape[-1],), fill, arr.dtype)
        buf[..., ::2] = arr
    else:
        buf = np.full((arr.shape[0] + 1,) + arr.shape[1:] if arr.ndim else (2,), fill, arr.dtype)
        buf[1:] = arr if arr.ndim else arr.reshape(1)
    leaf = (torch.tensor(buf, requires_grad=grad) if lib is torch
            else mg.tensor(buf, requires_grad=grad))
    if kind == "transposed":
        view = leaf.permute(*reversed(range(arr.ndim)))
    elif kind == "strided":
        view = leaf[..., ::2]
    else:
        view = leaf[1:] if arr.ndim else leaf[1, ...]
    return leaf, view


# Ops that accumulate (sums, products, BLAS, convolutions, statistics): NumPy sums pairwise
# along the contiguous axis and BLAS blocks by layout, so a view's result may differ from the
# contiguous one's in the last bits (PyTorch's do too: its sum over dim 0 of a transposed
# float32 view is not its contiguous one's). There the two agree within a few ulps; every
# other op gives the same bits.
_ACCUMULATING = frozenset("reduction matmul conv conv_nd normalization loss loss_margin "
                          "distance recurrent attention".split())


def _same_bits(a, b, what):
    np.testing.assert_array_equal(a, b, err_msg=what)
    if a.dtype.kind == "f":
        _same_zero_signs(a, b, what, ("view", "contiguous"))


def _reordered(a, b, what):
    eps = 16 * np.finfo(a.dtype).eps if a.dtype.kind == "f" else 0
    np.testing.assert_allclose(a, b, rtol=eps, atol=eps, equal_nan=True, err_msg=what)


def _viewable(kind, a) -> bool:
    return isinstance(a, np.ndarray) and (a.ndim >= 2 if kind == "transposed" else
                                          a.ndim >= 1 if kind == "strided" else True)


def _in_view(kind, g, ndim):
    """The part of a buffer's gradient the view covers, in the view's layout."""
    if kind == "transposed":
        return np.transpose(g)
    if kind == "strided":
        return g[..., ::2]
    return g[1:] if ndim else g[1]


# ------------------------------------------------------------------------ special values
_SPECIALS = {   # name -> value per dtype
    "inf": dict.fromkeys((np.float16, np.float32, np.float64), np.inf),
    "-inf": dict.fromkeys((np.float16, np.float32, np.float64), -np.inf),
    "nan": dict.fromkeys((np.float16, np.float32, np.float64), np.nan),
    "-0": dict.fromkeys((np.float16, np.float32, np.float64), -0.0),
    "huge": {np.float16: 6e4, np.float32: 3e38, np.float64: 1e308},
    "tiny": {np.float16: 6e-8, np.float32: 1e-45, np.float64: 5e-324},
}
_SPECIAL_FAMILIES = frozenset("elementwise transcendental activation reduction scan loss "
                              "loss_margin normalization pooling pooling_nd upsample shape "
                              "cast distance sorting".split())
# not pointwise: a special value meets the rest of its row, so one value per case
_NOT_POINTWISE = frozenset("prelu softmax log_softmax softmin nn.logsoftmax".split())


# Zero signs are compared for the pointwise families, where IEEE arithmetic defines them;
# the sign of a zero sum, mean or normalised value follows the evaluation order (PyTorch's
# cumsum starts from +0.0, NumPy's from the first element).
_SIGNED_ZEROS = frozenset({"elementwise", "transcendental", "activation"})


def _pointwise(info) -> bool:
    return info.family in ("elementwise", "transcendental", "activation") and (
        info.name not in _NOT_POINTWISE)


def _inject(sample, dtype, special):
    """The sample with ``special`` (a name of ``_SPECIALS``, or ``"all"``) written into each
    floating input: input k gets one value at flat positions k and n // 2 + k (mod n), or all
    six at positions j + 3k (mod n), j the value's number."""
    count = [0]

    def put(a):
        if not (isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size):
            return a
        k, n = count[0], a.size
        count[0] += 1
        flat = a.astype(np.float64).ravel()
        if special == "all":
            for j, s in enumerate(_SPECIALS):
                flat[(j + 3 * k) % n] = _SPECIALS[s][dtype]
        else:
            flat[[k % n, (n // 2 + k) % n]] = _SPECIALS[special][dtype]
        return flat.reshape(a.shape)

    args = tuple(type(a)(put(e) for e in a) if isinstance(a, (list, tuple)) else put(a)
                 for a in sample.args)
    return dataclasses.replace(sample, args=args), count[0] > 0


# ------------------------------------------------------------------------------ deviations
# The deliberate differences these variants show, narrow: (ops or "op sample", variants or
# "variant@dtype", what differs, why); ``what`` is one of ``_KINDS``, most of them limited to
# the positions where PyTorch's answer is not finite or minigrad's is NaN. A row never hides a
# wrong value of minigrad's: each "why" says why minigrad's answer is the right one (or, for
# statistics that overflow, why neither is and only the finite results are compared). Each
# row is also in docs/migrating.md.
_NORMS = frozenset("batch_norm nn.batch_norm group_norm nn.group_norm layer_norm nn.layer_norm "
                   "instance_norm".split())
_SIGN_OF_NAN = "sign(NaN) is NaN in minigrad (NaN in, NaN out, as NumPy's); PyTorch's is 0"
VARIANT_DEVIATIONS: list = [
    # views
    ({"ctc_loss concatenated"}, ("strided",), "value",
     "PyTorch's CPU ctc_loss reads 1-D (concatenated) targets as if they were contiguous: "
     "every second element of a buffer gives 7.7279 where the same targets contiguous give "
     "7.5724 (minigrad's answer for both)"),
    ({"take_along_axis flat"}, ("transposed",), "raises",
     "PyTorch's take_along_dim without a dim flattens with view(-1), which refuses a "
     "transposed input (\"view size is not compatible\"); minigrad flattens any layout"),
    # special values: where PyTorch is the odd one
    ({"sign"}, ("nan", "all"), "value where minigrad's is NaN", _SIGN_OF_NAN),
    ({"abs", "l1_loss", "norm", "vector_norm", "pairwise_distance p1_keepdim"}, ("nan", "all"),
     "gradient where minigrad's is NaN",
     "the gradient of |x| at NaN is sign(NaN): " + _SIGN_OF_NAN),
    ({"l1_loss 0d"}, ("inf", "-inf"), "gradient where minigrad's is NaN",
     "inf - inf is NaN, and the gradient of |x| at NaN is sign(NaN): " + _SIGN_OF_NAN),
    ({"max", "min", "matrix_norm"}, ("inf", "-inf", "huge", "nan"), "gradient",
     "ties (two injected infs, or NaNs, in one slice): minigrad's gradient goes to the first "
     "extreme element, as max's; PyTorch's amax shares it evenly (its max of a NaN slice "
     "shares it among no element: 0/0 = NaN for the whole slice)"),
    ({"hardtanh", "relu6"}, ("nan@float64", "all@float64"), "gradient",
     "PyTorch's float64 kernel gives 0 at NaN where its float32 one and its formula "
     "(x <= min or x >= max ? 0 : g) pass the gradient; minigrad passes it in both"),
    ({"softshrink", "hardshrink"}, ("nan", "all"), "gradient",
     "PyTorch's vectorised loop gives 0 at NaN where its scalar (tail) loop and its formula "
     "(-lambd <= x <= lambd ? 0 : g) pass the gradient, so its answer depends on the "
     "element's position; minigrad passes it everywhere"),
    ({"softshrink"}, ("nan", "inf", "-inf", "huge", "tiny", "-0", "all"), "zero sign",
     "softshrink is +0 on [-lambd, lambd], as PyTorch's vectorised loop; its scalar (tail) "
     "loop gives x * 0 = -0 for negative x there, so its sign depends on the position"),
    ({"rms_norm"}, ("huge",), "gradient where PyTorch's is not finite",
     "an element of 3e38 under a mean square that overflows: minigrad's gradient is 0 (the "
     "output 0 times 0), PyTorch's inf * 0 = NaN"),
    ({"copysign"}, ("inf", "-inf", "all"), "gradient where PyTorch's is not finite",
     "d/dx copysign(x, y) is +-1 at x = +-inf; PyTorch's (copysign(x, y) / x) is inf/inf = NaN"),
    ({"hypot"}, ("-0", "all"), "gradient where PyTorch's is not finite",
     "hypot's gradient at the origin is 0, as the 2-norm's (PyTorch's is 0/0 = NaN)"),
    ({"atan2"}, ("huge",), "gradient where PyTorch's is not finite",
     "atan2(3e38, 3e38): PyTorch's gradient is NaN, minigrad's the (subnormal) value"),
    ({"fmod", "remainder"}, ("tiny@float64",), "value where PyTorch's is not finite",
     "fmod(x, 5e-324) and remainder(x, 5e-324) are exact zeros; PyTorch's float64 kernels "
     "give NaN (x / y overflows)"),
    ({"remainder"}, ("-0", "tiny", "all"), "zero sign",
     "an exact zero remainder takes the divisor's sign, as every non-zero one does (NumPy's "
     "and Python's rule); PyTorch's keeps the dividend's"),
    ({"gelu"}, ("inf", "huge", "all"), "value where PyTorch's is not finite",
     "gelu(3e38) is 3e38 and gelu(inf) inf; PyTorch's float32 kernel overflows to inf at "
     "3e38 and gives NaN at inf"),
    ({"addcmul", "addcdiv"}, ("huge",), "value where PyTorch's is not finite",
     "PyTorch multiplies value * tensor1 first (2 * 3e38 = inf) where the result is "
     "representable"),
    ({"addcmul", "addcdiv"}, ("huge",), "gradient where PyTorch's is not finite",
     "PyTorch multiplies value * tensor first (2 * 3e38 = inf) where the gradient is "
     "representable"),
    ({"mse_loss", "nn.square_loss"}, ("huge",), "gradient where PyTorch's is not finite",
     "PyTorch's gradient takes 2 * (input - target) first, which overflows at 3e38 where "
     "the gradient itself is representable"),
    ({"std"}, ("huge",), "value where PyTorch's is not finite",
     "the std of 3e38 values is representable (minigrad computes it in float64); PyTorch's "
     "float32 variance overflows"),
    ({"std"}, ("huge",), "gradient where PyTorch's is not finite",
     "the std of 3e38 values and its gradient are representable (minigrad computes them in "
     "float64); PyTorch's float32 variance overflows"),
    ({"soft_margin_loss"}, ("inf", "-inf", "huge"), "value where PyTorch's is not finite",
     "log(1 + exp(z)) is computed as softplus (no overflow); PyTorch's exp overflows"),
    ({"soft_margin_loss"}, ("inf", "-inf", "huge"), "gradient where PyTorch's is not finite",
     "the gradient -y * sigmoid(-y x) is computed without overflow; PyTorch's "
     "exp(z) / (1 + exp(z)) is inf/inf = NaN"),
    ({"multi_margin_loss", "multilabel_margin_loss"}, ("inf", "-inf", "nan"),
     "value where minigrad's is NaN",
     "PyTorch's CPU kernels skip a term whose margin is NaN (z > 0 is false), so a NaN score "
     "(or inf - inf) silently drops out of the loss; minigrad's loss is NaN"),
    ({"multi_margin_loss", "multilabel_margin_loss"}, ("inf", "-inf", "nan"), "gradient",
     "PyTorch's CPU kernels skip a term whose margin is NaN (z > 0 is false), so its "
     "gradient is left out; minigrad's loss is NaN and its terms keep their gradients"),
    ({"multilabel_margin_loss single"}, ("huge",), "gradient",
     "PyTorch's kernel takes the margin as 1 - x_j + x_i left to right: at 3e38 the 1 is "
     "lost and a pair whose margin is exactly 1 drops out; minigrad's 1 - (x_j - x_i) keeps "
     "it"),
    ({"cumprod zeros"}, ("inf", "-inf", "huge"), "gradient where minigrad's is NaN",
     "a slice holding both a 0 and an inf (or a product overflowing to inf): the gradient "
     "sums inf * 0 = NaN; PyTorch's zero-aware kernel leaves that term out"),
    ({"prod keepdims"}, ("inf", "-inf"), "gradient where PyTorch's is not finite",
     "the oracle reduces one axis at a time (torch.prod takes one dim): the inner product's "
     "inf divides by itself in PyTorch's backward (NaN)"),
    ({"vector_norm", "norm", "renorm"}, ("huge",), "gradient where PyTorch's is not finite",
     "the norm overflows (3e38 squared): PyTorch's gradient is NaN or inf, minigrad's "
     "x / inf is 0 (renorm: NaN)"),
    # statistics that overflow the dtype or are inf - inf: neither answer means anything
    *((_NORMS, ("huge", "inf", "-inf"), f"{what} where {whose} is not finite",
       "the statistics overflow (the variance of 3e38 is ~1e76, beyond float32) or are "
       "inf - inf: both libraries give inf, NaN or zeros from different evaluation orders "
       "(PyTorch's own layer_norm gives NaN where its batch_norm is finite); the finite "
       "results of both are compared")
      for what in ("value", "gradient") for whose in ("PyTorch's", "minigrad's")),
    (_NORMS, ("huge", "inf", "-inf"), "inputs after the call",
     "running statistics of statistics that overflow (the variance of 3e38 is ~1e76) or are "
     "inf - inf: both libraries give inf or NaN from different evaluation orders"),
    ({"cdist pinf", "pdist pinf", "dist pinf"}, ("nan",), "value where minigrad's is NaN",
     "a NaN coordinate makes an inf-norm distance NaN, as PyTorch's own pairwise_distance "
     "does; PyTorch's CPU cdist/pdist/dist inf-norm kernels drop it (a max that skips NaN)"),
    ({"cdist pinf", "pdist pinf", "dist pinf", "pairwise_distance pinf"},
     ("inf", "-inf", "nan", "huge"), "gradient",
     "the inf-norm's gradient goes to the first largest |difference|, as max's; PyTorch "
     "shares it among tied ones, and gives NaN or drops a NaN coordinate where its distance "
     "is inf or skipped the NaN"),
    ({"cdist", "dist", "pdist", "pairwise_distance"}, ("huge",),
     "gradient where PyTorch's is not finite",
     "a 3e38 coordinate overflows |d|**p: PyTorch's gradient is then inf/inf = NaN; "
     "minigrad's is finite"),
    *(({"mode"}, ("nan",), what,
       "PyTorch's CPU mode sorts with < (no order with NaN), so with a NaN among distinct "
       "values its answer and index (where the gradient goes) depend on where the NaN sits; "
       "minigrad sorts NaN last and counts the NaNs as one value (two NaNs beat single values "
       "in both)") for what in ("value", "gradient")),
    ({"median base"}, ("nan",), "gradient",
     "several NaNs in the slice: the gradient goes to the first, as max's; PyTorch's median "
     "over all elements shares it among them"),
]


_KINDS = ("raises", "refuses", "value", "gradient", "zero sign", "inputs after the call",
          *(f"{what} where {whose} is {how}" for what in ("value", "gradient")
            for whose, how in (("PyTorch's", "not finite"), ("minigrad's", "NaN"),
                               ("minigrad's", "not finite"))))
# Where PyTorch rounds a constant of its float64 formula to float32, the relative tolerance its
# float64 gradient is compared with (minigrad's uses the exact constant): op -> rtol.
_ROUNDED_GRADIENT = {
    # the clamp of p * (1 - p) at 1e-12 (PyTorch's EPSILON is a float): reached at p = 0 or 1
    "binary_cross_entropy": 1e-8, "nn.binary_cross_entropy": 1e-8,
}


def _excused(mine, theirs, listed, what):
    """PyTorch's ``what`` ("value" or "gradient") to compare minigrad's with: None where a row
    excuses all of it, else PyTorch's with the positions a row excuses (where PyTorch's is not
    finite, or minigrad's is NaN or not finite) set to minigrad's; every other position is
    compared."""
    if listed(what):
        return None
    theirs = theirs.astype(np.float64)
    ok = np.zeros(theirs.shape, bool)
    if listed(f"{what} where PyTorch's is not finite"):
        ok |= ~np.isfinite(theirs)
    if listed(f"{what} where minigrad's is NaN"):
        ok |= np.isnan(mine.astype(np.float64))
    if listed(f"{what} where minigrad's is not finite"):
        ok |= ~np.isfinite(mine.astype(np.float64))
    theirs[ok] = mine.astype(np.float64)[ok]
    return theirs


def _variant_deviation(op, sample, variant, dtype, what) -> bool:
    """A row names the op, or the op and one of its samples (``"ctc_loss concatenated"``),
    and the variants, or a variant in one dtype (``"nan@float64"``)."""
    return any((op in ops or f"{op} {sample}" in ops)
               and (v is None or variant in v or f"{variant}@{dtype}" in v)
               and what == w for ops, v, w, _ in VARIANT_DEVIATIONS)


# ------------------------------------------------------------------------------ the check
def _build(sample, dtype, lib, wrap=None):
    """The sample's arguments in ``lib``: floating arrays as ``dtype`` tensors requiring grad
    (unless const), others as tensors; ``wrap(array, lib, grad) -> (leaf, argument)`` makes
    each array's argument (default: the tensor itself). Returns (args, grad leaves, every leaf
    with its argument)."""
    out, leaves, pairs = [], [], []

    def one(a, const):
        if not isinstance(a, np.ndarray):
            return a
        arr = a.astype(dtype) if a.dtype.kind == "f" else a
        grad = a.dtype.kind == "f" and not const
        if wrap is None:
            leaf = (torch.tensor(arr, requires_grad=grad) if lib is torch
                    else mg.tensor(arr, requires_grad=grad))
            arg = leaf
        else:
            leaf, arg = wrap(arr, lib, grad)
        pairs.append((leaf, arg, a.ndim))
        if grad:
            leaves.append(leaf)
        return arg

    for i, a in enumerate(sample.args):
        if isinstance(a, (list, tuple)) and a and all(isinstance(e, np.ndarray) for e in a):
            out.append(type(a)(one(e, i in sample.const) for e in a))
        else:
            out.append(one(a, i in sample.const))
    return out, leaves, pairs


def _call(fn, args, kwargs):
    try:
        return None, fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - compared: both must raise or neither
        return e, None


def _backward(ys, cots, lib):
    loss = 0
    for k, y in enumerate(ys):
        if cots[k] is not None:
            c = (torch.tensor(cots[k]) if lib is torch else mg.tensor(cots[k]))
            loss = loss + ((c * y).sum() if y.ndim else y * float(cots[k]))
    loss.backward()


def _same_zero_signs(a, b, what, names=("minigrad", "PyTorch")):
    """Where both results are zero, ``b``'s sign (PyTorch's signed zero) is ``a``'s."""
    zero = (a == 0) & (b == 0)
    bad = zero & (np.signbit(a) != np.signbit(b))
    assert not bad.any(), (f"{what}: zero signs differ at {np.argwhere(bad)[:5].tolist()} "
                           f"({names[1]} {b[bad][:5]}, {names[0]} {a[bad][:5]})")


def _agree(info, sample, fn, dtype, variant, wrap=None, signs=False):
    """minigrad and PyTorch agree on ``sample`` built with ``wrap``; returns minigrad's
    (outputs, buffer gradients, cotangents, arguments) or None when there is nothing more
    to compare."""
    name = info.name
    listed = lambda w: _variant_deviation(  # noqa: E731
        name, sample.name, variant, np.dtype(dtype).name, w)
    a_mg, l_mg, p_mg = _build(sample, dtype, mg, wrap)
    a_pt, l_pt, p_pt = _build(sample, dtype, torch, wrap)
    e_mg, y_mg = _call(info.op, a_mg, sample.kwargs)
    if (name, sample.name) in EXACT:
        assert e_mg is None and float(y_mg.item()) == EXACT[name, sample.name]
        return None
    e_pt, y_pt = _call(fn, a_pt, sample.kwargs)
    what = f"{name} {sample.name} [{variant}, {np.dtype(dtype)}]"
    if e_pt is not None and e_mg is None and (_deviation(name, dtype, "raises")
                                              or listed("raises")):
        return None
    if e_mg is not None and e_pt is None and (_deviation(name, dtype, "refuses")
                                              or listed("refuses")):
        return None
    assert (e_mg is None) == (e_pt is None), (
        f"{what}: minigrad {'raised ' + repr(e_mg) if e_mg else 'computed'}, PyTorch "
        f"{'raised ' + repr(e_pt) if e_pt else 'computed'}")
    if e_mg is not None:
        return None
    tol = _TOL[np.dtype(dtype).name]
    for k, ((lm, am, _), (lp, ap, _)) in enumerate(zip(p_mg, p_pt)):   # written in place:
        for m, p, which in ((am, ap, "argument"), (lm, lp, "buffer")):  # running statistics
            if not listed("inputs after the call"):
                _compare(_np(m), _np(p), tol, f"{what} input {k} {which} after the call",
                         lambda: False)
    ys_mg, ys_pt = _outputs(y_mg), _outputs(y_pt)
    assert len(ys_mg) == len(ys_pt), f"{what}: {len(ys_mg)} outputs vs {len(ys_pt)}"
    random = (name, sample.name) in RANDOM
    floats = []
    for k, (m, p) in enumerate(zip(ys_mg, ys_pt)):
        a, b = _np(m), _np(p)
        assert a.shape == b.shape, f"{what} output {k}: shape {a.shape} vs PyTorch {b.shape}"
        assert _dtype_name(m) == _dtype_name(p) or _deviation(name, dtype, "dtype"), (
            f"{what} output {k}: dtype {m.dtype} vs PyTorch {p.dtype}")
        if random or a.dtype.kind != b.dtype.kind:
            continue
        b = _excused(a, b, listed, "value")
        if b is not None:
            _compare(a, b, tol, f"{what} output {k} value", lambda: False)
            if signs and a.dtype.kind == "f" and not listed("zero sign"):
                _same_zero_signs(a, b, f"{what} output {k}")
        if p.requires_grad and p.dtype.is_floating_point:
            floats.append(k)
    if random:
        return None
    cots = [None] * len(ys_pt)
    rng = np.random.default_rng(0)
    for k in floats:
        cots[k] = rng.standard_normal(ys_pt[k].shape).astype(dtype)
    if not l_mg or not floats:
        return ys_mg, l_mg, cots, p_mg
    _backward(ys_mg, cots, mg)
    if name in OTHER_GRADIENT:
        return ys_mg, l_mg, cots, p_mg
    try:
        _backward(ys_pt, cots, torch)
    except RuntimeError:
        assert (name, sample.name) in BROKEN_BACKWARD, f"{what}: PyTorch's backward raised"
        return ys_mg, l_mg, cots, p_mg
    gtol = max(tol * 10, ROUNDED_GRADIENT.get(name, 0), _ROUNDED_GRADIENT.get(name, 0))
    for k, (m, p) in enumerate(zip(l_mg, l_pt)):
        gm = np.zeros(m.shape) if m.grad is None else _np(m.grad)
        gp = _excused(gm, np.zeros(tuple(p.shape)) if p.grad is None else _np(p.grad), listed,
                      "gradient")
        if gp is not None:
            _compare(gm, gp, gtol, f"{what} gradient {k}", lambda: False)
    return ys_mg, l_mg, cots, p_mg


# --------------------------------------------------------------------------------- cases
def _view_cases():
    for name, fn in ORACLE.items():
        info = _TABLE[name]
        for s in info.samples:
            arrays = [a for a in s.args if isinstance(a, np.ndarray)] + [
                e for a in s.args if isinstance(a, (list, tuple)) for e in a
                if isinstance(e, np.ndarray)]
            for kind in _VIEWS:
                if any(_viewable(kind, a) and a.size for a in arrays):
                    yield pytest.param(info, s, fn, kind, id=f"{name}-{s.name}-{kind}")


def _special_cases():
    for name, fn in ORACLE.items():
        info = _TABLE[name]
        if info.family not in _SPECIAL_FAMILIES:
            continue
        for s in info.samples:
            if not _inject(s, np.float64, "nan")[1]:
                continue    # no floating element to write into
            one = min(a.size for a in _tensors_np(s.args))
            kinds = (["all"] if _pointwise(info) and one >= 6 else []) + list(_SPECIALS)
            for special in kinds:
                yield pytest.param(info, s, fn, special, id=f"{name}-{s.name}-{special}")


def _tensors_np(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _tensors_np(a)
        elif isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size:
            yield a


@pytest.mark.parametrize("info,sample,fn,kind", list(_view_cases()))
def test_views_agree_with_pytorch(info, sample, fn, kind):
    def wrap(arr, lib, grad):
        if not _viewable(kind, arr):
            leaf = torch.tensor(arr, requires_grad=grad) if lib is torch else mg.tensor(
                arr, requires_grad=grad)
            return leaf, leaf
        leaf, view = _view(kind, arr, lib, grad)
        if lib is mg and arr.size:   # not vacuous: minigrad's argument is a view, non-contiguous
            spread = (sum(d > 1 for d in arr.shape) > 1 if kind == "transposed"
                      else kind == "strided" and arr.shape[-1] > 1)
            assert view._data.base is not None, (kind, arr.shape)
            assert not (spread and view._data.flags.c_contiguous), (kind, arr.shape)
        return leaf, view

    for dtype in _DTYPES:
        got = _agree(info, sample, fn, dtype, kind, wrap)
        if got is None:
            continue
        # the same call on contiguous input, in minigrad: the same bits
        ys, leaves, cots, pairs = got
        args, l_c, _ = _build(sample, dtype, mg)
        ys_c = _outputs(info.op(*args, **sample.kwargs))
        what = f"{info.name} {sample.name} [{kind}, {np.dtype(dtype)}] view vs contiguous"
        same = _same_bits if info.family not in _ACCUMULATING else _reordered
        for k, (v, c) in enumerate(zip(ys, ys_c)):
            same(_np(v), _np(c), f"{what} output {k}")
        if not leaves or all(c is None for c in cots):
            continue
        _backward(ys_c, cots, mg)
        ndims = [nd for leaf, _, nd in pairs if leaf.requires_grad]
        for k, (lv, lc, nd) in enumerate(zip(leaves, l_c, ndims)):
            gv = None if lv.grad is None else _np(lv.grad)
            gc = None if lc.grad is None else _np(lc.grad)
            assert (gv is None) == (gc is None), f"{what}: gradient {k} missing in one"
            if gv is not None:
                if _viewable(kind, gc):
                    gv = _in_view(kind, gv, nd)
                same(gv, gc, f"{what} gradient {k}")


@pytest.mark.parametrize("info,sample,fn,special", list(_special_cases()))
def test_special_values_agree_with_pytorch(info, sample, fn, special):
    for dtype in _DTYPES + ((np.float16,) if _pointwise(info) else ()):
        injected, _ = _inject(sample, dtype, special)
        _agree(info, injected, fn, dtype, special, signs=info.family in _SIGNED_ZEROS)


def test_variant_deviations_are_narrow():
    """Every row names ops of the oracle, known variants and a known kind of difference."""
    variants = set(_VIEWS) | set(_SPECIALS) | {"all"}
    samples = {f"{n} {s.name}" for n in ORACLE for s in _TABLE[n].samples}
    for ops, vs, what, why in VARIANT_DEVIATIONS:
        assert set(ops) <= set(ORACLE) | samples and why
        assert vs is None or {v.split("@")[0] for v in vs} <= variants
        assert what in _KINDS
