"""The ops of AMP_REFERENCE section 1 added in issue 15: values against NumPy formulas written
here by hand, float64 gradient checks, the dtype each runs in under autocast, and the policy
table covering the whole reference list."""

import math

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp
from minigrad._backend import kernels, matmul_paths
from minigrad.amp import policy
from minigrad.autodiff import grad
from minigrad.testing import gradcheck, gradgradcheck

f16, f32, f64 = mg.float16, mg.float32, mg.float64

# --------------------------------------------------------------------------- the reference lists
# AMP_REFERENCE.md section 1, as data (upsample_* spelled out, "vector/matrix norms" named).
LOWER = """conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution
    prelu addmm addmv addr matmul einsum mm mv linear addbmm baddbmm bmm chain_matmul
    linalg_multi_dot lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
    scaled_dot_product_attention""".split()
FP32 = """acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow
    softplus layer_norm group_norm norm cosine_similarity poisson_nll_loss cosine_embedding_loss
    nll_loss hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss
    margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss
    multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp
    upsample_nearest upsample_linear upsample_bilinear upsample_bicubic
    upsample_trilinear""".split()
FP32_OUTPUT = "prod softmax log_softmax cumprod cumsum sum vector_norm matrix_norm".split()
PROMOTE = """addcdiv addcmul atan2 bilinear cross dot vdot grid_sample index_put tensordot
    scatter_add""".split()


@pytest.mark.parametrize("names,category", [(LOWER, "lower"), (FP32, "fp32"),
                                            (FP32_OUTPUT, "fp32"), (PROMOTE, "promote")])
def test_reference_list_is_covered(names, category):
    table = policy.table()
    wrong = {n: table.get(n) for n in names if table.get(n) != category}
    assert not wrong, f"rows missing or in the wrong category: {wrong}"
    missing = [n for n in names if not callable(getattr(F, n, None))]
    assert not missing, f"no minigrad.functional function for {missing}"


def test_every_new_function_has_a_row():
    assert policy.missing_rows() == []


# --------------------------------------------------------------------------- cases
R = np.random.default_rng(7)


def _r(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


def _np_cdist(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    return d.max(-1) if p == math.inf else (d ** p).sum(-1) ** (1 / p)


def _np_interp_linear(x, n_out):
    """1-D linear resize, align_corners=False, along the last axis (PyTorch's convention)."""
    n_in = x.shape[-1]
    src = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
    i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    return x[..., i0] * (1 - lam) + x[..., i1] * lam


def _np_conv3d(x, w, b):
    n, c, d, h, ww = x.shape
    o, _, kd, kh, kw = w.shape
    out = np.zeros((n, o, d - kd + 1, h - kh + 1, ww - kw + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            for k in range(out.shape[4]):
                patch = x[:, :, i:i + kd, j:j + kh, k:k + kw]
                out[:, :, i, j, k] = np.einsum("ncdhw,ocdhw->no", patch, w)
    return out + b[None, :, None, None, None]


def _np_conv_t1d(x, w, stride):
    n, ci, length = x.shape
    _, co, k = w.shape
    out = np.zeros((n, co, (length - 1) * stride + k))
    for i in range(length):
        out[:, :, i * stride:i * stride + k] += np.einsum("nc,cok->nok", x[:, :, i], w)
    return out


def _np_erfinv(y):
    # bisection on math.erf: slow, independent of the implementation under test
    out = []
    for v in y.reshape(-1):
        lo, hi = -6.0, 6.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        out.append((lo + hi) / 2)
    return np.array(out).reshape(y.shape)


def _huber(d, delta):
    a = np.abs(d)
    return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


S4 = np.sign(_r(4, 5)) + (np.sign(_r(4, 5)) == 0)
T_ML = np.array([[3, 0, -1, 1, 2], [1, 4, 2, -1, -1], [-1, 0, 0, 0, 0], [0, 1, 2, 3, 4]])
T_MM = np.array([0, 4, 2, 2])
IDX = (np.array([0, 2, 0]),)


def _multilabel_ref(x, t):
    n, c = x.shape
    out = []
    for i in range(n):
        labels = []
        for v in t[i]:
            if v < 0:
                break
            labels.append(v)
        others = [k for k in range(c) if k not in labels]
        out.append(sum(max(0.0, 1 - (x[i, j] - x[i, k])) for j in labels for k in others) / c)
    return np.array(out)


def _multi_margin_ref(x, t, w):
    n, c = x.shape
    return np.array([sum(max(0.0, 1 - x[i, t[i]] + x[i, k]) ** 2 * w[t[i]]
                         for k in range(c) if k != t[i]) / c for i in range(n)])


def _index_put_ref(x, v, acc):
    out = x.copy()
    if acc:
        np.add.at(out, IDX, v)
    else:
        out[IDX] = v
    return out


# name -> (function of Tensors, float64 inputs, NumPy reference of the same arrays)
CASES = {
    # lower precision
    "mm": (F.mm, [_r(3, 4), _r(4, 5)], lambda a, b: a @ b),
    "mv": (F.mv, [_r(3, 4), _r(4)], lambda a, b: a @ b),
    "addmm": (lambda c, a, b: F.addmm(c, a, b, beta=0.5, alpha=2.0),
              [_r(1, 5), _r(3, 4), _r(4, 5)], lambda c, a, b: 0.5 * c + 2 * a @ b),
    "addmv": (lambda c, a, b: F.addmv(c, a, b, beta=-1, alpha=3),
              [_r(3), _r(3, 4), _r(4)], lambda c, a, b: -c + 3 * a @ b),
    "addr": (lambda c, a, b: F.addr(c, a, b, alpha=0.5), [_r(3, 4), _r(3), _r(4)],
             lambda c, a, b: c + 0.5 * np.outer(a, b)),
    "addbmm": (lambda c, a, b: F.addbmm(c, a, b, beta=2), [_r(3, 5), _r(2, 3, 4), _r(2, 4, 5)],
               lambda c, a, b: 2 * c + sum(a[i] @ b[i] for i in range(2))),
    "baddbmm": (lambda c, a, b: F.baddbmm(c, a, b, alpha=-1),
                [_r(2, 3, 5), _r(2, 3, 4), _r(2, 4, 5)], lambda c, a, b: c - a @ b),
    "chain_matmul": (F.chain_matmul, [_r(2, 3), _r(3, 6), _r(6, 2)],
                     lambda a, b, c: a @ b @ c),
    "linalg_multi_dot": (lambda *m: F.linalg_multi_dot(m), [_r(3), _r(3, 6), _r(6, 2), _r(2)],
                         lambda a, b, c, d: a @ b @ c @ d),
    "conv3d": (lambda x, w, b: F.conv3d(x, w, b), [_r(1, 2, 3, 4, 3), _r(3, 2, 2, 2, 2), _r(3)],
               _np_conv3d),
    "conv_transpose1d": (lambda x, w: F.conv_transpose1d(x, w, stride=2),
                         [_r(2, 3, 4), _r(3, 2, 3)], lambda x, w: _np_conv_t1d(x, w, 2)),
    "conv_transpose3d": (lambda x, w: F.conv_transpose3d(x, w),
                         [_r(1, 2, 2, 2, 2), _r(2, 3, 2, 1, 1)], None),
    "convolution": (lambda x, w: F.convolution(x, w, None, 1, 0, 1, False, 0, 1),
                    [_r(1, 2, 3, 4, 3), _r(3, 2, 2, 2, 2)],
                    lambda x, w: _np_conv3d(x, w, np.zeros(3))),
    "rnn_relu_cell": (F.rnn_relu_cell, [_r(3, 4), _r(3, 5), _r(5, 4), _r(5, 5)],
                      lambda x, h, a, b: np.maximum(x @ a.T + h @ b.T, 0)),
    # float32
    "log2": (F.log2, [_r(3, 4, lo=0.2, hi=3)], np.log2),
    "log10": (F.log10, [_r(3, 4, lo=0.2, hi=3)], np.log10),
    "acos": (F.acos, [_r(3, 4, lo=-0.9, hi=0.9)], np.arccos),
    "asin": (F.asin, [_r(3, 4, lo=-0.9, hi=0.9)], np.arcsin),
    "cosh": (F.cosh, [_r(3, 4)], np.cosh),
    "sinh": (F.sinh, [_r(3, 4)], np.sinh),
    "tan": (F.tan, [_r(3, 4)], np.tan),
    "reciprocal": (F.reciprocal, [_r(3, 4, lo=0.3, hi=2)], lambda x: 1 / x),
    "erfinv": (F.erfinv, [_r(3, 4, lo=-0.99, hi=0.99)], _np_erfinv),
    "huber_loss": (lambda a, b: F.huber_loss(a, b, delta=0.5, reduction="none"),
                   [_r(4, 5), _r(4, 5)], lambda a, b: _huber(a - b, 0.5)),
    "poisson_nll_loss": (lambda a, b: F.poisson_nll_loss(a, b, reduction="sum"),
                         [_r(4, 5), _r(4, 5, lo=0, hi=3)], lambda a, b: (np.exp(a) - b * a).sum()),
    "hinge_embedding_loss": (lambda a: F.hinge_embedding_loss(a, S4, margin=0.5),
                             [_r(4, 5)],
                             lambda a: np.where(S4 == 1, a, np.maximum(0, 0.5 - a)).mean()),
    "margin_ranking_loss": (lambda a, b: F.margin_ranking_loss(a, b, S4, margin=0.1),
                            [_r(4, 5), _r(4, 5)],
                            lambda a, b: np.maximum(0, -S4 * (a - b) + 0.1).mean()),
    "soft_margin_loss": (lambda a: F.soft_margin_loss(a, S4), [_r(4, 5)],
                         lambda a: np.log1p(np.exp(-S4 * a)).mean()),
    "multilabel_margin_loss": (lambda a: F.multilabel_margin_loss(a, T_ML, reduction="none"),
                               [_r(4, 5)], lambda a: _multilabel_ref(a, T_ML)),
    "multi_margin_loss": (lambda a, w: F.multi_margin_loss(a, T_MM, p=2, weight=w,
                                                           reduction="none"),
                          [_r(4, 5), _r(5, lo=0.5, hi=1)],
                          lambda a, w: _multi_margin_ref(a, T_MM, w)),
    "triplet_margin_loss": (lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction="none"),
                            [_r(4, 5), _r(4, 5), _r(4, 5)],
                            lambda a, p, n: np.maximum(
                                np.linalg.norm(a - p + 1e-6, axis=1)
                                - np.linalg.norm(a - n + 1e-6, axis=1) + 1, 0)),
    "cosine_embedding_loss": (lambda a, b: F.cosine_embedding_loss(a, b, S4[:, 0],
                                                                   reduction="none"),
                              [_r(4, 5), _r(4, 5)],
                              lambda a, b: np.where(
                                  S4[:, 0] == 1,
                                  1 - (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1)),
                                  np.maximum((a * b).sum(1) / np.sqrt(
                                      (a * a).sum(1) * (b * b).sum(1)), 0))),
    "dist": (lambda a, b: F.dist(a, b, p=3), [_r(3, 4), _r(4)],
             lambda a, b: (np.abs(a - b) ** 3).sum() ** (1 / 3)),
    "pdist": (F.pdist, [_r(4, 3)], lambda a: np.array(
        [np.linalg.norm(a[i] - a[j]) for i in range(4) for j in range(i + 1, 4)])),
    "cdist": (lambda a, b: F.cdist(a, b, p=1), [_r(2, 3, 4), _r(2, 5, 4)],
              lambda a, b: _np_cdist(a, b, 1)),
    "renorm": (lambda a: F.renorm(a, 2, 0, 1.0), [_r(3, 4)],
               lambda a: a * np.where(np.linalg.norm(a, axis=1, keepdims=True) > 1,
                                      1 / (np.linalg.norm(a, axis=1, keepdims=True) + 1e-7), 1)),
    "upsample_nearest": (lambda x: F.upsample_nearest(x, scale_factor=2), [_r(1, 2, 3, 2)],
                         lambda x: x.repeat(2, axis=2).repeat(2, axis=3)),
    "upsample_linear": (lambda x: F.upsample_linear(x, size=7), [_r(1, 2, 4)],
                        lambda x: _np_interp_linear(x, 7)),
    "upsample_bilinear": (lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"),
                          [_r(1, 2, 3, 4)],
                          lambda x: _np_interp_linear(
                              _np_interp_linear(x, 3).swapaxes(2, 3), 5).swapaxes(2, 3)),
    "upsample_bicubic": (lambda x: F.upsample_bicubic(x, scale_factor=2), [_r(1, 1, 3, 3)],
                         None),
    "upsample_trilinear": (lambda x: F.upsample_trilinear(x, size=(3, 3, 3)),
                           [_r(1, 1, 2, 2, 2)], None),
    # float32 via the output dtype
    "cumprod": (lambda x: F.cumprod(x, dim=1), [_r(3, 5, lo=0.5, hi=1.5)],
                lambda x: np.cumprod(x, 1)),
    "vector_norm": (lambda x: F.vector_norm(x, 3, dim=1), [_r(3, 4)],
                    lambda x: (np.abs(x) ** 3).sum(1) ** (1 / 3)),
    "matrix_norm": (lambda x: F.matrix_norm(x, 1), [_r(2, 3, 4)],
                    lambda x: np.abs(x).sum(1).max(-1)),
    # promote
    "addcmul": (lambda a, b, c: F.addcmul(a, b, c, value=0.5), [_r(3, 4), _r(3, 4), _r(4)],
                lambda a, b, c: a + 0.5 * b * c),
    "addcdiv": (lambda a, b, c: F.addcdiv(a, b, c, value=2), [_r(3, 4), _r(3, 4),
                                                               _r(4, lo=0.5, hi=2)],
                lambda a, b, c: a + 2 * b / c),
    "atan2": (F.atan2, [_r(3, 4), _r(4)], np.arctan2),
    "bilinear": (F.bilinear, [_r(5, 3), _r(5, 4), _r(2, 3, 4), _r(2)],
                 lambda a, b, w, c: np.einsum("ni,oij,nj->no", a, w, b) + c),
    "cross": (lambda a, b: F.cross(a, b, dim=1), [_r(4, 3), _r(4, 3)],
              lambda a, b: np.cross(a, b)),
    "vdot": (F.vdot, [_r(6), _r(6)], np.dot),
    "grid_sample": (lambda x, g: F.grid_sample(x, g, align_corners=True),
                    [_r(1, 2, 3, 4), _r(1, 2, 2, 2, lo=-0.95, hi=0.95)], None),
    "index_put": (lambda x, v: F.index_put(x, IDX, v, accumulate=True), [_r(4, 5), _r(3, 5)],
                  lambda x, v: _index_put_ref(x, v, True)),
    "tensordot": (lambda a, b: F.tensordot(a, b, dims=([0, 2], [1, 0])),
                  [_r(4, 2, 3), _r(3, 4, 5)],
                  lambda a, b: np.tensordot(a, b, axes=([0, 2], [1, 0]))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values(name):
    fn, inputs, ref = CASES[name]
    if ref is None:
        pytest.skip("checked against PyTorch in test_against_torch")
    out = fn(*[mg.tensor(a) for a in inputs])
    np.testing.assert_allclose(out.numpy(), ref(*inputs), rtol=1e-7, atol=1e-9)
    assert out.dtype == f64


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, inputs, _ = CASES[name]
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("name", ["addmm", "huber_loss", "cdist", "cross", "upsample_bilinear",
                                  "grid_sample", "tensordot", "cosh", "erfinv", "cumprod"])
def test_double_backward(name):
    fn, inputs, _ = CASES[name]
    assert gradgradcheck(fn, inputs)


def test_composite_third_derivative():
    x = mg.tensor(np.array([0.3, 0.7]), requires_grad=True)
    y = F.addcmul(mg.tensor([2.0, 3.0]), x, x * x).sum()  # 2 + 3 + sum(x^3)
    (g,) = grad(y, [x], create_graph=True)
    (gg,) = grad(g.sum(), [x], create_graph=True)
    (ggg,) = grad(gg.sum(), [x])
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    np.testing.assert_allclose(gg.numpy(), 6 * x.numpy())
    np.testing.assert_allclose(ggg.numpy(), [6.0, 6.0])


def test_composite_backward_stays_inside_the_op():
    # The op's backward must not walk into (or free) the graph before it.
    w = mg.tensor(_r(3, 4), requires_grad=True)
    h = w * 2.0
    loss = F.huber_loss(h, mg.tensor(_r(3, 4)))
    loss.backward(retain_graph=True)
    g1 = w.grad.numpy().copy()
    w.grad = None
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), g1)


# --------------------------------------------------------------------------- autocast
def _category(name):
    return policy.get(name)


def _cast_inputs(name, inputs):
    """fp32 inputs for lower ops, fp16 for float32 ops, fp16 + fp32 for promote ops."""
    cat = _category(name)
    out = []
    for i, a in enumerate(inputs):
        if cat == "lower":
            dt = f32
        elif cat == "fp32":
            dt = f16
        else:
            dt = f16 if i == 0 else f32
        out.append(mg.tensor(a.astype(np.float32)).astype(dt))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_autocast_dtype(name):
    fn, inputs, _ = CASES[name]
    cat = _category(name)
    with amp.autocast(dtype="float16"):
        out = fn(*_cast_inputs(name, inputs))
    want = {"lower": f16, "fp32": f32, "promote": f32}[cat]
    assert out.dtype == want, (name, cat, out.dtype)


def test_autocast_backward_reaches_fp32_params_in_their_dtype():
    a = mg.tensor(_r(3, 4).astype(np.float32), requires_grad=True)
    b = mg.tensor(_r(4, 5).astype(np.float32), requires_grad=True)
    c = mg.tensor(_r(3, 5).astype(np.float32), requires_grad=True)
    with amp.autocast():
        y = F.addmm(c, a, b)
        assert y.dtype == f16
        loss = F.huber_loss(y, mg.zeros((3, 5)))
        assert loss.dtype == f32
    loss.backward()
    assert a.grad.dtype == f32 and b.grad.dtype == f32 and c.grad.dtype == f32
    ref = 2 * np.clip(y.numpy().astype(np.float64), -1, 1) / 15  # d huber / dy, delta = 1
    np.testing.assert_allclose(c.grad.numpy(), ref / 2, rtol=2e-2, atol=1e-3)


def test_inner_ops_run_in_the_rows_dtype():
    # A float32 composite must not let its inner primitives (sub, mul...) be lowered again.
    x = mg.tensor(np.full((8,), 300.0, np.float32)).astype(f16)
    with amp.autocast():
        d = F.huber_loss(x, mg.zeros(8, dtype=f16), reduction="sum", delta=1e4)
    assert d.dtype == f32 and d.item() == pytest.approx(8 * 0.5 * 300 ** 2)  # > fp16 max


# --------------------------------------------------------------------------- accumulation
def test_cumsum_fp16_ones_is_exact():
    y = F.cumsum(mg.ones(4096, dtype=f16), 0)
    assert y.dtype == f16 and y.numpy()[-1] == 4096 and y.numpy()[2047] == 2048


def test_cumprod_accumulates_in_fp32():
    x = np.full(64, 1.01, np.float16)
    y = F.cumprod(mg.tensor(x), 0)
    ref = np.cumprod(x.astype(np.float32)).astype(np.float16)
    assert y.dtype == f16
    np.testing.assert_array_equal(y.numpy(), ref)


def test_cumprod_gradient_with_zeros():
    x = np.array([[2.0, 0.0, 3.0, 0.0], [0.0, 1.5, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    assert gradcheck(lambda t: F.cumprod(t, 1), [x], eps=1e-7)


def test_fp16_dot_accumulates_in_fp32_and_rounds_once():
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, 8192).astype(np.float16)
    b = rng.uniform(0, 1, 8192).astype(np.float16)
    ref = np.float16(np.dot(a.astype(np.float32), b.astype(np.float32)))
    for out in (F.dot(mg.tensor(a), mg.tensor(b)), F.vdot(mg.tensor(a), mg.tensor(b)),
                F.matmul(mg.tensor(a), mg.tensor(b)),
                F.matmul(mg.tensor(a[None]), mg.tensor(b[:, None]))):
        assert out.dtype == f16
        assert out.numpy().reshape(()) == ref


@pytest.mark.parametrize("sa,sb,single", [((8,), (8,), True), ((1, 8), (8, 1), True),
                                          ((1, 8), (8,), True), ((8,), (8, 1), True),
                                          ((2, 8), (8,), False), ((8,), (8, 2), False),
                                          ((1, 1, 8), (8,), False), ((), (8,), False)])
def test_single_element_product_predicate(sa, sb, single):
    assert matmul_paths.is_single_element_product(sa, sb) is single


@pytest.mark.skipif(not mg.cuda.is_available(), reason="CuPy sees no GPU")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gpu_single_inner_product_accumulates_in_fp32(dtype):
    import cupy

    dt = mg._backend.normalize_dtype(dtype)
    rng = np.random.default_rng(4)
    a = rng.uniform(0, 1, 8192).astype(np.float32).astype(dt)
    b = rng.uniform(0, 1, 8192).astype(np.float32).astype(dt)
    ref = np.dot(a.astype(np.float32), b.astype(np.float32)).astype(dt)
    for sa, sb in (((8192,), (8192,)), ((1, 8192), (8192, 1))):
        with matmul_paths.record() as paths:
            y = kernels.matmul(cupy.asarray(a.reshape(sa)), cupy.asarray(b.reshape(sb)))
        assert paths == ["cupy-dot-fp32"]
        assert y.dtype == dt and cupy.asnumpy(y).reshape(()) == ref


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call,op", [
    (lambda: F.mm(mg.ones((2, 3)), mg.ones((2, 3))), "mm"),
    (lambda: F.addbmm(mg.ones((2, 2)), mg.ones((2, 2, 3)), mg.ones((3, 3, 2))), "addbmm"),
    (lambda: F.cdist(mg.ones((2, 3)), mg.ones((2, 4))), "cdist"),
    (lambda: F.huber_loss(mg.ones(3), mg.ones(3), reduction="avg"), "huber_loss"),
    (lambda: F.interpolate(mg.ones((1, 1, 4)), scale_factor=2, mode="bilinear"), "interpolate"),
    (lambda: F.cross(mg.ones((2, 4)), mg.ones((2, 4))), "cross"),
    (lambda: F.index_put(mg.ones((3,)), (np.array([5]),), mg.ones(1)), "index_put"),
    (lambda: F.linalg_multi_dot([mg.ones((2, 3)), mg.ones((2, 3))]), "linalg_multi_dot"),
    (lambda: F.matrix_norm(mg.ones((2, 2)), "nuc"), "matrix_norm"),
    (lambda: F.grid_sample(mg.ones((1, 1, 2, 2)), mg.ones((1, 2, 2, 3))), "grid_sample"),
])
def test_errors_name_the_op(call, op):
    with pytest.raises(ValueError, match=op):
        call()


# --------------------------------------------------------------------------- optional PyTorch
TORCH = {
    "conv_transpose3d": lambda t, x, w: t.nn.functional.conv_transpose3d(x, w),
    "upsample_bicubic": lambda t, x: t.nn.functional.interpolate(x, scale_factor=2,
                                                                 mode="bicubic"),
    "upsample_trilinear": lambda t, x: t.nn.functional.interpolate(x, size=(3, 3, 3),
                                                                   mode="trilinear"),
    "grid_sample": lambda t, x, g: t.nn.functional.grid_sample(x, g, align_corners=True),
    "multilabel_margin_loss": lambda t, x: t.nn.functional.multilabel_margin_loss(
        x, t.tensor(T_ML), reduction="none"),
    "erfinv": lambda t, x: t.erfinv(x),
}


@pytest.mark.parametrize("name", sorted(TORCH))
def test_against_torch(name):
    torch = pytest.importorskip("torch")
    fn, inputs, _ = CASES[name]
    ours = fn(*[mg.tensor(a) for a in inputs]).numpy()
    theirs = TORCH[name](torch, *[torch.tensor(a) for a in inputs]).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-9)


def test_composite_refuses_an_input_modified_in_place():
    x = mg.tensor(_r(3, 4), requires_grad=True)
    other = mg.tensor(_r(2, 4))
    y = F.cdist(x, other)
    other.add_(1.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


def test_upsample_weights_take_the_dtype_the_op_runs_in():
    x16 = mg.tensor(_r(1, 1, 3, 3).astype(np.float16))
    with amp.autocast():
        y = F.interpolate(x16, size=(4, 4), mode="bilinear", align_corners=True)
    ref = F.interpolate(x16.astype(f32), size=(4, 4), mode="bilinear", align_corners=True)
    assert y.dtype == f32
    np.testing.assert_array_equal(y.numpy(), ref.numpy())  # weights like 2/3 not rounded to fp16
    assert F.interpolate(x16, scale_factor=2).dtype == f16  # outside autocast: the input's dtype
