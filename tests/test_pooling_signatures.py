"""The pooling family against PyTorch's signatures, as one family.

Every functional pool takes PyTorch's arguments in PyTorch's positional order and honours each
one: ``max_pool1d/2d/3d`` (dilation, ceil_mode, return_indices), ``avg_pool1d/2d/3d``
(ceil_mode, count_include_pad, divisor_override), ``adaptive_max_pool1d/2d/3d``
(return_indices), ``lp_pool1d/2d/3d`` (ceil_mode) and ``max_unpool1d/2d/3d`` (output_size).
Values, dtypes, indices and gradients are compared with PyTorch; integer input is pooled where
PyTorch's CPU kernels pool it (with PyTorch's truncated integer mean) and refused where they
refuse it; invalid arguments raise errors naming the op. The nn layers give the same answers.
Skips without PyTorch.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.testing import gradcheck, gradgradcheck

F = mg.functional
torch = pytest.importorskip("torch")
TF = torch.nn.functional

_SIZES = {1: (9,), 2: (7, 6), 3: (5, 6, 4)}


def _input(rng, n, batch=(2, 3), dtype=np.float64):
    return rng.standard_normal(batch + _SIZES[n]).astype(dtype)


def _pair(lib, name, x, args, kw, grad):
    """``lib``'s ``name`` applied to ``x`` (and any array among ``args``, as ``lib``'s
    tensor); returns (outputs as a list, the input leaf)."""
    make, fns = (torch.tensor, TF) if lib is torch else (mg.tensor, F)
    leaf = make(x, requires_grad=grad)
    args = [make(a) if isinstance(a, np.ndarray) else a for a in args]
    out = getattr(fns, name)(leaf, *args, **kw)
    return (list(out) if isinstance(out, tuple) else [out]), leaf


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def agree(name, x, *args, rng=None, tol=None, **kw):
    """``F.name`` and ``torch.nn.functional.name`` agree on ``x``: every output's shape,
    dtype and values (indices exactly) and, for floating input, the input's gradient of a
    random cotangent. Returns minigrad's outputs."""
    grad = x.dtype.kind == "f"
    if tol is None:  # float16: PyTorch sums overlapping windows' gradients in float16
        tol = {np.float16: 1e-2, np.float32: 1e-5}.get(x.dtype.type, 1e-12)
    ours, leaf = _pair(mg, name, x, args, kw, grad)
    theirs, tleaf = _pair(torch, name, x, args, kw, grad)
    assert len(ours) == len(theirs), f"{name}: {len(ours)} outputs, PyTorch {len(theirs)}"
    for k, (a, b) in enumerate(zip(ours, theirs)):
        a_np, b_np = _np(a), _np(b)
        assert a_np.dtype == b_np.dtype, f"{name} output {k}: {a_np.dtype} vs {b_np.dtype}"
        exact = tol == 0 or a_np.dtype.kind in "iub"
        np.testing.assert_allclose(a_np, b_np, rtol=0 if exact else tol, atol=0 if exact else tol,
                                   equal_nan=True, err_msg=f"{name} output {k}")
    if grad:
        g = (rng or np.random.default_rng(0)).standard_normal(theirs[0].shape).astype(x.dtype)
        ours[0].backward(mg.tensor(g))
        theirs[0].backward(torch.tensor(g))
        np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=f"{name} gradient")
    return ours


def _raises_like_torch(call_mg, call_torch, match):
    """PyTorch refuses the call, and minigrad refuses it with a ValueError matching ``match``
    (which starts with the op's name)."""
    with pytest.raises((RuntimeError, ValueError, TypeError, NotImplementedError)):
        call_torch()
    with pytest.raises(ValueError, match=match):
        call_mg()


# ------------------------------------------------------------------ max pooling, every argument
# (n, positional args after the input, keyword args): PyTorch's order is kernel_size, stride,
# padding, dilation, ceil_mode, return_indices
MAX_CASES = [
    (1, (2,), {}),
    (1, (3, 2, 1), {}),
    (1, (3, 1, 1, 2), {}),
    (1, (2, 2, 1, 1, True), {}),
    (1, (3, 2, 1, 2, True, True), {}),
    (1, ((3,), (2,), (1,)), {"return_indices": True}),
    (1, (4, 2), {"ceil_mode": True, "return_indices": True}),  # a last, clipped window
    (1, (12,), {"ceil_mode": True}),  # a kernel longer than the input, by less than a stride
    (2, (2,), {}),
    (2, (2,), {"return_indices": True}),
    (2, (3, 2, 1), {"return_indices": True}),
    (2, (2,), {"dilation": 2, "stride": 1}),
    (2, (3, 2), {"ceil_mode": True}),
    (2, ((2, 3), (2, 1), (1, 0), (1, 2), True, True), {}),
    (2, (3, []), {}),  # stride=[]: PyTorch's "default" spelling
    (2, ((3,),), {"padding": (1,)}),  # one-element tuples, as PyTorch expands them
    (3, (2,), {}),
    (3, (3, 2, 1, 1, False, True), {}),
    (3, ((2, 3, 2), (2, 1, 2), (1, 1, 0), (1, 1, 2), True, True), {}),
    (3, (2, 1, 1, 2), {"ceil_mode": True}),
    (3, (7, None, 1), {"ceil_mode": True, "return_indices": True}),
]


def _case_id(case):
    n, args, kw = case
    return f"{n}d-" + "-".join(map(str, args)) + "".join(f"-{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("case", MAX_CASES, ids=_case_id)
def test_max_pool_arguments_agree_with_pytorch(rng, case):
    n, args, kw = case
    x = _input(rng, n)
    agree(f"max_pool{n}d", x, *args, rng=rng, **kw)
    agree(f"max_pool{n}d", x[0], *args, rng=rng, **kw)  # unbatched


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_max_pool_low_precision_and_float32(rng, n, dtype):
    x = _input(rng, n, dtype=dtype)
    out = agree(f"max_pool{n}d", x, 3, 2, 1, 2, True, True, rng=rng)
    assert out[0].dtype == dtype and out[1].dtype == np.int64


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_pool_indices_follow_pytorchs_rules_at_nan_and_lowest_values(rng, n):
    """Indices (and the gradient with them) point where PyTorch's do: the first maximum, the
    last NaN of a window holding NaN, and never the padding, also where every input element
    of a window is -inf (PyTorch keeps the window's first input element)."""
    for trial in range(6):
        x = _input(rng, n, batch=(2, 2))
        u = rng.random(x.shape)
        x[u < 0.15] = np.nan
        x[(u >= 0.15) & (u < 0.6)] = -np.inf
        x[..., :2] = -np.inf  # whole windows at the border: -inf beside the padding
        for args in [(2,), (3, 1, 1), (2, 2, 1, 1, True), (2, 1, 1, 2)]:
            agree(f"max_pool{n}d", x, *args, return_indices=True, rng=rng)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8])
def test_max_pool_integer_input(rng, n, dtype):
    """PyTorch's CPU max_pool2d/3d pool integers (the result keeps the dtype); a window of
    the dtype's minimum beside the padding reports its first input element."""
    info = np.iinfo(dtype)
    x = rng.choice([info.min, info.min, info.min + 1, 0, 5, info.max], size=(2, 2) + _SIZES[n])
    x = x.astype(dtype)
    for args, kw in [((2,), {}), ((3, 1, 1), {"return_indices": True}),
                     ((2, 2, 1, 2, True, True), {})]:
        out = agree(f"max_pool{n}d", x, *args, **kw)
        assert out[0].dtype == dtype


def test_max_pool1d_integers_only_with_return_indices():
    """PyTorch's max_pool1d refuses integers, except with return_indices (then it runs
    max_pool2d's kernel); minigrad follows both halves of the rule."""
    x = np.arange(12).reshape(1, 2, 6) - 5
    _raises_like_torch(lambda: F.max_pool1d(mg.tensor(x), 2),
                       lambda: TF.max_pool1d(torch.tensor(x), 2), "max_pool1d.*floating")
    out = agree("max_pool1d", x, 3, 2, 1, 1, True, True)
    assert out[0].dtype == np.int64


@pytest.mark.parametrize("n", [1, 3])
def test_max_pool_refuses_bool_as_pytorch(n):
    x = np.ones((1, 1) + (4,) * n, bool)
    for kw in ({}, {"return_indices": True}):
        _raises_like_torch(lambda: getattr(F, f"max_pool{n}d")(mg.tensor(x), 2, **kw),
                           lambda: getattr(TF, f"max_pool{n}d")(torch.tensor(x), 2, **kw),
                           f"max_pool{n}d.*bool")


def test_max_pool_indices_feed_max_unpool(rng):
    """The indices of every geometry (dilation, ceil_mode, padding) are what max_unpool and
    PyTorch's max_unpool take."""
    for n in (1, 2, 3):
        x = _input(rng, n)
        y, idx = getattr(F, f"max_pool{n}d")(mg.tensor(x), 3, 2, 1, 1, True, True)
        yt, it = getattr(TF, f"max_pool{n}d")(torch.tensor(x), 3, 2, 1, 1, True, True)
        np.testing.assert_array_equal(idx.numpy(), it.numpy())
        size = x.shape[2:]
        back = getattr(F, f"max_unpool{n}d")(y, idx, 3, 2, 1, size)
        ref = getattr(TF, f"max_unpool{n}d")(yt, it, 3, 2, 1, size)
        np.testing.assert_array_equal(back.numpy(), ref.numpy())


# ------------------------------------------------------------ average pooling, every argument
# PyTorch's order: kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
# (avg_pool1d has no divisor_override)
AVG_CASES = [
    (1, (2,), {}),
    (1, (3, 2, 1), {}),
    (1, (3, 2, 1, True), {}),
    (1, (3, 2, 1, True, False), {}),
    (1, (4, 3, 2), {"ceil_mode": True, "count_include_pad": False}),
    (2, (2,), {}),
    (2, (3, 2, 1), {"count_include_pad": False}),
    (2, (3, 2, 1, True), {}),
    (2, (3, 2, 1, True, False), {}),
    (2, (2, None, 1, False, True, 3), {}),
    (2, ((2, 3), (2, 1), (1, 1), True, True, -5), {}),
    (2, (4, 2), {"ceil_mode": True}),  # a last, clipped window
    (2, (9,), {"ceil_mode": True}),  # a kernel larger than the input, by less than a stride
    (1, (10, None, 1), {"ceil_mode": True, "count_include_pad": False}),
    (3, (2,), {}),
    (3, (3, 2, 1, True, False), {}),
    (3, ((2, 3, 2), (2, 1, 2), (1, 1, 0), True, True, 7), {}),
]


@pytest.mark.parametrize("case", AVG_CASES, ids=_case_id)
def test_avg_pool_arguments_agree_with_pytorch(rng, case):
    n, args, kw = case
    x = _input(rng, n)
    agree(f"avg_pool{n}d", x, *args, rng=rng, **kw)
    agree(f"avg_pool{n}d", x[0], *args, rng=rng, **kw)


def test_avg_pool1d_has_no_divisor_override_as_pytorch(rng):
    x = _input(rng, 1)
    with pytest.raises(TypeError):
        TF.avg_pool1d(torch.tensor(x), 2, 2, 0, False, True, 3)
    with pytest.raises(TypeError):
        F.avg_pool1d(mg.tensor(x), 2, 2, 0, False, True, 3)


@pytest.mark.parametrize("case", AVG_CASES, ids=_case_id)
def test_avg_pool_int64_truncates_as_pytorch(rng, case):
    """PyTorch's CPU avg_pool1d/2d/3d average int64 input to int64: the exact sum divided with
    C's integer division, so a mean is truncated toward zero (-3.5 -> -3, 2.75 -> 2), with
    the window size, the in-input count or divisor_override (negative ones too)."""
    n, args, kw = case
    x = rng.integers(-40, 40, (2, 3) + _SIZES[n])
    out = agree(f"avg_pool{n}d", x, *args, **kw)
    assert out[0].dtype == np.int64


def test_avg_pool_int64_hand_values():
    x = mg.tensor([[[0, 1, 2, 4, -1, -2, -3, -5, 7, 8, -7, 0]]])
    # means 0.5, 3, -1.5, -4, 7.5, -3.5: truncated toward zero, not floored or rounded
    np.testing.assert_array_equal(F.avg_pool1d(x, 2).numpy(), [[[0, 3, -1, -4, 7, -3]]])
    two = mg.tensor([[[[3, 4], [0, 0]]]])
    assert F.avg_pool2d(two, 2, divisor_override=-2).item() == -3  # 7 / -2 = -3.5 -> -3
    # the sum is exact in int64 (a float64 mean would round 2**60 + 2 away)
    big = mg.tensor([[[[2 ** 60 + 1, 2 ** 60 + 3]]]])
    assert F.avg_pool2d(big, (1, 2)).item() == 2 ** 60 + 2


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.uint8, np.bool_])
def test_avg_pool_refuses_other_integers_as_pytorch(n, dtype):
    x = np.ones((1, 1) + (4,) * n, dtype)
    _raises_like_torch(lambda: getattr(F, f"avg_pool{n}d")(mg.tensor(x), 2),
                       lambda: getattr(TF, f"avg_pool{n}d")(torch.tensor(x), 2),
                       f"avg_pool{n}d: expects a floating tensor")


@pytest.mark.parametrize("n", [1, 2])
def test_avg_pool_low_precision(rng, n):
    x = _input(rng, n, dtype=np.float16)
    out = agree(f"avg_pool{n}d", x, 3, 2, 1, True, False, rng=rng)
    assert out[0].dtype == np.float16


# -------------------------------------------------------------------------- the nn layers
LAYER_CASES = [
    "nn.MaxPool1d(3, 2, 1, 2, True, True)",
    "nn.MaxPool2d((2, 3), (2, 1), (1, 0), (1, 2), return_indices=True, ceil_mode=True)",
    "nn.MaxPool3d(3, 2, 1, ceil_mode=True)",
    "nn.AvgPool1d(3, 2, 1, True, False)",
    "nn.AvgPool2d(3, 2, 1, True, True, 5)",
    "nn.AvgPool3d(3, 2, 1, ceil_mode=True, count_include_pad=False)",
]


@pytest.mark.parametrize("src", LAYER_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_layers_agree_with_pytorch_and_their_functions(rng, src, dtype):
    """A layer is its F function with the layer's arguments: the same values as the function
    and as PyTorch's layer, for float and int64 input (or the same refusal)."""
    n = int(src.split("(")[0][-2])
    x = _input(rng, n) if dtype == np.float64 else rng.integers(-9, 9, (2, 3) + _SIZES[n])
    ours, theirs = eval(src, {"nn": nn}), eval(src, {"nn": torch.nn})  # noqa: S307
    try:
        want = theirs(torch.tensor(x))
    except (RuntimeError, NotImplementedError):  # max_pool1d of integers without indices
        with pytest.raises(ValueError, match="floating"):
            ours(mg.tensor(x))
        return
    got = ours(mg.tensor(x))
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for a, b in zip(got, want):
        assert a.dtype == b.numpy().dtype
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("src", LAYER_CASES)
def test_layers_run_their_functions(rng, monkeypatch, src):
    """One mechanism: each layer's forward is a call of its F function."""
    name = src.split("(")[0][3:].replace("Pool", "_pool").lower()
    calls = []
    real = getattr(F, name)
    monkeypatch.setattr(F, name, lambda *a, **kw: calls.append(1) or real(*a, **kw))
    n = int(name[-2])
    eval(src, {"nn": nn})(mg.tensor(_input(rng, n)))  # noqa: S307
    assert calls == [1]


def test_max_pool1d_layer_refuses_integers_without_indices_as_pytorch():
    x = np.arange(8).reshape(1, 1, 8)
    _raises_like_torch(lambda: nn.MaxPool1d(2)(mg.tensor(x)),
                       lambda: torch.nn.MaxPool1d(2)(torch.tensor(x)), "max_pool1d")
    got = nn.MaxPool1d(2, return_indices=True)(mg.tensor(x))
    want = torch.nn.MaxPool1d(2, return_indices=True)(torch.tensor(x))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


# ------------------------------------------------------ adaptive max, lp and unpool arguments
@pytest.mark.parametrize("n,size", [(1, 4), (2, (3, 4)), (3, (2, 3, None))])
def test_adaptive_max_pool_return_indices_positional(rng, n, size):
    x = _input(rng, n)
    out = agree(f"adaptive_max_pool{n}d", x, size, True, rng=rng)
    assert out[1].dtype == np.int64
    agree(f"adaptive_max_pool{n}d", x, size, rng=rng)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_adaptive_pools_refuse_integers_as_pytorch(n):
    x = np.ones((1, 1) + (4,) * n, np.int64)
    for kind in ("avg", "max"):
        op = f"adaptive_{kind}_pool{n}d"
        _raises_like_torch(lambda: getattr(F, op)(mg.tensor(x), 2),
                           lambda: getattr(TF, op)(torch.tensor(x), 2), f"{op}.*floating")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lp_pool_ceil_mode_positional(rng, n):
    x = np.abs(_input(rng, n)) + 0.5
    kernel = (3, (3, 2), (2, 3, 2))[n - 1]
    agree(f"lp_pool{n}d", x, 2.0, kernel, 2, True, rng=rng, tol=1e-10)
    agree(f"lp_pool{n}d", x, 3, kernel, None, False, rng=rng, tol=1e-10)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lp_pool_of_int64_as_pytorch(rng, n):
    """An int64 input to the power of an int norm stays int64, so PyTorch's average inside
    lp_pool truncates; a float norm makes it float32. Both are followed."""
    x = rng.integers(1, 9, (2, 3) + _SIZES[n])
    for norm in (2, 2.0):
        out = agree(f"lp_pool{n}d", x, norm, 2, tol=1e-6)
        assert out[0].dtype == np.float32


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_output_size_positional(rng, n):
    x = _input(rng, n)
    _, it = getattr(TF, f"max_pool{n}d")(torch.tensor(x), 2, 2, 0, 1, False, True)
    y = rng.standard_normal(tuple(it.shape))
    size = tuple(2 * s + 1 for s in it.shape[2:])  # within a stride of the default size
    agree(f"max_unpool{n}d", y, it.numpy(), 2, 2, 0, size, rng=rng)
    agree(f"max_unpool{n}d", y, it.numpy(), 2, None, 0, (2, 3) + size, rng=rng)


# ---------------------------------------------------------------------------- error cases
ERROR_CASES = [
    ("max_pool2d", (2,), {"padding": 2}, "padding must be at most half"),
    ("max_pool2d", (3,), {"padding": 2, "dilation": 2}, "padding must be at most half"),
    ("max_pool1d", (3,), {"padding": 2, "dilation": 2}, "padding must be at most half"),
    ("max_pool3d", (3,), {"padding": 2, "dilation": 2}, "padding must be at most half"),
    ("avg_pool1d", (3,), {"padding": 2}, "padding must be at most half"),
    ("avg_pool3d", (2,), {"padding": 2}, "padding must be at most half"),
    ("max_pool2d", (2,), {"stride": 0}, "kernel_size and stride must be >= 1"),
    ("max_pool3d", (2,), {"dilation": 0}, "dilation >= 1"),
    ("avg_pool2d", (0,), {}, "kernel_size and stride must be >= 1"),
    ("max_pool1d", (2,), {"padding": -1}, "padding >= 0"),
    ("max_pool2d", (9,), {}, "output size .* is not positive"),
    ("max_pool2d", (4, 2), {"dilation": 3}, "output size .* is not positive"),
    ("max_pool3d", (9, 2), {"ceil_mode": True}, "output size .* is not positive"),
    # PyTorch's avg_pool3d (alone) wants the kernel inside the unpadded input
    ("avg_pool3d", (6, 1, 1), {}, "the kernel must fit in the unpadded input"),
    ("avg_pool3d", (9,), {"ceil_mode": True}, "the kernel must fit in the unpadded input"),
    ("avg_pool2d", (2,), {"divisor_override": 0}, "divisor_override must be a non-zero int"),
    ("avg_pool3d", (2,), {"divisor_override": 2.5}, "divisor_override must be a non-zero int"),
    ("max_pool2d", ((2, 2, 2),), {}, "kernel_size must be an int or a tuple of 2 ints"),
]


@pytest.mark.parametrize("op,args,kw,match", ERROR_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ERROR_CASES)])
def test_invalid_arguments_are_refused_as_pytorch_does(op, args, kw, match):
    """Each refusal is a ValueError naming the op, what is wrong and the values (``name=``)."""
    n = int(op[-2])
    x = np.zeros((1, 2) + (5,) * n)
    _raises_like_torch(lambda: getattr(F, op)(mg.tensor(x), *args, **kw),
                       lambda: getattr(TF, op)(torch.tensor(x), *args, **kw),
                       rf"^{op}: .*{match}.*\w+=")


@pytest.mark.parametrize("op", ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
                                "avg_pool2d", "avg_pool3d"])
def test_empty_inputs_as_pytorch(op):
    """Only the batch may be empty (PyTorch refuses empty channels or spatial sizes); the
    input's rank is checked, naming the layouts."""
    n = int(op[-2])
    empty_batch = np.zeros((0, 2) + (4,) * n)
    agree(op, empty_batch, 2)
    no_channels = np.zeros((1, 0) + (4,) * n)
    _raises_like_torch(lambda: getattr(F, op)(mg.tensor(no_channels), 2),
                       lambda: getattr(TF, op)(torch.tensor(no_channels), 2),
                       f"^{op}: channel and spatial sizes must be positive")
    wrong_rank = np.zeros((4,) * (n + 3))
    _raises_like_torch(lambda: getattr(F, op)(mg.tensor(wrong_rank), 2),
                       lambda: getattr(TF, op)(torch.tensor(wrong_rank), 2),
                       rf"^{op}: expected input \(N, C")


# ------------------------------------------------------------- float64 gradchecks, new paths
GRAD_CASES = [
    ("max_pool1d", (3, 2, 1, 2, True)),
    ("max_pool2d", ((2, 3), (2, 1), (1, 0), (1, 2), True)),
    ("max_pool2d", (3, 2, 1, 1, False, True)),
    ("max_pool3d", (3, 2, 1, (1, 2, 1), True)),
    ("avg_pool1d", (3, 2, 1, True, False)),
    ("avg_pool2d", (3, 2, 1, True, True, -5)),
    ("avg_pool2d", ((3, 2), (2, 1), (1, 1), True, False)),
    ("avg_pool3d", (3, 2, 1, True, False, 3)),
]


@pytest.mark.parametrize("op,args", GRAD_CASES, ids=[f"{o}-{i}" for i, (o, _) in
                                                      enumerate(GRAD_CASES)])
def test_gradcheck_and_double_backward(rng, op, args):
    n = int(op[-2])
    x = rng.standard_normal((1, 2) + _SIZES[n])
    def fn(t):
        out = getattr(F, op)(t, *args)
        return out[0] if isinstance(out, tuple) else out

    assert gradcheck(fn, [x])
    assert gradgradcheck(lambda t: fn(t) ** 2, [x[:, :1]])


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_max_pool_gradient_at_nan_windows_without_indices(rng, n, dtype):
    """Without return_indices too, a window holding NaN sends its gradient to its last NaN,
    as PyTorch's does (the CPU re-scans only when a NaN reached the output)."""
    for trial in range(4):
        x = _input(rng, n, batch=(2, 2)).astype(dtype)
        x[rng.random(x.shape) < 0.1] = np.nan
        for args in [(2,), (3, 1, 1), (2, 3, 0, 1, True)]:
            t = mg.tensor(x, requires_grad=True)
            getattr(F, f"max_pool{n}d")(t, *args).sum().backward()
            tt = torch.tensor(x.astype(np.float32), requires_grad=True)
            getattr(TF, f"max_pool{n}d")(tt, *args).sum().backward()
            np.testing.assert_array_equal(t.grad.numpy().astype(np.float32), tt.grad.numpy())
