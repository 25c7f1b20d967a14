"""interpolate / upsample_*: a NaN or inf reaches only the outputs whose taps read it, forward
and backward, against a tap-by-tap NumPy reference and (where installed) PyTorch."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.functional.upsample import interpolate
from minigrad.testing import gradcheck
from minigrad.testing.ops.upsample import _axis_taps, _resize

# (input spatial shape, interpolate kwargs)
CASES = [
    ((7,), {"size": 12, "mode": "nearest"}),
    ((5, 6), {"scale_factor": 2, "mode": "nearest"}),
    ((5, 6), {"size": (3, 4), "mode": "nearest"}),
    ((3, 4, 5), {"size": (5, 6, 4), "mode": "nearest"}),
    ((5, 6), {"size": (9, 4), "mode": "nearest-exact"}),
    ((7,), {"size": 12, "mode": "linear"}),
    ((7,), {"size": 4, "mode": "linear", "align_corners": True}),
    ((5, 6), {"size": (9, 11), "mode": "bilinear"}),
    ((5, 6), {"scale_factor": 2, "mode": "bilinear"}),
    ((6, 7), {"size": (3, 4), "mode": "bilinear", "align_corners": True}),
    ((6, 7), {"size": (11, 12), "mode": "bicubic"}),
    ((6, 7), {"size": (4, 5), "mode": "bicubic", "align_corners": True}),
    ((4, 5, 6), {"size": (7, 8, 9), "mode": "trilinear"}),
    ((4, 5, 6), {"size": (3, 3, 4), "mode": "trilinear", "align_corners": True}),
    ((7, 9), {"size": (3, 4), "mode": "area"}),
    # Same-size axes: linear modes copy them, bicubic still reads 4 taps (both as PyTorch).
    ((7,), {"size": 7, "mode": "linear"}),
    ((5, 6), {"size": (5, 9), "mode": "bilinear"}),
    ((5, 6), {"size": (5, 9), "mode": "bicubic"}),
    ((7,), {"scale_factor": 1.1, "mode": "linear"}),
    ((7,), {"scale_factor": 1.1, "mode": "nearest"}),
]
IDS = [f"{kw['mode']}-{'x'.join(map(str, s))}-{i}" for i, (s, kw) in enumerate(CASES)]


def _with_nonfinite(spatial, seed=0):
    """(1, 2, *spatial) data with a NaN, an inf and a -inf in channel 0; channel 1 finite."""
    x = np.random.default_rng(seed).standard_normal((1, 2) + spatial)
    flat = x[0, 0].reshape(-1)
    flat[1], flat[flat.size // 2], flat[-2] = np.nan, np.inf, -np.inf
    return x


def _adjoint(g, in_spatial, kw):
    """Tap-by-tap transpose of the reference: each output's gradient goes only to its taps."""
    nd = len(in_spatial)
    out_spatial = g.shape[2:]
    for k in reversed(range(nd)):
        n_in, n_out = in_spatial[k], out_spatial[k]
        if kw.get("scale_factor") is not None and kw["mode"] != "area":
            scale = 1.0 / kw["scale_factor"]
        else:
            scale = n_in / n_out
        gm = np.moveaxis(g, 2 + k, -1)
        acc = np.zeros(gm.shape[:-1] + (n_in,))
        taps = _axis_taps(kw["mode"], n_in, n_out, scale, bool(kw.get("align_corners")))
        for o, taps_o in enumerate(taps):
            for i, w in taps_o:
                acc[..., i] += w * gm[..., o]
        g = np.moveaxis(acc, -1, 2 + k)
    return g


def _assert_same(actual, expect):
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expect))
    np.testing.assert_array_equal(np.isposinf(actual), np.isposinf(expect))
    np.testing.assert_array_equal(np.isneginf(actual), np.isneginf(expect))
    fin = np.isfinite(expect)
    np.testing.assert_allclose(actual[fin], expect[fin], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("spatial,kw", CASES, ids=IDS)
@np.errstate(invalid="ignore")
def test_nonfinite_forward_stays_local(spatial, kw):
    x = _with_nonfinite(spatial)
    y = interpolate(mg.tensor(x), **kw).numpy()
    _assert_same(y, _resize(x, **kw))
    assert np.isfinite(y[0, 1]).all()  # the finite channel is untouched
    assert np.isfinite(y[0, 0]).any()  # and the bad values did not take over their channel


@pytest.mark.parametrize("spatial,kw", CASES, ids=IDS)
@np.errstate(invalid="ignore")
def test_nonfinite_gradient_stays_local(spatial, kw):
    x = mg.tensor(np.random.default_rng(1).standard_normal((1, 2) + spatial), requires_grad=True)
    y = interpolate(x, **kw)
    g = np.ones(y.shape)
    g[0, 0].reshape(-1)[0] = np.nan
    g[0, 0].reshape(-1)[-1] = np.inf
    y.backward(mg.tensor(g))
    gx = x.grad.numpy()
    _assert_same(gx, _adjoint(g, spatial, kw))
    assert np.isfinite(gx[0, 1]).all() and np.isfinite(gx[0, 0]).any()


def test_nonfinite_input_leaves_gradient_finite():
    """The op is linear in its input: a NaN input does not poison any input gradient."""
    x = mg.tensor(_with_nonfinite((5, 6)), requires_grad=True)
    with np.errstate(invalid="ignore"):
        interpolate(x, size=(9, 11), mode="bicubic").sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize("spatial,kw", CASES, ids=IDS)
@np.errstate(invalid="ignore")
def test_nonfinite_matches_torch(spatial, kw):
    torch = pytest.importorskip("torch")
    x = _with_nonfinite(spatial)
    y = interpolate(mg.tensor(x), **kw).numpy()
    expect = torch.nn.functional.interpolate(torch.from_numpy(x), **kw).numpy()
    # NaN/inf placement agrees; the sign of an inf may depend on summation order, so compare
    # finiteness, NaN-ness and the finite values.
    np.testing.assert_array_equal(np.isfinite(y), np.isfinite(expect))
    fin = np.isfinite(expect)
    np.testing.assert_allclose(y[fin], expect[fin], rtol=1e-10, atol=1e-12)

    xt = torch.from_numpy(np.random.default_rng(1).standard_normal(x.shape)).requires_grad_()
    yt = torch.nn.functional.interpolate(xt, **kw)
    g = np.ones(tuple(yt.shape))
    g[0, 0].reshape(-1)[0] = np.nan
    yt.backward(torch.from_numpy(g))
    xm = mg.tensor(xt.detach().numpy(), requires_grad=True)
    interpolate(xm, **kw).backward(mg.tensor(g))
    np.testing.assert_array_equal(np.isfinite(xm.grad.numpy()), np.isfinite(xt.grad.numpy()))


@pytest.mark.parametrize("mode,spatial,size", [
    ("nearest", (3, 4), (5, 7)), ("linear", (4,), 7), ("bicubic", (4, 4), (6, 5)),
    ("trilinear", (2, 3, 2), (3, 4, 3)), ("area", (6, 5), (4, 3))])
def test_gradcheck(mode, spatial, size):
    x = np.random.default_rng(2).standard_normal((1, 2) + spatial)
    assert gradcheck(lambda t: interpolate(t, size=size, mode=mode), [x])


def test_same_size_is_a_copy():
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    for mode in ("nearest", "bilinear", "bicubic"):
        np.testing.assert_array_equal(interpolate(mg.tensor(x), size=(3, 4), mode=mode).numpy(), x)


def test_nearest_upsample_hand_values():
    y = interpolate(mg.tensor(np.array([[[1.0, math.nan, 3.0]]])), scale_factor=2).numpy()
    np.testing.assert_array_equal(y, [[[1.0, 1.0, math.nan, math.nan, 3.0, 3.0]]])
