"""Ops whose float16/bfloat16 casts go through the vectorised CPU casts (``functional._utils``'s
``to_dtype`` and ``cpu_wide``, the backend's ``casts``) instead of NumPy's element-by-element
``astype``: the results must be the bits the old formulas gave.

Each test computes the op on float16/bfloat16 tensors and compares, bit for bit (NaN, infinities
and signed zeros included), with the old formula: written out in NumPy with ``astype``, or the
same op on float32 (float64) copies of the inputs rounded with ``astype`` where that is what the
old code computed (it widened the inputs exactly, computed in float32 and rounded once).
"""

import math
import warnings

import ml_dtypes
import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad._backend import device_of
from minigrad._backend import random as _random
from minigrad.functional import _utils

F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
LOW = pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])
SHAPE = (48, 67)  # 3216 elements: above the vectorised casts' thresholds


@pytest.fixture(autouse=True)
def _quiet():
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow in casts; l1_loss's broadcast warning
        yield


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-7, -3e-8, 6e-5, 65504.0, -7e4, 1e-30, 0.5]


def data(shape=SHAPE, seed=0, scale=1.0, specials=True, positive=False):
    """float32 noise with the special values sprinkled in (they keep their place per seed)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    if positive:
        x = np.abs(x) + np.float32(0.01)
    if specials:
        flat = x.reshape(-1)
        at = rng.choice(flat.size, size=min(flat.size, 2 * len(SPECIALS)), replace=False)
        flat[at] = np.resize(np.array(SPECIALS, np.float32), at.size)
    return x


def ties(shape=SHAPE, seed=0):
    """Few distinct values (ties everywhere), both zeros, infinities and NaNs."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape).astype(np.float32) * np.float32(0.5)
    x[x == 0] = np.where(rng.random(int((x == 0).sum())) < 0.5, -0.0, 0.0)
    rows = x.reshape(-1, shape[-1] * (shape[-2] if x.ndim > 2 else 1))  # (a view)
    rows[1, :] = -np.inf
    rows[2, 3], rows[2, 9] = np.nan, np.nan
    rows[4, :5] = [-0.0, 0.0, np.nan, 0.0, -0.0]
    rows[5, 7] = np.inf
    rows[6:, 11] = np.nan
    return x


def leaf(a, dtype=None, grad=True):
    t = mg.tensor(a)
    if dtype is not None:
        t = t.astype(dtype)
    t = t.detach()
    t.requires_grad = grad
    return t


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind in "fV":
        u = f"u{got.dtype.itemsize}"
        g, w = np.ascontiguousarray(got).view(u), np.ascontiguousarray(want).view(u)
        bad = np.argwhere(g != w)
        assert bad.size == 0, f"{bad.shape[0]} differ, e.g. at {bad[:3].tolist()}: " \
            f"{[(got[tuple(i)], want[tuple(i)]) for i in bad[:3]]}"
    else:
        np.testing.assert_array_equal(got, want)


def upstream(y, seed=1):
    """An upstream gradient of ``y``'s shape and dtype (specials included for tensors)."""
    if y.ndim == 0:
        return mg.tensor(np.float32(0.75)).astype(y.dtype)
    return mg.tensor(data(y.shape, seed, specials=True)).astype(y.dtype)


def check_vs_wide(fn, arrays, dtype, *, grads=True, seed=None, wide=F32):
    """``fn`` on ``dtype`` leaves against ``fn`` on their exact float32 (``wide``) copies, the
    outputs and input gradients of the wide run rounded with NumPy's ``astype``: what the old
    code computed (the low-precision inputs widened, float32 math, one rounding)."""
    lows = [leaf(a, dtype, grads) for a in arrays]
    wides = [leaf(t._data.astype(wide), None, grads) for t in lows]
    if seed is not None:
        mg.manual_seed(seed)
    y = fn(*lows)
    if seed is not None:
        mg.manual_seed(seed)
    yw = fn(*wides)
    ys, yws = (y, yw) if isinstance(y, tuple) else ((y,), (yw,))
    for a, b in zip(ys, yws):
        want = b._data if a.dtype == b.dtype else b._data.astype(a.dtype)
        same_bits(a._data, want)
    if not grads:
        return
    g = upstream(ys[0])
    ys[0].backward(g)
    yws[0].backward(g if g.dtype == yws[0].dtype else mg.tensor(g._data.astype(yws[0].dtype)))
    for t, tw in zip(lows, wides):
        same_bits(t.grad._data, tw.grad._data.astype(dtype))


# ------------------------------------------------------------------------------ the helpers
def all_float16_and_midpoints():
    h = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    h = np.sort(h[np.isfinite(h)].astype(np.float64))
    mid = (h[1:] + h[:-1]) / 2
    return np.concatenate([h, mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf),
                           mid * (1 + 2.0 ** -30), mid * (1 - 2.0 ** -30)])


def test_to_dtype_float64_to_float16_is_astype(f16c):
    x = all_float16_and_midpoints()
    same_bits(_utils.to_dtype(x, F16), x.astype(F16))
    rng = np.random.default_rng(0)
    for scale in (1e-9, 1e-6, 1e-4, 1.0, 3e4):
        y = rng.standard_normal(40_000) * scale
        same_bits(_utils.to_dtype(y, F16), y.astype(F16))
    # NaN, infinities and overflow take NumPy's cast; layouts keep their values
    for extra in (np.nan, np.inf, -np.inf, 7e4, 1e300, -0.0, 2.0 ** -25, 5e-324):
        y = np.concatenate([rng.standard_normal(3000) * 1e-5, [extra]])
        same_bits(_utils.to_dtype(y, F16), y.astype(F16))
    z = rng.standard_normal((70, 90)) * 1e-5
    same_bits(_utils.to_dtype(z.T, F16), z.T.astype(F16))
    same_bits(_utils.to_dtype(z[:, ::3], F16), z[:, ::3].astype(F16))


@pytest.mark.parametrize("src,dst", [(F16, F32), (BF16, F32), (F32, F16), (F32, BF16),
                                     (F16, F64), (BF16, F64), (F64, BF16), (F32, F32),
                                     (F16, F16), (F32, F64)])
def test_to_dtype_is_astype(src, dst, f16c):
    x = data((3, 5000), seed=2, scale=100.0).astype(np.float64)
    x[0] *= 1e-6
    a = x.astype(src)
    got = _utils.to_dtype(a, dst)
    same_bits(got, a.astype(dst))
    if src == dst:
        assert got is a  # astype(copy=False)'s no-copy


@LOW
def test_cpu_wide(dtype, f16c):
    a = data(seed=3).astype(dtype)
    same_bits(_utils.cpu_wide(a), a.astype(F32))
    b = data(seed=3)
    assert _utils.cpu_wide(b) is b


# ---------------------------------------------------------------------------- pointwise losses
POINTWISE = {
    "l1_loss": lambda x, t: F.l1_loss(x, t),
    "l1_loss_none": lambda x, t: F.l1_loss(x, t, reduction="none"),
    "l1_loss_broadcast": lambda x, t: F.l1_loss(x, t[:1], reduction="sum"),
    "mse_loss": lambda x, t: F.mse_loss(x, t),
    "mse_loss_none": lambda x, t: F.mse_loss(x, t, reduction="none"),
    "smooth_l1_loss": lambda x, t: F.smooth_l1_loss(x, t),
    "smooth_l1_loss_beta0": lambda x, t: F.smooth_l1_loss(x, t, beta=0.0, reduction="none"),
    "kl_div": lambda x, t: F.kl_div(x, t.abs(), reduction="sum"),
    "kl_div_none": lambda x, t: F.kl_div(x, t, reduction="none"),
    "kl_div_log_target": lambda x, t: F.kl_div(x, t, reduction="batchmean", log_target=True),
    "bce_with_logits": lambda x, t: F.binary_cross_entropy_with_logits(x, t),
    "bce_with_logits_none": lambda x, t: F.binary_cross_entropy_with_logits(
        x, t, reduction="none"),
}


@LOW
@pytest.mark.parametrize("name", list(POINTWISE))
def test_pointwise_loss(name, dtype, f16c):
    check_vs_wide(POINTWISE[name], [data(seed=4), data(seed=5, scale=2.0)], dtype)


@LOW
def test_pointwise_loss_mixed_dtypes_and_weights(dtype):
    # a float32 target with a low-precision input: only the input's gradient is rounded
    x = leaf(data(seed=6), dtype)
    t = leaf(data(seed=7))
    xw = leaf(x._data.astype(F32))
    F.l1_loss(x, t).backward()
    F.l1_loss(xw, t).backward()
    same_bits(x.grad._data, xw.grad._data.astype(dtype))
    # class weights and pos_weight in the low dtype
    p = np.abs(data(seed=8, specials=False))
    w, pw = mg.tensor(p).astype(dtype), mg.tensor(p[0] + 0.5).astype(dtype)
    ww, pww = mg.tensor(w._data.astype(F32)), mg.tensor(pw._data.astype(F32))

    def bce(weights, pos):
        return lambda x, t: F.binary_cross_entropy_with_logits(
            x, t, weight=weights, pos_weight=pos, reduction="none")

    x, t = leaf(data(seed=9, scale=30.0), dtype), leaf(data(seed=10), dtype)
    xw, tw = leaf(x._data.astype(F32)), leaf(t._data.astype(F32))
    y, yw = bce(w, pw)(x, t), bce(ww, pww)(xw, tw)
    same_bits(y._data, yw._data)
    g = upstream(y)
    y.backward(g)
    yw.backward(g)
    same_bits(x.grad._data, xw.grad._data.astype(dtype))
    same_bits(t.grad._data, tw.grad._data.astype(dtype))


@LOW
def test_binary_cross_entropy(dtype):
    p = np.clip(data(seed=11, scale=0.3, specials=False) + 0.5, 0, 1)
    p.reshape(-1)[:3] = [0.0, 1.0, 0.5]
    check_vs_wide(lambda a, b: F.binary_cross_entropy(a, b), [p, p[::-1].copy()], dtype)


# ------------------------------------------------------------------------- class-index losses
@LOW
@pytest.mark.parametrize("case", ["plain", "specials", "smoothing", "weights_none", "image"])
def test_cross_entropy(case, dtype):
    rng = np.random.default_rng(12)
    n, c = SHAPE
    target = mg.tensor(rng.integers(0, c, n))
    if case == "plain":
        check_vs_wide(lambda x: F.cross_entropy(x, target), [data(seed=13, scale=3.0,
                                                                  specials=False)], dtype)
    elif case == "specials":
        check_vs_wide(lambda x: F.cross_entropy(x, target), [data(seed=13)], dtype)
    elif case == "smoothing":
        ignored = mg.tensor(np.where(rng.random(n) < 0.2, -100, rng.integers(0, c, n)))
        check_vs_wide(lambda x: F.cross_entropy(x, ignored, label_smoothing=0.1),
                      [data(seed=14, scale=3.0, specials=False)], dtype)
    elif case == "weights_none":
        w = mg.tensor(np.abs(data((c,), seed=15, specials=False)))
        check_vs_wide(lambda x: F.cross_entropy(x, target, weight=w, reduction="none"),
                      [data(seed=16, scale=3.0, specials=False)], dtype)
    else:
        t = mg.tensor(rng.integers(0, 6, (4, 9, 11)))
        check_vs_wide(lambda x: F.cross_entropy(x, t), [data((4, 6, 9, 11), seed=17)], dtype)


@LOW
def test_cross_entropy_probability_targets(dtype):
    p = np.abs(data(seed=18, specials=False))
    p /= p.sum(1, keepdims=True)
    check_vs_wide(lambda x, t: F.cross_entropy(x, t), [data(seed=19, scale=3.0), p], dtype)


@LOW
def test_nll_loss(dtype):
    rng = np.random.default_rng(20)
    n, c = SHAPE
    t = mg.tensor(np.where(rng.random(n) < 0.2, -100, rng.integers(0, c, n)))
    check_vs_wide(lambda x: F.nll_loss(x, t), [data(seed=21)], dtype)


@LOW
def test_ctc_loss(dtype):
    rng = np.random.default_rng(22)
    lp = F.log_softmax(mg.tensor(data((30, 3, 40), seed=23, specials=False)), 2)._data
    targets = mg.tensor(rng.integers(1, 40, (3, 6)))
    in_lens, tgt_lens = mg.tensor(np.array([30, 30, 25])), mg.tensor(np.array([6, 4, 3]))
    check_vs_wide(lambda x: F.ctc_loss(x, targets, in_lens, tgt_lens), [lp], dtype)


@LOW
def test_cosine_similarity(dtype):
    check_vs_wide(lambda a, b: F.cosine_similarity(a, b),
                  [data(seed=24), data(seed=25)], dtype)
    check_vs_wide(lambda a, b: F.cosine_similarity(a, b),
                  [data(seed=26, specials=False), data((1, SHAPE[1]), seed=27)], dtype)


# --------------------------------------------------------------------------------- std, var
def old_std_backward(x, y, gy, axes, keepdims, ddof):
    """Std.backward's formula with NumPy's casts: float64 math, one rounding to x's dtype."""
    x64 = x.astype(F64)
    count = math.prod(x.shape[a] for a in axes)
    denom = count - ddof
    safe = np.where(y == 0, np.inf, y.astype(F64))
    g = gy.astype(F64) / safe
    keep = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    g = np.broadcast_to(g.reshape(keep), x.shape)
    centered = x64 - np.sum(x64, axis=axes, dtype=F64, keepdims=True) / max(count, 1)
    gx = g * centered * (1.0 / denom if denom > 0 else math.nan)
    return gx.astype(x.dtype)


STD_CASES = {
    "all": dict(data=lambda: data(seed=30), axis=None, keepdims=False, ddof=0),
    "all_finite": dict(data=lambda: data(seed=31, specials=False), axis=None, keepdims=False,
                       ddof=0),
    "tiny": dict(data=lambda: data((200, 300), seed=32, scale=1e-2, specials=False), axis=None,
                 keepdims=False, ddof=0),  # gradients are float16 subnormals
    "rows": dict(data=lambda: data(seed=33, scale=1e-3, specials=False), axis=1,
                 keepdims=False, ddof=1),
    "cols_keep": dict(data=lambda: data((300, 20), seed=34), axis=0, keepdims=True, ddof=0),
    "constant": dict(data=lambda: np.ones(SHAPE, np.float32), axis=1, keepdims=False, ddof=0),
}


@LOW
@pytest.mark.parametrize("case", list(STD_CASES))
def test_std(case, dtype, f16c):
    c = STD_CASES[case]
    x = leaf(c["data"](), dtype)
    y = F.std(x, axis=c["axis"], keepdims=c["keepdims"], ddof=c["ddof"])
    # forward: the float64 computation, rounded once with astype
    y64 = F.std(leaf(x._data.astype(F64), grad=False), axis=c["axis"], keepdims=c["keepdims"],
                ddof=c["ddof"])
    same_bits(y._data, y64._data.astype(dtype))
    gy = upstream(y)
    y.backward(gy)
    axes = tuple(range(x.ndim)) if c["axis"] is None else (c["axis"],)
    same_bits(x.grad._data, old_std_backward(x._data, y._data, gy._data, axes, c["keepdims"],
                                             c["ddof"]))


@LOW
def test_std_create_graph_unchanged(dtype):
    """Recorded (create_graph) backward keeps the op path: same values as the fast one."""
    x = leaf(data(seed=35, specials=False), dtype)
    (g1,) = mg.autograd.grad(F.std(x, axis=1).sum(), [x], create_graph=True)
    (g2,) = mg.autograd.grad(F.std(x, axis=1).sum(), [x])
    same_bits(g1._data, g2._data)


@LOW
@pytest.mark.parametrize("axis,ddof", [(None, 0), (1, 1), (0, 0)])
def test_var_forward(axis, dtype, ddof):
    x = leaf(data(seed=36), dtype, grad=False)
    want = F.var(leaf(x._data.astype(F32), grad=False), axis=axis, ddof=ddof)._data
    same_bits(F.var(x, axis=axis, ddof=ddof)._data, want.astype(dtype))


# ----------------------------------------------------------------------------------- dropout
@LOW
@pytest.mark.parametrize("p", [0.3, 1.0])
def test_dropout(p, dtype, f16c):
    # the old formula, (x * mask * scale in float32).astype(dtype), is the float32 op rounded
    check_vs_wide(lambda x: F.dropout(x, p, True), [data(seed=40)], dtype, seed=7)


@LOW
def test_dropout2d(dtype):
    check_vs_wide(lambda x: F.dropout2d(x, 0.4, True), [data((4, 6, 9, 11), seed=41)], dtype,
                  seed=8)


@LOW
@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout(feature, dtype):
    p, shape = 0.3, ((4, 6, 9, 11) if feature else SHAPE)
    x = leaf(data(shape, seed=42), dtype)
    mg.manual_seed(9)
    y = (F.feature_alpha_dropout if feature else F.alpha_dropout)(x, p, True)
    # the old formula: keep, a, b in float32 rounded with astype, then x * m + b in the dtype
    mg.manual_seed(9)
    gen = _random.generator(device_of(x._data))
    mshape = shape[:2] + (1, 1) if feature else shape
    keep = (gen.random(mshape, dtype=np.float32) >= p).astype(np.float32)
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha ** 2 * p + 1) * (1 - p))
    b = (keep - 1) * (alpha * a) + alpha * a * p
    m, bb = (keep * a).astype(dtype), b.astype(dtype)
    want = F.add(F.mul(mg.tensor(x._data), mg.tensor(m)), mg.tensor(bb))._data
    same_bits(y._data, want)


# --------------------------------------------------------------------------- norm, atan2, ...
@LOW
@pytest.mark.parametrize("ord,axis", [(2, None), (2, 1), (1, 0), (math.inf, 1), (3, 1),
                                      (0.5, 1)])
def test_norm_forward(ord, axis, dtype):
    check_vs_wide(lambda x: F.norm(x, ord=ord, axis=axis), [data(seed=50)], dtype, grads=False)


@LOW
def test_atan2_forward(dtype):
    y, x = data(seed=51).astype(dtype), data(seed=52).astype(dtype)
    want = np.arctan2(y.astype(F32), x.astype(F32)).astype(dtype)
    same_bits(F.atan2(mg.tensor(y), mg.tensor(x))._data, want)
    # a float32 operand: the float32 result, as before
    x32 = data(seed=52)
    same_bits(F.atan2(mg.tensor(y), mg.tensor(x32))._data, np.arctan2(y.astype(F32), x32))


@LOW
@pytest.mark.parametrize("axis", [1, 0])
def test_logsumexp_forward(axis, dtype):
    check_vs_wide(lambda x: F.logsumexp(x, axis=axis), [data(seed=53)], dtype, grads=False)
    check_vs_wide(lambda x: F.logsumexp(x, axis=axis),
                  [data(seed=54, scale=5.0, specials=False)], dtype, grads=False)


@LOW
def test_mean_sum_forward(dtype):
    check_vs_wide(lambda x: F.mean(x, axis=1), [data(seed=55)], dtype)
    check_vs_wide(lambda x: F.sum(x, axis=0), [data(seed=56, scale=3e4)], dtype)


@LOW
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_cumsum_cumprod_forward(op, dtype):
    x = data(seed=57, scale=0.5) + (1 if op == "cumprod" else 0)
    a = x.astype(dtype)
    want = getattr(np, op)(a, axis=1, dtype=np.float32).astype(dtype)  # the old formula
    same_bits(getattr(F, op)(mg.tensor(a), 1)._data, want)
    want0 = getattr(np, op)(a, axis=0, dtype=np.float32).astype(dtype)
    same_bits(getattr(F, op)(mg.tensor(a), 0)._data, want0)


@LOW
def test_prod_with_zeros_backward(dtype):
    check_vs_wide(lambda x: F.prod(x, axis=1), [ties(seed=58)], dtype)


@LOW
def test_erf(dtype):
    check_vs_wide(lambda x: F.erf(x), [data(seed=59)], dtype, grads=False)
    check_vs_wide(lambda x: F.erf(x), [data((300, 300), seed=60)], dtype, grads=False)


@LOW
@pytest.mark.parametrize("weight", [0.3, 0.7, "tensor"])
def test_lerp_forward(weight, dtype):
    arrays = [data(seed=61), data(seed=62, scale=3e4)]
    if weight == "tensor":
        arrays.append(np.clip(data(seed=63, specials=False), -1, 2))
        check_vs_wide(lambda s, e, w: F.lerp(s, e, w), arrays, dtype, grads=False)
    else:
        check_vs_wide(lambda s, e: F.lerp(s, e, weight), arrays, dtype, grads=False)


@LOW
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_forward(op, dtype):
    check_vs_wide(lambda x: getattr(F, op)(x, 1), [data(seed=64)], dtype, grads=False)
    check_vs_wide(lambda x: getattr(F, op)(x, 0), [data(seed=65, scale=4.0, specials=False)],
                  dtype, grads=False)


# ------------------------------------------------------------------------- max, min, argmax
def old_extremum(x, arg, axes, keepdims):
    """Max.forward's formula on the dtype's own comparisons: NumPy's argmax/argmin of ``x``."""
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, rest + list(axes)).reshape(
        tuple(x.shape[i] for i in rest) + (-1,))
    idx = getattr(np, arg)(moved, axis=-1)
    y = np.take_along_axis(moved, idx[..., None], axis=-1)[..., 0]
    if keepdims:
        keep = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        y, idx = y.reshape(keep), idx.reshape(keep)
    return y, idx, moved.shape


@LOW
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True), ((0, 2), False)])
def test_max_min(op, axis, keepdims, dtype, f16c):
    shape = (12, 7, 9) if axis == (0, 2) else SHAPE
    x = leaf(ties(shape, seed=70), dtype)
    y, idx = getattr(F, op)(x, axis=axis, keepdims=keepdims, return_indices=True)
    axes = tuple(range(x.ndim)) if axis is None else (axis if isinstance(axis, tuple)
                                                       else (axis,))
    want_y, want_idx, moved_shape = old_extremum(x._data, "arg" + op, axes, keepdims)
    same_bits(y._data, want_y)
    same_bits(idx._data, want_idx.astype(np.int64))
    # gradient: the broadcast upstream gradient times the first-extremum mask, in float32
    gy = upstream(y)
    y.backward(gy)
    rest = [i for i in range(x.ndim) if i not in axes]
    hit = np.zeros(moved_shape, bool)
    np.put_along_axis(hit, want_idx.reshape(moved_shape[:-1] + (1,)), True, axis=-1)
    order = rest + list(axes)
    hit = np.transpose(hit.reshape(tuple(x.shape[i] for i in order)), np.argsort(order))
    keep = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    g = np.broadcast_to(gy._data.reshape(keep), x.shape).astype(F32)
    same_bits(x.grad._data, (g * hit).astype(dtype))


@LOW
@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (1, False), (0, True)])
def test_argmax_argmin(op, axis, keepdims, dtype, f16c):
    for x in (ties(seed=71), data(seed=72), -ties(seed=73)):
        a = x.astype(dtype)
        got = getattr(F, op)(mg.tensor(a), axis=axis, keepdims=keepdims)._data
        if axis is None:
            want = getattr(np, op)(a.reshape(-1))
            want = want.reshape((1,) * a.ndim) if keepdims else want
        else:
            want = getattr(np, op)(a, axis=axis, keepdims=keepdims)
        same_bits(np.asarray(got), np.asarray(want))
        # a transposed (non-contiguous) input
        t = mg.tensor(a).transpose(1, 0)
        same_bits(getattr(F, op)(t, axis=0)._data, getattr(np, op)(a.T, axis=0))


@LOW
def test_argmax_nan_and_zero_order(dtype):
    """The first NaN wins, zeros of both signs tie (first one), as NumPy's own loops."""
    rows = [[1, np.nan, 2, np.nan], [-0.0, 0.0, -0.0, 0.0], [0.0, -0.0, 0.0, -0.0],
            [-np.inf, -np.inf, -np.inf, -np.inf], [np.nan, np.inf, 1, np.nan],
            [3, 3, np.inf, np.inf]]
    a = np.array(rows, np.float32).astype(dtype)
    a = np.tile(a, (1, 200))  # wide enough for the vectorised casts
    for op in ("argmax", "argmin"):
        same_bits(getattr(F, op)(mg.tensor(a), axis=1)._data, getattr(np, op)(a, axis=1))
        y, i = getattr(F, op[3:])(mg.tensor(a), axis=1, return_indices=True)
        same_bits(i._data, getattr(np, op)(a, axis=1).astype(np.int64))
        same_bits(y._data, np.take_along_axis(a, getattr(np, op)(a, axis=1)[:, None], 1)[:, 0])


# ------------------------------------------------------------------------------- normalization
@LOW
@pytest.mark.parametrize("case", ["layer", "layer_affine", "group", "group_affine", "instance"])
def test_grouped_norms(case, dtype, f16c):
    x = data((4, 6, 9, 11), seed=80, specials=False) * 3
    if case == "layer":
        check_vs_wide(lambda a: F.layer_norm(a, (9, 11)), [x], dtype)
    elif case == "layer_affine":
        w, b = data((11,), seed=81, specials=False), data((11,), seed=82, specials=False)
        check_vs_wide(lambda a, w, b: F.layer_norm(a, (11,), w, b), [x, w, b], dtype)
    elif case == "group":
        check_vs_wide(lambda a: F.group_norm(a, 3), [data((4, 6, 9, 11), seed=83)], dtype)
    elif case == "group_affine":
        w = leaf(np.full(6, 1.5, np.float32))
        b = leaf(np.full(6, 0.1, np.float32))
        check_vs_wide(lambda a: F.group_norm(a, 2, w, b), [x], dtype)
    else:
        check_vs_wide(lambda a: F.instance_norm(a), [x], dtype)


@LOW
@pytest.mark.parametrize("case", ["train", "train_affine", "specials", "eval", "running"])
def test_batch_norm(case, dtype, f16c):
    x = data((4, 6, 9, 11), seed=84, specials=(case == "specials"))
    if case in ("train", "specials"):
        check_vs_wide(lambda a: F.batch_norm(a, None, None, training=True), [x], dtype)
    elif case == "train_affine":
        w, b = leaf(np.full(6, 1.5, np.float32)), leaf(np.full(6, 0.1, np.float32))
        check_vs_wide(lambda a: F.batch_norm(a, None, None, w, b, training=True), [x], dtype)
    elif case == "eval":
        rm = mg.tensor(np.full(6, 0.2, np.float32))
        rv = mg.tensor(np.full(6, 2.0, np.float32))
        check_vs_wide(lambda a: F.batch_norm(a, rm, rv, training=False), [x], dtype)
    else:  # the running statistics are updated with the same values
        stats = []

        def bn(a):
            rm, rv = mg.tensor(np.zeros(6, np.float32)), mg.tensor(np.ones(6, np.float32))
            stats.append((rm, rv))
            return F.batch_norm(a, rm, rv, training=True)

        check_vs_wide(bn, [x], dtype)
        (rm, rv), (rmw, rvw) = stats
        same_bits(rm._data, rmw._data)
        same_bits(rv._data, rvw._data)


# --------------------------------------------------------------------- sorting, scans, pooling
@LOW
@pytest.mark.parametrize("op", ["sort", "topk", "median", "kthvalue", "cummax", "cummin"])
def test_selections_keyed_in_float32(op, dtype):
    calls = {"sort": lambda x: F.sort(x, 1), "topk": lambda x: F.topk(x, 5, 1),
             "median": lambda x: F.median(x, 1), "kthvalue": lambda x: F.kthvalue(x, 3, 0),
             "cummax": lambda x: F.cummax(x, 1), "cummin": lambda x: F.cummin(x, 0)}
    check_vs_wide(calls[op], [ties(seed=90)], dtype)


@LOW
def test_adaptive_pools(dtype):
    check_vs_wide(lambda x: F.adaptive_max_pool2d(x, (4, 5)), [ties((4, 6, 9, 11), seed=91)],
                  dtype)
    check_vs_wide(lambda x: F.adaptive_avg_pool2d(x, (4, 5)), [data((4, 6, 9, 11), seed=92)],
                  dtype)


@LOW
def test_embedding_backward(dtype):
    ids = mg.tensor(np.random.default_rng(93).integers(0, 600, (50, 40)))
    check_vs_wide(lambda w: F.embedding(ids, w), [data((600, 16), seed=94)], dtype)
