"""conv1d, conv2d, conv_transpose2d: loop references, float64 gradchecks, low precision."""

import contextlib

import numpy as np
import pytest

import minigrad as mg
from minigrad._backend import cudnn_conv, kernels, matmul_paths
from minigrad.functional import _conv_kernels
from minigrad.functional.conv import conv1d, conv2d, conv_transpose2d
from minigrad.functional.conv_nd import conv3d, conv_transpose3d, convolution
from minigrad.testing import gradcheck, gradgradcheck


@pytest.fixture(autouse=True, params=["full_width", "batch_inner"])
def im2col_layout(request, monkeypatch):
    """Run every test with each im2col layout (full width is possible at stride 1 only)."""
    waste = float("inf") if request.param == "full_width" else -1.0
    monkeypatch.setattr(_conv_kernels, "_FULL_WIDTH_MAX_WASTE", waste)
    return request.param


@pytest.fixture(autouse=True)
def im2col_path():
    """Pin the im2col + GEMM path (these tests spy on it): on a GPU with cuDNN every conv would
    otherwise go to cuDNN. ``test_cudnn_path`` turns cuDNN back on."""
    prev = cudnn_conv.set_enabled(False)
    yield
    cudnn_conv.set_enabled(prev)


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv2d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct loop over output pixels (tiny shapes only)."""
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    y = np.zeros((n, o, oh, ow))
    for co in range(o):
        g = co // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg, i * sh:i * sh + dh * (kh - 1) + 1:dh,
                           j * sw:j * sw + dw * (kw - 1) + 1:dw]
                y[:, co, i, j] = (patch * w[co]).sum(axis=(1, 2, 3))
    return y if b is None else y + b[None, :, None, None]


def conv_transpose2d_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                         dilation=1):
    """Scatter every input pixel through the kernel (tiny shapes only)."""
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    oph, opw = pair(output_padding)
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    full = np.zeros((n, og * groups, oh + 2 * ph + sh + dh * kh, ow + 2 * pw + sw + dw * kw))
    for ci in range(c):
        g = ci // cg
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for e in range(kw):
                        full[:, g * og:(g + 1) * og, i * sh + a * dh, j * sw + e * dw] += \
                            x[:, ci, i, j][:, None] * w[ci, :, a, e][None]
    y = full[:, :, ph:ph + oh, pw:pw + ow]
    return y if b is None else y + b[None, :, None, None]


def t(a, device, **kw):
    return mg.tensor(np.asarray(a), device=device, **kw)


CONV_CASES = [{}, {"stride": 2}, {"padding": 1}, {"dilation": 2}, {"groups": 2},
              {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2},
              {"stride": 3, "padding": 2, "groups": 4},
              {"padding": (1, 2), "dilation": (2, 1), "groups": 2}]


@pytest.mark.parametrize("kw", CONV_CASES)
def test_conv2d_values(device, rng, kw):
    g = kw.get("groups", 1)
    x, w, b = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((8, 4 // g, 3, 2)), \
        rng.standard_normal(8)
    y = conv2d(t(x, device), t(w, device), t(b, device), **kw)
    np.testing.assert_allclose(y.numpy(), conv2d_ref(x, w, b, **kw), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kw", CONV_CASES)
def test_conv2d_gradcheck(device, rng, kw):
    g = kw.get("groups", 1)
    args = [rng.standard_normal((1, 4, 5, 5)), rng.standard_normal((4, 4 // g, 3, 2)),
            rng.standard_normal(4)]
    assert gradcheck(lambda x, w, b: conv2d(x, w, b, **kw), args, device=device)


TRANSPOSE_CASES = [{}, {"stride": 2}, {"stride": 2, "padding": 1, "output_padding": 1},
                   {"stride": 3, "dilation": 2, "output_padding": 2, "groups": 2},
                   {"stride": (2, 1), "padding": (1, 0), "output_padding": (1, 0), "groups": 2}]


@pytest.mark.parametrize("kw", TRANSPOSE_CASES)
def test_conv_transpose2d_values_and_grad(device, rng, kw):
    g = kw.get("groups", 1)
    x, w, b = rng.standard_normal((2, 4, 4, 3)), rng.standard_normal((4, 6 // g, 3, 2)), \
        rng.standard_normal(6)
    y = conv_transpose2d(t(x, device), t(w, device), t(b, device), **kw)
    ref = conv_transpose2d_ref(x, w, b, **kw)
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-12)
    args = [rng.standard_normal((1, 4, 3, 3)), rng.standard_normal((4, 2 // g, 3, 2)),
            rng.standard_normal(2)]
    assert gradcheck(lambda x, w, b: conv_transpose2d(x, w, b, **kw), args, device=device)


def test_conv_transpose_is_adjoint_of_conv(device, rng):
    # <conv2d(x, w), y> == <x, conv_transpose2d(y, w)> with matching geometry.
    x, w = rng.standard_normal((2, 4, 7, 7)), rng.standard_normal((6, 2, 3, 3))
    kw = {"stride": 2, "padding": 1, "groups": 2}
    y = conv2d(t(x, device), t(w, device), **kw).numpy()
    r = rng.standard_normal(y.shape)
    xt = conv_transpose2d(t(r, device), t(w, device), **kw).numpy()
    assert xt.shape == x.shape
    assert (y * r).sum() == pytest.approx((x * xt).sum(), rel=1e-10)


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}])
def test_conv1d(device, rng, kw):
    g = kw.get("groups", 1)
    x, w, b = rng.standard_normal((2, 4, 9)), rng.standard_normal((6, 4 // g, 3)), \
        rng.standard_normal(6)
    y = conv1d(t(x, device), t(w, device), t(b, device), **kw)
    assert y.creator is None and y.shape[:2] == (2, 6)
    ref = conv2d_ref(x[:, :, None], w[:, :, None], b, stride=(1, kw.get("stride", 1)),
                     padding=(0, kw.get("padding", 0)), dilation=(1, kw.get("dilation", 1)),
                     groups=g)[:, :, 0]
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-12)
    assert gradcheck(lambda x, w, b: conv1d(x, w, b, **kw), [x[:1], w, b], device=device)


def test_double_backward(device, rng):
    assert gradgradcheck(lambda x, w: conv2d(x, w, stride=2, padding=1),
                         [rng.standard_normal((1, 2, 4, 4)), rng.standard_normal((2, 2, 3, 3))],
                         device=device)
    assert gradgradcheck(lambda x, w: conv_transpose2d(x, w, stride=2, output_padding=1),
                         [rng.standard_normal((1, 2, 2, 3)), rng.standard_normal((2, 2, 2, 2))],
                         device=device)


def test_backward_ops_and_skipped_input_grad(device, rng):
    x = t(rng.standard_normal((2, 1, 6, 6)), device)  # first layer: no data gradient needed
    w = t(rng.standard_normal((3, 1, 3, 3)), device, requires_grad=True)
    y = conv2d(x, w)
    assert y.creator.name == "conv2d"
    y.backward(mg.ones_like(y))
    assert x.grad is None
    ref = np.stack([x.numpy()[:, 0, i:i + 4, j:j + 4].sum() for i in range(3) for j in range(3)])
    np.testing.assert_allclose(w.grad.numpy(), np.tile(ref.reshape(1, 1, 3, 3), (3, 1, 1, 1)),
                               rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("early_upcast", [False, True])
def test_low_precision(device, rng, monkeypatch, dtype, early_upcast):
    # Both ways of reaching fp32 accumulation: kernels.matmul on narrow operands, or operands
    # upcast before im2col where _backend reports that it emulates low precision.
    monkeypatch.setattr(kernels, "emulates_low_precision", lambda a: early_upcast,
                        raising=False)
    seen = []
    real = kernels.matmul_accumulator

    def spy(a, b):
        seen.append((a.dtype, b.dtype))
        return real(a, b)

    monkeypatch.setattr(kernels, "matmul_accumulator", spy)
    x = t(rng.standard_normal((2, 4, 6, 6)), device).astype(dtype).requires_grad_()
    w = t(rng.standard_normal((6, 2, 3, 3)) * 0.3, device).astype(dtype).requires_grad_()
    b = t(rng.standard_normal(6), device).astype(dtype).requires_grad_()
    with matmul_paths.record() as paths:
        y = conv2d(x, w, b, padding=1, groups=2)
    assert y.dtype == x.dtype
    if device == "cpu" and not early_upcast:  # never NumPy's native fp16 matmul
        assert paths[-1] == "cpu-emulated-fp32-accumulate"
    ref = conv2d_ref(*(np.asarray(a.numpy(), np.float64) for a in (x, w, b)), padding=1,
                     groups=2)
    tol = 1e-2 if dtype == "float16" else 6e-2
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref, rtol=tol, atol=tol)
    assert seen and all(d == (np.float32 if early_upcast else x.dtype) for pair_ in seen
                        for d in pair_)
    y.backward(mg.ones_like(y))
    assert x.grad.dtype == x.dtype and w.grad.dtype == w.dtype and b.grad.dtype == b.dtype
    x64, w64 = (mg.tensor(np.asarray(a.numpy(), np.float64), requires_grad=True) for a in (x, w))
    conv2d(x64, w64, padding=1, groups=2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), x64.grad.numpy(),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(w.grad.numpy().astype(np.float64), w64.grad.numpy(),
                               rtol=tol, atol=tol * 4)


def test_conv_transpose_fp16_output_dtype(device, rng):
    x = t(rng.standard_normal((1, 2, 3, 3)), device).astype("float16")
    w = t(rng.standard_normal((2, 3, 3, 3)), device).astype("float16")
    y = conv_transpose2d(x, w, stride=2, output_padding=1)
    assert y.dtype == np.float16 and y.shape == (1, 3, 8, 8)
    ref = conv_transpose2d_ref(x.numpy().astype(np.float64), w.numpy().astype(np.float64),
                               stride=2, output_padding=1)
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref, rtol=1e-2, atol=1e-2)


def test_layout_choice():
    def layout(x_shape, w_shape, out_hw, stride=(1, 1), padding=(0, 0)):
        geo = _conv_kernels._Geometry(x_shape, w_shape, out_hw, stride, padding, (1, 1), 1)
        return type(geo.layout()).__name__

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_conv_kernels, "_FULL_WIDTH_MAX_WASTE", 0.25)
        assert layout((64, 1, 32, 32), (6, 1, 5, 5), (28, 28)) == "_FullWidth"  # 14% waste
        assert layout((64, 6, 14, 14), (16, 6, 5, 5), (10, 10)) == "_BatchInner"  # 40%
        assert layout((8, 3, 32, 32), (8, 3, 3, 3), (16, 16), stride=(2, 2),
                      padding=(1, 1)) == "_BatchInner"


def test_weight_grad_with_kept_columns(device, rng, monkeypatch):
    # Keeping the forward's im2col matrix for the weight gradient changes nothing but speed,
    # is skipped for a frozen weight, and is freed with the graph.
    x = rng.standard_normal((2, 4, 7, 6))
    w0, gy = rng.standard_normal((6, 2, 3, 3)), rng.standard_normal((2, 6, 7, 6))
    grads = []
    for keep_limit in (0, 1 << 30):
        monkeypatch.setattr(kernels, "im2col_keep_bytes", lambda a, limit=keep_limit: limit)
        w = t(w0, device, requires_grad=True)
        y = conv2d(t(x, device), w, padding=1, groups=2)
        assert len(y.creator.saved) == (3 if keep_limit else 2)
        assert len(conv2d(t(x, device, requires_grad=True), w.detach(), padding=1,
                          groups=2).creator.saved) == 2
        y.backward(t(gy, device))
        assert y.creator.saved is None
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_errors(device):
    x = t(np.ones((1, 4, 5, 5)), device)
    with pytest.raises(ValueError, match=r"conv2d: expected input \(N, C, H, W\).*\(5, 5\)"):
        conv2d(t(np.ones((5, 5)), device), t(np.ones((2, 4, 3, 3)), device))
    # unbatched (C, H, W) input is computed as a batch of one, as PyTorch does
    w = t(np.ones((2, 4, 3, 3)), device)
    np.testing.assert_array_equal(conv2d(t(np.ones((4, 5, 5)), device), w).numpy(),
                                  conv2d(x, w).numpy()[0])
    with pytest.raises(ValueError, match=r"conv2d: channel mismatch.*input=\(1, 4, 5, 5\), "
                                         r"weight=\(2, 3, 3, 3\), groups=1"):
        conv2d(x, t(np.ones((2, 3, 3, 3)), device))
    with pytest.raises(ValueError, match=r"conv2d: channel mismatch.*groups=2"):
        conv2d(x, t(np.ones((3, 2, 3, 3)), device), groups=2)
    with pytest.raises(ValueError, match="conv2d: output size .* is not positive"):
        conv2d(x, t(np.ones((2, 4, 7, 7)), device))
    with pytest.raises(ValueError, match=r"conv2d: bias must have shape \(2,\)"):
        conv2d(x, t(np.ones((2, 4, 3, 3)), device), t(np.ones(3), device))
    with pytest.raises(ValueError, match="conv_transpose2d: output_padding must be smaller"):
        conv_transpose2d(x, t(np.ones((4, 2, 3, 3)), device), stride=2, output_padding=2)
    with pytest.raises(ValueError, match="conv_transpose2d: channel mismatch"):
        conv_transpose2d(x, t(np.ones((3, 2, 3, 3)), device))
    with pytest.raises(ValueError, match=r"conv1d: expected input \(N, C, L\)"):
        conv1d(x, t(np.ones((2, 4, 3)), device))


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x, w, b = rng.standard_normal((2, 4, 9, 8)), rng.standard_normal((6, 2, 3, 3)), \
        rng.standard_normal(6)
    kw = {"stride": (2, 1), "padding": (1, 2), "dilation": (2, 1), "groups": 2}
    ref = tf.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw).numpy()
    np.testing.assert_allclose(conv2d(mg.tensor(x), mg.tensor(w), mg.tensor(b), **kw).numpy(),
                               ref, rtol=1e-10, atol=1e-12)
    wt = rng.standard_normal((4, 3, 3, 2))
    kw = {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2, "dilation": (1, 2)}
    ref = tf.conv_transpose2d(torch.tensor(x), torch.tensor(wt), **kw).numpy()
    np.testing.assert_allclose(conv_transpose2d(mg.tensor(x), mg.tensor(wt), **kw).numpy(),
                               ref, rtol=1e-10, atol=1e-12)
    x1, w1 = rng.standard_normal((2, 4, 11)), rng.standard_normal((4, 2, 3))
    ref = tf.conv1d(torch.tensor(x1), torch.tensor(w1), stride=2, padding=1, groups=2).numpy()
    np.testing.assert_allclose(conv1d(mg.tensor(x1), mg.tensor(w1), stride=2, padding=1,
                                      groups=2).numpy(), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n,hw", [(2, 5), (40, 18)])  # window rows below / inside ufunc_rows' range
def test_data_and_weight_grads_together_and_apart(device, rng, monkeypatch, n, hw):
    # Conv2dFunction.backward builds the output-gradient matrix once for both gradient GEMMs, and
    # col2im runs its adds under kernels.ufunc_rows: neither may change a bit of either gradient.
    x0, w0 = rng.standard_normal((n, 3, hw, hw)), rng.standard_normal((4, 3, 3, 3))
    gy = rng.standard_normal((n, 4, hw - 2, hw - 2))

    def grads(need_x, need_w):
        x = t(x0, device, requires_grad=need_x)
        w = t(w0, device, requires_grad=need_w)
        conv2d(x, w).backward(t(gy, device))
        return x.grad, w.grad

    gx, gw = grads(True, True)
    np.testing.assert_array_equal(gx.numpy(), grads(True, False)[0].numpy())
    np.testing.assert_array_equal(gw.numpy(), grads(False, True)[1].numpy())
    np.testing.assert_allclose(gx.numpy(), conv_transpose2d_ref(gy, w0), rtol=1e-10)
    monkeypatch.setattr(kernels, "ufunc_rows", lambda run: contextlib.nullcontext())
    np.testing.assert_array_equal(gx.numpy(), grads(True, True)[0].numpy())


@pytest.mark.parametrize("case", ["conv1d", "conv2d", "conv_transpose2d", "conv3d",
                                  "conv_transpose3d"])
def test_empty_batch_gives_empty_output_and_zero_size_gradients(case, rng):
    # PyTorch returns an empty output for N = 0; NumPy cannot infer a -1 beside a 0, so every
    # reshape in the kernels spells its sizes out.
    fn, x_shape, w_shape, out_shape = {
        "conv1d": (conv1d, (0, 2, 7), (3, 2, 3), (0, 3, 5)),
        "conv2d": (conv2d, (0, 2, 5, 5), (3, 2, 3, 3), (0, 3, 3, 3)),
        "conv_transpose2d": (conv_transpose2d, (0, 2, 4, 4), (2, 3, 3, 3), (0, 3, 6, 6)),
        "conv3d": (conv3d, (0, 2, 4, 4, 4), (3, 2, 2, 2, 2), (0, 3, 3, 3, 3)),
        "conv_transpose3d": (conv_transpose3d, (0, 2, 3, 3, 3), (2, 3, 2, 2, 2),
                             (0, 3, 4, 4, 4)),
    }[case]
    x = mg.tensor(np.zeros(x_shape), requires_grad=True)
    w = mg.tensor(rng.standard_normal(w_shape), requires_grad=True)
    b = mg.tensor(rng.standard_normal(out_shape[1]), requires_grad=True)
    y = fn(x, w, b)
    assert y.shape == out_shape
    y.sum().backward()
    assert x.grad.shape == x_shape
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros(w_shape))
    np.testing.assert_array_equal(b.grad.numpy(), np.zeros(out_shape[1]))
    assert gradcheck(lambda x, w, b: fn(x, w, b), [np.zeros(x_shape), w.numpy(), b.numpy()])


@pytest.mark.parametrize("dtype,tf32", [("float16", True), ("bfloat16", True), ("float32", True),
                                        ("float32", False)])
def test_cudnn_path(device, rng, monkeypatch, dtype, tf32):
    # The cuDNN-on case: forward and both gradients through cuDNN (the im2col GEMM never runs),
    # against the float64 loop reference; float32 with and without TF32 (PyTorch's allow_tf32).
    if device == "cpu":
        pytest.skip("cuDNN runs on the GPU only")
    cudnn_conv.set_enabled(True)
    if not cudnn_conv.available():
        pytest.skip(f"cuDNN unavailable: {cudnn_conv.unavailable_reason()}")
    monkeypatch.setitem(cudnn_conv._state, "tf32", tf32)
    gemms = []
    real = _conv_kernels._gemm
    monkeypatch.setattr(_conv_kernels, "_gemm", lambda a, b, g: gemms.append(g) or real(a, b, g))
    x0 = rng.standard_normal((2, 4, 6, 6))
    w0 = rng.standard_normal((6, 2, 3, 3)) * 0.3
    x = t(x0, device).astype(dtype).requires_grad_()
    w = t(w0, device).astype(dtype).requires_grad_()
    y = conv2d(x, w, stride=(1, 2), padding=1, groups=2)
    y.backward(mg.ones_like(y))
    assert gemms == [], "the im2col GEMM ran although cuDNN is on"
    assert y.dtype == x.dtype and x.grad.dtype == x.dtype and w.grad.dtype == w.dtype
    xr, wr = (np.asarray(a.numpy(), np.float64) for a in (x, w))
    tol = {"float16": 1e-2, "bfloat16": 6e-2}.get(dtype, 5e-3 if tf32 else 1e-5)
    np.testing.assert_allclose(y.numpy().astype(np.float64),
                               conv2d_ref(xr, wr, stride=(1, 2), padding=1, groups=2),
                               rtol=tol, atol=tol)
    x64 = mg.tensor(xr, requires_grad=True)
    w64 = mg.tensor(wr, requires_grad=True)
    conv2d(x64, w64, stride=(1, 2), padding=1, groups=2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), x64.grad.numpy(),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(w.grad.numpy().astype(np.float64), w64.grad.numpy(),
                               rtol=tol, atol=tol * 4)


def test_im2col_path_is_pinned(device, rng, monkeypatch):
    # The autouse fixture really keeps cuDNN off: the im2col GEMM runs on every device.
    assert cudnn_conv.available() is False
    gemms = []
    real = _conv_kernels._gemm
    monkeypatch.setattr(_conv_kernels, "_gemm", lambda a, b, g: gemms.append(g) or real(a, b, g))
    conv2d(t(rng.standard_normal((1, 2, 5, 5)), device).astype("float16"),
           t(rng.standard_normal((3, 2, 3, 3)), device).astype("float16"))
    assert gemms == [1]


@pytest.mark.parametrize("call,fragments", [
    (lambda r: conv3d(r(1, 3, 3, 3, 3), r(2, 2, 2, 2, 2)),
     ("conv3d", "channel", "(1, 3, 3, 3, 3)")),
    (lambda r: conv_transpose3d(r(1, 3, 3, 3, 3), r(2, 2, 2, 2, 2)),
     ("conv_transpose3d", "(2, 2, 2, 2, 2)")),
    (lambda r: convolution(r(1, 3, 4, 4, 4), r(2, 2, 2, 2, 2), None, 1, 0, 1, False, 0, 1),
     ("convolution", "channel", "(1, 3, 4, 4, 4)")),
    (lambda r: convolution(r(1, 2, 4, 4), r(2, 2, 5, 5), None, 1, 0, 1, False, 0, 1),
     ("convolution", "output size", "(4, 4)")),
    (lambda r: convolution(r(1, 2, 4, 4), r(2, 2, 5), None, 1, 0, 1, False, 0, 1),
     ("convolution", "4-D weight")),
    (lambda r: convolution(r(1, 3, 4, 4), r(2, 2, 2, 2), None, 1, 0, 1, True, 0, 1),
     ("convolution", "C_in == input channels")),
])
def test_nd_shape_errors_name_the_public_op(call, fragments):
    """The public op validates the caller's shapes itself: no folded shapes, no inner name."""
    with pytest.raises(ValueError) as e:
        call(lambda *s: mg.tensor(np.ones(s)))
    for f in fragments:
        assert f in str(e.value)
    assert "conv2d" not in str(e.value) and "conv1d" not in str(e.value)


@pytest.mark.parametrize("k,d", [(3, 1), (4, 1), (3, 2), (2, 3)])
def test_string_padding_same_and_valid_match_the_reference(k, d):
    # "same": output size = input size with stride 1; an odd total padding puts the extra zero
    # after (PyTorch's rule); "valid": no padding.
    r = np.random.default_rng(k * 10 + d)
    x = r.standard_normal((1, 2, 7, 6))
    w = r.standard_normal((3, 2, k, k))
    total = d * (k - 1)
    side = (total // 2, total - total // 2)
    padded = np.pad(x, [(0, 0), (0, 0), side, side])
    ref = conv2d(mg.tensor(padded), mg.tensor(w), dilation=d).numpy()
    got = conv2d(mg.tensor(x), mg.tensor(w), padding="same", dilation=d).numpy()
    assert got.shape == (1, 3, 7, 6)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    valid = conv2d(mg.tensor(x), mg.tensor(w), padding="valid", dilation=d).numpy()
    np.testing.assert_allclose(valid, conv2d(mg.tensor(x), mg.tensor(w), dilation=d).numpy())
