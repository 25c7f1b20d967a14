"""One parametrised suite over the op table (``minigrad/testing/op_table.py``).

Every public op of ``minigrad.functional`` has an entry (test_every_public_op_has_an_entry);
each entry's samples are run forward (values, empty and 0-d shapes), through the float64
gradcheck, with non-contiguous inputs, under autocast (float16 and bfloat16), and every declared
error input and inf/NaN case is checked. Known deviations are ``xfail(strict=False)`` entries in
the table, each with its reason.
"""

import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import amp
from minigrad._backend.dtypes import is_floating
from minigrad.amp import policy
from minigrad.autodiff import grad
from minigrad.autodiff.function import dispatch_hooks
from minigrad.testing import gradcheck, gradgradcheck
from minigrad.testing.op_table import NON_OPS, Sample, bind, op_table, public_ops

TABLE = op_table()
FAMILIES_WITH_ERRORS = ("activation", "attention", "cast", "conv", "elementwise", "linalg",
                        "loss", "normalization", "pooling", "recurrent", "reduction", "shape",
                        "sparse")


def _mark(xfail):
    return [pytest.mark.xfail(reason=xfail, strict=False)] if xfail else []


def _params(select, test=None):
    """pytest params ``<op>-<sample>`` for every (entry, item) pair ``select`` yields."""
    out = []
    for name, info in sorted(TABLE.items()):
        for item in select(info):
            reason = getattr(item, "xfail", None) or (info.xfail.get(test) if test else None)
            if test in ("gradcheck", "noncontiguous", "gradgrad"):
                reason = reason or item.xfail_grad
            out.append(pytest.param(info, item, id=f"{name}-{item.name}", marks=_mark(reason)))
    return out


def _grad_samples(info):
    return [s for s in info.samples if info.differentiable and s.grad]


def _first_nonempty(info):
    for s in info.samples:
        _, arrays = bind(info.op, s)
        if all(a.size > 0 for a in arrays) and s.xfail is None:
            return s
    return info.samples[0]


def _close(actual, expect, atol=1e-6, rtol=1e-6):
    a = np.asarray(actual.numpy() if isinstance(actual, mg.Tensor) else actual, np.float64)
    np.testing.assert_allclose(a, np.asarray(expect, np.float64), atol=atol, rtol=rtol,
                               equal_nan=True)


def _call(info, args, kwargs):
    fn, arrays = bind(info.op, Sample(args, kwargs))
    return fn(*[mg.tensor(a) for a in arrays])


# --- coverage and the policy table -------------------------------------------------------------

def test_every_public_op_has_an_entry():
    missing = sorted(public_ops() - set(TABLE))
    assert not missing, (
        f"public ops without an op-table entry: {missing}; add one OpInfo per op in "
        "minigrad/testing/ops/<family>.py (see docs/internals.md, 'The op table')")
    unknown = sorted(set(TABLE) - public_ops())
    assert not unknown, f"op-table entries for names that are not public ops: {unknown}"
    assert all(reason for reason in NON_OPS.values())


def test_every_family_declares_error_inputs():
    families = {info.family for info in TABLE.values() if info.errors}
    assert set(FAMILIES_WITH_ERRORS) <= families, sorted(set(FAMILIES_WITH_ERRORS) - families)


@pytest.mark.parametrize("info", [pytest.param(i, id=n) for n, i in sorted(TABLE.items())])
def test_policy_row_matches_entry(info):
    if info.amp is None:
        assert info.amp_note, f"{info.name}: amp=None needs an amp_note saying why"
        return
    assert info.row in policy.table(), f"amp/policy.py has no explicit row for {info.row!r}"
    assert policy.get(info.row) == info.amp, (
        f"{info.name}: policy row {info.row!r} is {policy.get(info.row)!r}, op table says "
        f"{info.amp!r}")


# --- forward values, empty and 0-d inputs ------------------------------------------------------

@pytest.mark.parametrize("info,sample", _params(lambda i: i.samples, "forward"))
def test_forward(info, sample):
    out = _call(info, sample.args, sample.kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    assert all(isinstance(o, mg.Tensor) for o in outs)
    if sample.expect is not None:
        _close(outs[0], sample.expect)
    if info.ref is not None:
        _close(outs[0], info.ref(*sample.args, **sample.kwargs))


# --- gradients ---------------------------------------------------------------------------------

@pytest.mark.parametrize("info,sample", _params(_grad_samples, "gradcheck"))
def test_gradcheck(info, sample):
    fn, arrays = bind(info.op, sample, lambda a: mg.tensor(a))
    assert gradcheck(fn, arrays, **info.tol)


@pytest.mark.parametrize("info,sample", _params(
    lambda i: [_first_nonempty(i)] if i.gradgrad else [], "gradgrad"))
def test_gradgradcheck(info, sample):
    fn, arrays = bind(info.op, sample)
    assert gradgradcheck(fn, arrays, **info.tol)


# --- non-contiguous inputs ---------------------------------------------------------------------

def _strided(a):
    """The same values as ``a`` in a non-contiguous view (transposed, or every other element)."""
    if a.ndim >= 2 and a.shape[-1] > 1 and a.shape[-2] > 1:
        return np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2)
    axis = next(i for i, n in enumerate(a.shape) if n > 1)
    buf = np.zeros(a.shape[:axis] + (2 * a.shape[axis],) + a.shape[axis + 1:], a.dtype)
    view = np.moveaxis(np.moveaxis(buf, axis, 0)[::2], 0, axis)
    view[...] = a
    return view


def _values_and_grads(fn, arrays):
    xs = [mg.Tensor(a, requires_grad=True) for a in arrays]
    mg.manual_seed(0)  # random ops (dropout) draw the same mask for both layouts
    out = fn(*xs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, mg.Tensor)]
    floats = [o for o in outs if o.dtype.kind == "f"]
    gs = [None] * len(xs)
    if floats and any(o.requires_grad for o in floats):
        rng = np.random.default_rng(0)
        loss = sum((o * mg.tensor(rng.standard_normal(o.shape))).sum() for o in floats)
        gs = grad(loss, xs, allow_unused=True)
    return [o.numpy() for o in outs], [None if g is None else g.numpy() for g in gs]


def _noncontig_samples(info):
    out = []
    for s in info.samples:
        _, arrays = bind(info.op, s)
        if any(a.ndim >= 1 and a.size > 1 for a in arrays):
            out.append(s)
    return out


@pytest.mark.parametrize("info,sample", _params(_noncontig_samples, "noncontiguous"))
def test_noncontiguous(info, sample):
    fn, arrays = bind(info.op, sample)
    views = [_strided(a) if a.ndim >= 1 and a.size > 1 else a for a in arrays]
    assert any(not v.flags["C_CONTIGUOUS"] for v in views)
    outs_c, grads_c = _values_and_grads(fn, arrays)
    outs_n, grads_n = _values_and_grads(fn, views)
    for c, n in zip(outs_c, outs_n):
        np.testing.assert_allclose(n, c, rtol=1e-12, atol=1e-12, equal_nan=True)
    for c, n in zip(grads_c, grads_n):
        assert (c is None) == (n is None)
        if c is not None:
            np.testing.assert_allclose(n, c, rtol=1e-12, atol=1e-12)


# --- autocast ----------------------------------------------------------------------------------

def _arrays(info):
    sample = _first_nonempty(info)
    return [a for a in sample.args if isinstance(a, np.ndarray)] + [
        x for a in sample.args if isinstance(a, (list, tuple)) for x in a
        if isinstance(x, np.ndarray)]


def _autocast_cases():
    out = []
    for name, info in sorted(TABLE.items()):
        if info.amp is None or not any(a.dtype.kind == "f" for a in _arrays(info)):
            continue  # no floating input (one_hot): nothing for autocast to decide
        for low in ("float16", "bfloat16"):
            out.append(pytest.param(info, low, id=f"{name}-{low}",
                                    marks=_mark(info.xfail.get("autocast"))))
    return out


@pytest.mark.parametrize("info,low", _autocast_cases())
def test_autocast_dtype(info, low):
    """The op runs in the dtype its category says: lower -> low precision, fp32 -> float32,
    promote -> the widest input, pass-through -> the input dtype."""
    sample = _first_nonempty(info)
    cat = info.amp
    low_dt, f32 = mg.tensor([0.0], dtype=low).dtype, np.dtype(np.float32)
    # Feed the dtype that makes the category visible: lower casts float32 down, fp32 casts
    # low precision up, promote sees one low and otherwise float32 inputs.
    given = [0]

    def convert(a):
        if a.dtype.kind != "f":
            return mg.tensor(a)
        first = given[0] == 0
        given[0] += 1
        if cat in ("lower", "lower_input"):
            dt = f32
        elif cat == "promote":
            dt = low_dt if first else f32
        else:
            dt = low_dt
        return mg.tensor(a.astype(dt))

    fn, arrays = bind(info.op, sample, convert)
    tensors = [convert(a) for a in arrays]
    n_float = given[0]
    expected = {"lower": low_dt, "lower_input": low_dt, "fp32": f32, "fp32_warn": f32,
                "passthrough": low_dt,
                "promote": f32 if n_float > 1 else low_dt}[cat]
    seen = []

    def hook(phase, fn_, inputs, outputs):
        if phase == "forward" and fn_.name == info.row:
            seen.append([x.dtype for x in inputs
                         if isinstance(x, mg.Tensor) and is_floating(x.dtype)])

    token = dispatch_hooks.set(dispatch_hooks.get() + (hook,))
    try:
        with amp.autocast(dtype=low), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*tensors)
    finally:
        dispatch_hooks.reset(token)
    assert seen, f"{info.name}: no Function named {info.row!r} ran; set policy_name"
    ran_in = seen[0][0] if seen[0] else None
    assert ran_in == expected, (
        f"{info.name} ({cat}) under autocast({low}) ran in {ran_in}, expected {expected}")


# --- inf / NaN, errors -------------------------------------------------------------------------

@pytest.mark.parametrize("info,case", _params(lambda i: i.nonfinite, "nonfinite"))
def test_nonfinite(info, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = _call(info, case.args, case.kwargs)
    _close(out, case.expect)


@pytest.mark.parametrize("info,case", _params(lambda i: i.errors))
def test_error_input(info, case):
    with pytest.raises(case.exc) as err:
        _call(info, case.args, case.kwargs)
    fragments = (case.match,) if isinstance(case.match, str) else case.match
    for fragment in fragments:
        assert fragment in str(err.value), f"{fragment!r} not in {str(err.value)!r}"
