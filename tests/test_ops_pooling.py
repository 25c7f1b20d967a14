"""max_pool2d, avg_pool2d, adaptive_avg_pool2d: loop references, gradchecks, hand values."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.functional.pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from minigrad.testing import gradcheck, gradgradcheck


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def pool_ref(x, kernel_size, stride=None, padding=0, mode="max"):
    """Direct loop over output pixels (tiny shapes only); avg counts padding (PyTorch default)."""
    (kh, kw), (ph, pw) = pair(kernel_size), pair(padding)
    sh, sw = pair(kernel_size if stride is None else stride)
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    oh, ow = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    y = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
            y[:, :, i, j] = win.max(axis=(2, 3)) if mode == "max" else win.mean(axis=(2, 3))
    return y


def adaptive_ref(x, out):
    oh, ow = out
    h, w = x.shape[2:]
    y = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = slice(math.floor(i * h / oh), math.ceil((i + 1) * h / oh))
            cols = slice(math.floor(j * w / ow), math.ceil((j + 1) * w / ow))
            y[:, :, i, j] = x[:, :, rows, cols].mean(axis=(2, 3))
    return y


def t(a, device, **kw):
    return mg.tensor(np.asarray(a), device=device, **kw)


POOL_CASES = [{"kernel_size": 2}, {"kernel_size": 3, "stride": 1},
              {"kernel_size": 3, "stride": 2, "padding": 1},
              {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 1)}]


@pytest.mark.parametrize("kw", POOL_CASES)
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pool_values_and_grad(device, rng, kw, mode):
    fn = max_pool2d if mode == "max" else avg_pool2d
    x = rng.standard_normal((2, 3, 7, 6))
    np.testing.assert_allclose(fn(t(x, device), **kw).numpy(), pool_ref(x, mode=mode, **kw),
                               rtol=1e-12)
    assert gradcheck(lambda x: fn(x, **kw), [rng.standard_normal((1, 2, 5, 5))], device=device)


@pytest.mark.parametrize("fn", [max_pool2d, avg_pool2d])
def test_pool_double_backward(device, rng, fn):
    assert gradgradcheck(lambda x: fn(x, 3, 2, 1) * fn(x, 3, 2, 1),
                         [rng.standard_normal((1, 1, 4, 5))], device=device)


def test_max_pool_hand_values_and_tie_routing(device):
    x = t(np.arange(16.0).reshape(1, 1, 4, 4), device, requires_grad=True)
    y = max_pool2d(x, 2)
    np.testing.assert_array_equal(y.numpy()[0, 0], [[5, 7], [13, 15]])
    y.backward(t(np.array([[[[1.0, 2.0], [3.0, 4.0]]]]), device))
    expect = np.zeros((4, 4))
    expect[1, 1], expect[1, 3], expect[3, 1], expect[3, 3] = 1, 2, 3, 4
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], expect)
    # Ties: the whole gradient goes to the first maximum of each window (as in PyTorch).
    ones = t(np.ones((1, 1, 2, 4)), device, requires_grad=True)
    max_pool2d(ones, 2).sum().backward()
    np.testing.assert_array_equal(ones.grad.numpy()[0, 0], [[1, 0, 1, 0], [0, 0, 0, 0]])
    # Overlapping windows add their gradients at a shared maximum.
    x = t(np.array([[[[0.0, 9.0, 0.0], [0.0, 0.0, 0.0]]]]), device, requires_grad=True)
    max_pool2d(x, (2, 2), stride=1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [[0, 2, 0], [0, 0, 0]])


def test_avg_pool_counts_padding(device):
    x = t(np.ones((1, 1, 2, 2)), device)
    y = avg_pool2d(x, 2, stride=1, padding=1)
    np.testing.assert_allclose(y.numpy()[0, 0], [[0.25, 0.5, 0.25], [0.5, 1, 0.5],
                                                 [0.25, 0.5, 0.25]])


@pytest.mark.parametrize("shape,out", [((2, 3, 7, 6), (3, 4)), ((2, 3, 8, 6), (4, 3)),
                                       ((1, 2, 5, 5), (1, 1)), ((1, 2, 3, 4), (6, 7)),
                                       ((1, 2, 5, 6), (5, 4))])
def test_adaptive_avg_pool(device, rng, shape, out):
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(adaptive_avg_pool2d(t(x, device), out).numpy(),
                               adaptive_ref(x, out), rtol=1e-12, atol=1e-14)
    assert gradcheck(lambda x: adaptive_avg_pool2d(x, out), [x[:1, :2]], device=device)


def test_adaptive_bins_hand_values_and_sizes(device, rng):
    # H=5 -> 3 bins: rows [0, 2), [1, 4), [3, 5) -- the middle one overlaps both neighbours.
    x = t(np.arange(5.0).reshape(1, 1, 5, 1), device, requires_grad=True)
    y = adaptive_avg_pool2d(x, (3, 1))
    np.testing.assert_allclose(y.numpy().ravel(), [0.5, 2.0, 3.5])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy().ravel(), [0.5, 0.5 + 1 / 3, 1 / 3, 1 / 3 + 0.5,
                                                        0.5])
    z = t(rng.standard_normal((2, 3, 5, 6)), device)
    assert adaptive_avg_pool2d(z, 2).shape == (2, 3, 2, 2)
    assert adaptive_avg_pool2d(z, (None, 4)).shape == (2, 3, 5, 4)
    assert gradgradcheck(lambda x: adaptive_avg_pool2d(x, 3) ** 2,
                         [rng.standard_normal((1, 1, 5, 4))], device=device)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision(device, rng, dtype):
    x = t(rng.standard_normal((2, 3, 8, 8)), device).astype(dtype).requires_grad_()
    x64 = np.asarray(x.numpy(), np.float64)
    for y, ref in [(max_pool2d(x, 2), pool_ref(x64, 2)),
                   (avg_pool2d(x, 3, 2, 1), pool_ref(x64, 3, 2, 1, mode="avg")),
                   (adaptive_avg_pool2d(x, 3), adaptive_ref(x64, (3, 3)))]:
        assert y.dtype == x.dtype
        np.testing.assert_allclose(y.numpy().astype(np.float64), ref, rtol=1e-2, atol=1e-2)
        y.sum().backward()
        assert x.grad.dtype == x.dtype
    # Averages accumulate in fp32: the mean of 4096 values 1 + 2**-10 is exact.
    big = t(np.full((1, 1, 64, 64), 1 + 2.0 ** -10), device).astype("float16")
    assert adaptive_avg_pool2d(big, 1).item() == 1 + 2.0 ** -10
    assert avg_pool2d(big, 64).item() == 1 + 2.0 ** -10


def test_errors(device):
    x = t(np.ones((1, 1, 4, 4)), device)
    with pytest.raises(ValueError, match=r"max_pool2d: expected input \(N, C, H, W\).*\(4, 4\)"):
        max_pool2d(t(np.ones((4, 4)), device), 2)
    with pytest.raises(ValueError, match="avg_pool2d: output size .* is not positive"):
        avg_pool2d(x, 5)
    with pytest.raises(ValueError, match="max_pool2d: padding must be at most half"):
        max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="adaptive_avg_pool2d: output and input sizes must be"):
        adaptive_avg_pool2d(x, 0)


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = rng.standard_normal((2, 3, 9, 7))
    for kw in POOL_CASES:
        for mine, theirs in [(max_pool2d, tf.max_pool2d), (avg_pool2d, tf.avg_pool2d)]:
            xm = mg.tensor(x, requires_grad=True)
            xt = torch.tensor(x, requires_grad=True)
            ym, yt = mine(xm, **kw), theirs(xt, **kw)
            np.testing.assert_allclose(ym.numpy(), yt.detach().numpy(), rtol=1e-12)
            g = rng.standard_normal(ym.shape)
            ym.backward(mg.tensor(g))
            yt.backward(torch.tensor(g))
            np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    for out in [(4, 3), (2, 5), 1, (None, 3)]:
        ref = tf.adaptive_avg_pool2d(torch.tensor(x), out).numpy()
        np.testing.assert_allclose(adaptive_avg_pool2d(mg.tensor(x), out).numpy(), ref,
                                   rtol=1e-12)


def test_max_pool_leaves_its_input_alone_and_matches_lenet_shapes(device, rng):
    # A 1x1 window is the input itself: the running maximum must be a copy, not the input.
    x0 = rng.standard_normal((2, 3, 4, 5))
    x = t(x0, device)
    np.testing.assert_array_equal(max_pool2d(x, 1, 1).numpy(), x0)
    np.testing.assert_array_equal(x.numpy(), x0)
    # LeNet's pools after a relu: many tied zeros, the gradient goes to each window's first max.
    x0 = np.maximum(rng.standard_normal((3, 6, 28, 28)), 0).astype(np.float32)
    x = t(x0, device, requires_grad=True)
    y = max_pool2d(x, 2)
    np.testing.assert_array_equal(y.numpy(), pool_ref(x0, 2))
    gy = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(t(gy, device))
    windows = x0.reshape(3, 6, 14, 2, 14, 2).transpose(0, 1, 2, 4, 3, 5).reshape(3, 6, 14, 14, 4)
    first = windows.argmax(-1)  # NumPy's argmax also picks the first maximum
    expect = np.zeros_like(windows)
    np.put_along_axis(expect, first[..., None], gy[..., None], axis=-1)
    expect = expect.reshape(3, 6, 14, 14, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(x0.shape)
    np.testing.assert_array_equal(x.grad.numpy(), expect)
