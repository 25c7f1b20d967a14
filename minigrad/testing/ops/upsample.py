"""Op-table entries for ``minigrad/functional/upsample.py``.

Each mode is a composite over one gather and weighted sum per axis (second derivative
declared). The reference resamples one axis at a time with PyTorch's source-index formulas, tap
by tap.
"""

import math

import numpy as np

from ..op_table import NAN, ErrorInput, NonFinite, OpInfo, Sample, rand


def _cubic(t, a=-0.75):
    t = abs(t)
    if t <= 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a if t < 2 else 0.0


def _axis_taps(mode, n_in, n_out, scale, align):
    """Per output index: a list of (input index, weight)."""
    taps = []
    for dst in range(n_out):
        if mode in ("nearest", "nearest-exact"):
            off = 0.5 if mode == "nearest-exact" else 0.0
            taps.append([(min(int(math.floor((dst + off) * scale)), n_in - 1), 1.0)])
        elif mode == "area":
            lo, hi = (dst * n_in) // n_out, -(-((dst + 1) * n_in) // n_out)
            taps.append([(i, 1.0 / (hi - lo)) for i in range(lo, hi)])
        else:
            if align:
                src = dst * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            else:
                src = (dst + 0.5) * scale - 0.5
            if mode == "bicubic":
                i0 = math.floor(src)
                t = src - i0
                taps.append([(min(max(i0 + k, 0), n_in - 1), _cubic(t - k)) for k in (-1, 0, 1, 2)])
            elif n_in == n_out:  # PyTorch copies a same-size axis in the linear modes
                taps.append([(dst, 1.0)])
            else:
                src = max(src, 0.0)
                i0 = min(int(math.floor(src)), n_in - 1)
                lam = src - i0
                taps.append([(i0, 1.0 - lam), (min(i0 + 1, n_in - 1), lam)])
    return taps


def _resize(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
            recompute_scale_factor=None):
    nd = x.ndim - 2
    sizes = size if isinstance(size, (tuple, list)) else (size,) * nd
    factors = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * nd
    for k in range(nd):
        axis, n_in = 2 + k, x.shape[2 + k]
        n_out = sizes[k] if size is not None else int(math.floor(n_in * factors[k]))
        use_factor = scale_factor is not None and not recompute_scale_factor and mode != "area"
        scale = 1.0 / factors[k] if use_factor else n_in / n_out
        taps = _axis_taps(mode, n_in, n_out, scale, bool(align_corners))
        xm = np.moveaxis(x, axis, -1)
        out = np.stack([sum(w * xm[..., i] for i, w in t) for t in taps], -1)
        x = np.moveaxis(out, -1, axis)
    return x


def _fixed(mode, align=None):
    """Reference of ``upsample_<mode>(x, size, scale_factor[, align_corners])``."""
    def ref(x, size=None, scale_factor=None, align_corners=align):
        return _resize(x, size, scale_factor, mode, align_corners)

    return ref


def _entry(name, samples, ref, row=None, nonfinite=None):
    x = samples[0].args[0]
    errors = (ErrorInput((x,), ValueError, ("interpolate", "size", "scale_factor"),
                         {"size": x.shape[2:], "scale_factor": 2}, name="size_and_scale"),)
    if name in ("interpolate", "upsample"):
        errors += (ErrorInput((rand(1, 2, 3),), ValueError, ("interpolate", "bilinear", "4-D"),
                              {"size": 4, "mode": "bilinear"}, name="mode_rank"),)
    return OpInfo(name, "upsample", tuple(samples), "fp32", policy_name=row, gradgrad=True,
                  ref=ref, errors=errors, nonfinite=(nonfinite,) if nonfinite else ())


_ROW = np.array([[[1.0, NAN, 2.0, 3.0]]])


def _nan_case(kwargs, mode, x=_ROW, align=None):
    """A NaN (and an inf, from 2-D on) reaches only the outputs whose taps read it."""
    with np.errstate(invalid="ignore"):
        expect = _resize(x, **{"mode": mode, "align_corners": align, **kwargs})
    return NonFinite((x,), expect, kwargs)


def _grid(*spatial):
    x = np.arange(float(np.prod(spatial))).reshape((1, 1) + spatial)
    x.flat[1], x.flat[-2] = NAN, np.inf
    return x


_INTERP = [
    # area first: it is the mode that runs under the interpolate row itself (autocast check).
    Sample((rand(1, 2, 6, 5),), {"size": (4, 3), "mode": "area"}),
    Sample((rand(2, 2, 3),), {"scale_factor": 2}, name="nearest_1d"),
    Sample((rand(1, 2, 3, 4),), {"size": (5, 3), "mode": "nearest-exact"}, name="nearest_exact"),
    Sample((rand(2, 2, 4),), {"size": 7, "mode": "linear", "align_corners": True},
           name="linear_align"),
    Sample((rand(1, 2, 3, 4),), {"scale_factor": (1.5, 2), "mode": "bilinear"}, name="bilinear"),
    Sample((rand(1, 2, 5, 6),), {"size": (3, 4), "mode": "bilinear"}, name="bilinear_down"),
    Sample((rand(1, 1, 4, 4),), {"size": (6, 5), "mode": "bicubic"}, name="bicubic"),
    Sample((rand(1, 1, 2, 3, 2),), {"size": (3, 4, 3), "mode": "trilinear"}, name="trilinear"),
    Sample((rand(0, 2, 3, 4),), {"size": (5, 6), "mode": "bilinear"}, name="empty"),
]

__all__ = ["OPS"]

OPS = [
    _entry("interpolate", _INTERP, _resize,
           nonfinite=_nan_case({"scale_factor": 2}, "nearest")),
    # MegEngine's F.nn.interpolate: bilinear (align_corners False) unless told otherwise
    OpInfo("nn.interpolate", "upsample", (
        Sample((rand(1, 2, 3, 4),), {"size": (5, 7)}),
        Sample((rand(1, 2, 3, 4),), {"scale_factor": 2.0}, name="scale"),
        Sample((rand(2, 2, 4),), {"size": 7, "mode": "LINEAR", "align_corners": True},
               name="linear_align"),
        Sample((rand(1, 2, 3, 4),), {"size": (6, 8), "mode": "nearest"}, name="nearest")),
        "fp32", policy_name="upsample_bilinear", gradgrad=True,
        ref=lambda x, size=None, scale_factor=None, mode="bilinear", align_corners=None:
            _resize(x, size, scale_factor, mode.lower(), align_corners),
        errors=(ErrorInput((rand(1, 2, 3, 4),), ValueError, ("align_corners", "bilinear"),
                           {"size": 4, "mode": "nearest", "align_corners": False},
                           name="align_nearest"),)),
    _entry("upsample", _INTERP[:2], _resize, row="interpolate",
           nonfinite=_nan_case({"size": 8, "mode": "linear"}, "linear")),
    _entry("upsample_nearest", [
        Sample((rand(1, 2, 3, 4),), {"size": (5, 7)}),
        Sample((rand(2, 2, 3),), {"scale_factor": 2}, name="scale_1d"),
        Sample((rand(0, 2, 3),), {"size": 4}, name="empty")], _fixed("nearest"),
        nonfinite=_nan_case({"scale_factor": 2}, "nearest")),
    _entry("upsample_linear", [
        Sample((rand(2, 2, 4),), {"size": 7}),
        Sample((rand(2, 2, 4),), {"size": 7, "align_corners": True}, name="align"),
        Sample((rand(1, 2, 6),), {"scale_factor": 0.5}, name="down"),
        Sample((rand(0, 2, 4),), {"size": 7}, name="empty")], _fixed("linear", False),
        nonfinite=_nan_case({"size": 8}, "linear")),
    _entry("upsample_bilinear", [
        Sample((rand(1, 2, 3, 4),), {"size": (5, 6)}),
        Sample((rand(1, 2, 3, 4),), {"scale_factor": 2}, name="scale"),
        Sample((rand(0, 2, 3, 4),), {"size": (5, 6)}, name="empty")], _fixed("bilinear", True),
        nonfinite=_nan_case({"size": (9, 11)}, "bilinear", _grid(5, 6), True)),
    _entry("upsample_bicubic", [
        Sample((rand(1, 2, 4, 4),), {"size": (6, 5)}),
        Sample((rand(1, 1, 4, 3),), {"size": (7, 5), "align_corners": True}, name="align"),
        Sample((rand(1, 1, 4, 4),), {"scale_factor": 0.5}, name="down"),
        Sample((rand(0, 1, 4, 4),), {"size": (6, 5)}, name="empty")], _fixed("bicubic", False),
        nonfinite=_nan_case({"size": (11, 12)}, "bicubic", _grid(6, 7))),
    _entry("upsample_trilinear", [
        Sample((rand(1, 2, 2, 3, 2),), {"scale_factor": 2}),
        Sample((rand(1, 1, 2, 3, 2),), {"size": (3, 4, 3), "align_corners": True},
               name="align"),
        Sample((rand(0, 1, 2, 3, 2),), {"size": (3, 4, 3)}, name="empty")],
        _fixed("trilinear", False),
        nonfinite=_nan_case({"size": (7, 8, 9)}, "trilinear", _grid(4, 5, 6))),
]
