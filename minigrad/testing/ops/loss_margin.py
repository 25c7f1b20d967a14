"""Op-table entries for ``minigrad/functional/loss_margin.py``.

Every loss is a composite (second derivative declared) and a float32 row; targets are constants
(``Sample.const``) or integer class indices.
"""

import numpy as np

from ..op_table import NAN, ErrorInput, NonFinite, OpInfo, Sample, ints, pos, rand


def _reduce(loss, reduction="mean"):
    return {"mean": np.mean, "sum": np.sum, "none": np.asarray}[reduction](loss)


def _sign(*shape, seed=0):
    """A {1, -1} float target."""
    return np.where(rand(*shape, seed=seed + 5) > 0, 1.0, -1.0)


def _softplus(x):
    return np.logaddexp(0.0, x)


def _huber(x, y, reduction="mean", delta=1.0):
    d = np.abs(x - y)
    return _reduce(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def _poisson(x, y, log_input=True, full=False, reduction="mean"):
    loss = np.exp(x) - y * x if log_input else x - y * np.log(x + 1e-8)
    if full:
        ys = np.where(y > 1, y, 2.0)
        loss = loss + np.where(y > 1, ys * np.log(ys) - ys + 0.5 * np.log(2 * np.pi * ys), 0.0)
    return _reduce(loss, reduction)


def _hinge(x, y, margin=1.0, reduction="mean"):
    return _reduce(np.where(y == 1, x, np.maximum(0.0, margin - x)), reduction)


def _ranking(x1, x2, y, margin=0.0, reduction="mean"):
    return _reduce(np.maximum(0.0, -y * (x1 - x2) + margin), reduction)


def _soft_margin(x, y, reduction="mean"):
    return _reduce(_softplus(-y * x), reduction)


def _multilabel(x, t, reduction="mean"):
    x2, t2 = np.atleast_2d(x), np.atleast_2d(t)
    out = []
    for row, lab in zip(x2, t2):
        labels = list(lab[:list(lab).index(-1)] if -1 in lab else lab)
        others = [i for i in range(len(row)) if i not in labels]
        out.append(sum(max(0.0, 1 - (row[j] - row[i])) for j in labels for i in others)
                   / len(row))
    out = np.array(out)
    return _reduce(out if x.ndim == 2 else out[0], reduction)


def _multi_margin(x, t, p=1, margin=1.0, weight=None, reduction="mean"):
    x2, t2 = np.atleast_2d(x), np.atleast_1d(t)
    xy = x2[np.arange(len(t2)), t2][:, None]
    h = np.maximum(0.0, margin - xy + x2) ** p
    h[np.arange(len(t2)), t2] = 0.0
    if weight is not None:
        h = h * weight[t2][:, None]
    out = h.sum(1) / x2.shape[1]
    return _reduce(out if x.ndim == 2 else out[0], reduction)


def _triplet(a, p, n, margin=1.0, eps=1e-6, swap=False, reduction="mean"):
    def d(u, v):
        return np.sqrt(((u - v + eps) ** 2).sum(-1))

    dn = np.minimum(d(a, n), d(p, n)) if swap else d(a, n)
    return _reduce(np.maximum(d(a, p) - dn + margin, 0.0), reduction)


def _cosine(x1, x2, y, margin=0.0, reduction="mean"):
    cos = (x1 * x2).sum(-1) / np.sqrt(((x1 * x1).sum(-1) + 1e-12) * ((x2 * x2).sum(-1) + 1e-12))
    return _reduce(np.where(y == 1, 1.0 - cos, np.maximum(0.0, cos - margin)), reduction)


def _reduction_error(name, args):
    return ErrorInput(args, ValueError, (name, "reduction"), {"reduction": "avg"},
                      name="reduction")


def _loss(name, samples, errors, ref, nonfinite=()):
    return OpInfo(name, "loss_margin", tuple(samples), "fp32", errors=tuple(errors), ref=ref,
                  gradgrad=True, nonfinite=tuple(nonfinite))


def _pointwise(name, ref, target, kwargs, extra=()):
    """``op(input, target, ...)`` over every reduction, 0-d and empty."""
    x, t = (lambda *s: rand(*s, low=-2.0, high=2.0)), target
    return _loss(name, [
        Sample((x(3, 4), t(3, 4, seed=1)), kwargs, const=(1,)),
        Sample((x(3, 4), t(3, 4, seed=1)), dict(kwargs, reduction="sum"), const=(1,),
               name="sum"),
        Sample((x(3, 4), t(3, 4, seed=1)), dict(kwargs, reduction="none"), const=(1,),
               name="none"),
        Sample((x(), t(seed=1)), kwargs, const=(1,), name="0d"),
        Sample((x(0, 4), t(0, 4, seed=1)), dict(kwargs, reduction="sum"), const=(1,),
               name="empty", expect=0.0), *extra],
        [_reduction_error(name, (x(2, 3), t(2, 3)))], ref,
        [NonFinite((np.array([NAN, 0.5]), t(2, seed=1)), [NAN, ref(0.5, t(2, seed=1)[1])],
                   {"reduction": "none"})])


def _rate(*shape, seed=0):
    return np.asarray(3 * pos(*shape, seed=seed))


__all__ = ["OPS"]

_LABELS = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 0, 0]])

OPS = [
    _pointwise("huber_loss", _huber, rand, {"delta": 0.7}),
    _pointwise("poisson_nll_loss", _poisson, _rate, {}, extra=(
        Sample((pos(3, 4), _rate(3, 4, seed=1)), {"log_input": False, "full": True},
               const=(1,), name="full"),)),
    _pointwise("soft_margin_loss", _soft_margin, _sign, {}),
    _pointwise("hinge_embedding_loss", _hinge, _sign, {"margin": 0.5}),
    _loss("margin_ranking_loss", [
        Sample((rand(5), rand(5, seed=1), _sign(5, seed=2)), {"margin": 0.3}, const=(2,)),
        Sample((rand(2, 3), rand(2, 3, seed=1), _sign(2, 3, seed=2)), {"reduction": "none"},
               const=(2,), name="none"),
        Sample((rand(), rand(seed=1), _sign(seed=2)), {"reduction": "sum"}, const=(2,),
               name="0d"),
        Sample((rand(0), rand(0, seed=1), _sign(0)), {"reduction": "sum"}, const=(2,),
               name="empty", expect=0.0)],
        [_reduction_error("margin_ranking_loss", (rand(2), rand(2), _sign(2)))], _ranking,
        [NonFinite((np.array([NAN, 1.0]), np.array([0.0, 0.0]), np.array([1.0, 1.0])),
                   [NAN, 0.0], {"reduction": "none"})]),
    _loss("multilabel_margin_loss", [
        Sample((rand(3, 4), _LABELS)),
        Sample((rand(3, 4), _LABELS), {"reduction": "none"}, name="none"),
        Sample((rand(4), _LABELS[1]), {"reduction": "none"}, name="single"),
        Sample((rand(0, 4), _LABELS[:0]), {"reduction": "sum"}, name="empty", expect=0.0)],
        [_reduction_error("multilabel_margin_loss", (rand(3, 4), _LABELS)),
         ErrorInput((rand(3, 4), _LABELS + 1), ValueError,
                    ("multilabel_margin_loss", "[-1, 4)"), name="target_range"),
         ErrorInput((rand(3, 4), _LABELS[:2]), ValueError,
                    ("multilabel_margin_loss", "target", "(3, 4)"), name="target_shape")],
        _multilabel,
        [NonFinite((np.array([[NAN, 0.0, 1.0]]), np.array([[0, -1, 0]])), [NAN],
                   {"reduction": "none"})]),
    _loss("multi_margin_loss", [
        Sample((rand(3, 4), ints(4, 3))),
        Sample((rand(3, 4), ints(4, 3), 2, 0.5), {"reduction": "none"}, name="p2"),
        Sample((rand(3, 4), ints(4, 3), 1, 1.0, pos(4, seed=1)), {"reduction": "sum"},
               name="weight"),
        Sample((rand(4), np.array(2)), name="single"),
        Sample((rand(0, 4), ints(4, 0)), {"reduction": "sum"}, name="empty", expect=0.0)],
        [_reduction_error("multi_margin_loss", (rand(3, 4), ints(4, 3))),
         ErrorInput((rand(3, 4), ints(4, 3) + 4), ValueError, ("multi_margin_loss", "[0, 4)"),
                    name="target_range"),
         ErrorInput((rand(3, 4), ints(4, 3), 3), ValueError, ("multi_margin_loss", "p"),
                    name="p")],
        _multi_margin,
        [NonFinite((np.array([[NAN, 0.0, 1.0]]), np.array([1])), [NAN],
                   {"reduction": "none"})]),
    _loss("triplet_margin_loss", [
        Sample((rand(3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2))),
        Sample((rand(3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2)),
               {"swap": True, "margin": 2.0, "reduction": "none"}, name="swap"),
        Sample((rand(4), rand(4, seed=1), rand(4, seed=2)), {"margin": 3.0}, name="single"),
        Sample((rand(0, 4), rand(0, 4, seed=1), rand(0, 4, seed=2)), {"reduction": "sum"},
               name="empty", expect=0.0)],
        [_reduction_error("triplet_margin_loss", (rand(2, 3), rand(2, 3), rand(2, 3))),
         ErrorInput((rand(2, 3), rand(2, 3), rand(3, 3)), ValueError,
                    ("triplet_margin_loss", "(2, 3)", "(3, 3)"), name="shapes")],
        _triplet,
        [NonFinite((np.array([[NAN, 0.0]]), np.zeros((1, 2)), np.ones((1, 2))), [NAN],
                   {"reduction": "none"})]),
    _loss("cosine_embedding_loss", [
        Sample((rand(3, 4), rand(3, 4, seed=1), _sign(3)), const=(2,)),
        Sample((rand(3, 4), rand(3, 4, seed=1), _sign(3)), {"margin": -0.2, "reduction": "none"},
               const=(2,), name="margin"),
        Sample((rand(4), rand(4, seed=1), np.array(1.0)), const=(2,), name="single"),
        Sample((rand(0, 4), rand(0, 4, seed=1), _sign(0)), {"reduction": "sum"}, const=(2,),
               name="empty", expect=0.0)],
        [_reduction_error("cosine_embedding_loss", (rand(2, 3), rand(2, 3), _sign(2))),
         ErrorInput((rand(2, 3), rand(2, 3), _sign(3)), ValueError,
                    ("cosine_embedding_loss", "target", "(3,)"), name="target_shape")],
        _cosine,
        [NonFinite((np.array([[NAN, 1.0]]), np.ones((1, 2)), np.array([1.0])), [NAN],
                   {"reduction": "none"})]),
]


# --------------------------------------------------------------------------- the layers' losses
def _gaussian_nll(x, y, var, full=False, eps=1e-6, reduction="mean"):
    var = np.asarray(var, dtype=float)
    if var.shape != x.shape:
        var = var if var.shape[-1:] == (1,) and var.ndim == x.ndim else var[..., None]
    v = np.maximum(var, eps)
    loss = 0.5 * (np.log(v) + (x - y) ** 2 / v)
    if full:
        loss = loss + 0.5 * np.log(2 * np.pi)
    return _reduce(loss, reduction)


def _ml_soft_margin(x, y, weight=None, reduction="mean"):
    loss = -(y * -_softplus(-x) + (1 - y) * -_softplus(x))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.sum(-1) / x.shape[-1], reduction)


def _pair_dist(a, b):
    return np.sqrt(((a - b + 1e-6) ** 2).sum(-1))


def _triplet_dist(a, p, n, margin=1.0, swap=False, reduction="mean"):
    d_neg = _pair_dist(a, n)
    if swap:
        d_neg = np.minimum(d_neg, _pair_dist(p, n))
    return _reduce(np.maximum(margin + _pair_dist(a, p) - d_neg, 0.0), reduction)


def _binary(*shape, seed=0):
    return (rand(*shape, seed=seed + 7) > 0).astype(float)


OPS += [
    _loss("gaussian_nll_loss", [
        Sample((rand(3, 4), rand(3, 4, seed=1), pos(3, 4, seed=2))),
        Sample((rand(3, 4), rand(3, 4, seed=1), pos(3, 1, seed=2)),
               {"full": True, "reduction": "none"}, name="per_sample_full"),
        Sample((rand(3, 4), rand(3, 4, seed=1), pos(3, seed=2)), {"reduction": "sum"},
               name="dropped_axis"),
        Sample((rand(0, 4), rand(0, 4, seed=1), pos(0, 4, seed=2)), {"reduction": "sum"},
               name="empty", expect=0.0)],
        [_reduction_error("gaussian_nll_loss", (rand(2, 3), rand(2, 3), pos(2, 3))),
         ErrorInput((rand(2, 3), rand(2, 3), pos(3, 2)), ValueError,
                    ("gaussian_nll_loss", "var"), name="var_shape"),
         ErrorInput((rand(2, 3), rand(2, 3), -pos(2, 3)), ValueError,
                    ("gaussian_nll_loss", "negative"), name="negative_var")],
        _gaussian_nll),
    _loss("multilabel_soft_margin_loss", [
        Sample((rand(3, 4), _binary(3, 4)), const=(1,)),
        Sample((rand(3, 4), _binary(3, 4), pos(4, seed=3)), {"reduction": "none"},
               const=(1, 2), name="weight"),
        Sample((rand(0, 4), _binary(0, 4)), {"reduction": "sum"}, const=(1,), name="empty",
               expect=0.0)],
        [_reduction_error("multilabel_soft_margin_loss", (rand(2, 3), _binary(2, 3))),
         ErrorInput((rand(2, 3), _binary(3, 2)), ValueError,
                    ("multilabel_soft_margin_loss", "shape"), name="shapes")],
        _ml_soft_margin),
]

# the distance is any callable (it may hold parameters): no Function of its own
OPS.append(OpInfo("triplet_margin_with_distance_loss", "loss_margin", (
    Sample((rand(3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2))),
    Sample((rand(3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2)),
           {"swap": True, "margin": 2.0, "reduction": "none"}, name="swap"),
    Sample((rand(0, 4), rand(0, 4, seed=1), rand(0, 4, seed=2)), {"reduction": "sum"},
           name="empty", expect=0.0)), None,
    amp_note="a composite of its distance function's ops (pairwise_distance by default), "
             "minimum, clip and the reduction, each governed by its own row",
    errors=(_reduction_error("triplet_margin_with_distance_loss",
                             (rand(2, 3), rand(2, 3), rand(2, 3))),
            ErrorInput((rand(2, 3), rand(2, 3), rand(2, 3)), ValueError,
                       ("triplet_margin_with_distance_loss", "margin"), {"margin": 0.0},
                       name="margin")),
    ref=_triplet_dist, gradgrad=True))
