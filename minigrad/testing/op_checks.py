"""The checks the op-table suite runs, one function per check, usable outside pytest.

Each ``check_*`` raises ``AssertionError`` naming the op (or the op's own exception) and returns
None. ``tests/test_op_table.py`` parametrises them over the table; ``check_entry`` runs them all
for one new entry (handy while writing it, see docs/internals.md).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import amp
from .._backend.dtypes import is_floating
from ..autodiff import grad
from ..core.modes import dispatch_hooks
from ..core.creation import manual_seed, tensor
from ..core.tensor import Tensor
from ..precision.policy import Category
from ._gradcheck import gradcheck, gradgradcheck
from .op_table import OpInfo, Sample, bind

__all__ = ["autocast_applies", "check_autocast", "check_dtype", "check_entry", "check_error",
           "check_forward",
           "check_gradcheck", "check_gradgrad", "check_noncontiguous", "check_nonfinite",
           "check_policy_row", "first_nonempty", "grad_samples", "noncontiguous_samples"]


def _close(actual, expect, atol=1e-6, rtol=1e-6):
    a = np.asarray(actual.numpy() if isinstance(actual, Tensor) else actual, np.float64)
    np.testing.assert_allclose(a, np.asarray(expect, np.float64), atol=atol, rtol=rtol,
                               equal_nan=True)


def _call(info: OpInfo, args, kwargs):
    fn, arrays = bind(info.op, Sample(args, kwargs))
    return fn(*[tensor(a) for a in arrays])


def grad_samples(info: OpInfo) -> list:
    return [s for s in info.samples if info.differentiable and s.grad]


def first_nonempty(info: OpInfo) -> Sample:
    """The first sample without an xfail whose differentiable inputs are all non-empty."""
    for s in info.samples:
        _, arrays = bind(info.op, s)
        if all(a.size > 0 for a in arrays) and s.xfail is None:
            return s
    return info.samples[0]


def noncontiguous_samples(info: OpInfo) -> list:
    return [s for s in info.samples
            if any(a.ndim >= 1 and a.size > 1 for a in bind(info.op, s)[1])]


def autocast_applies(info: OpInfo) -> bool:
    """An AMP category is declared and the op has a floating input for autocast to decide on."""
    if info.amp is None:
        return False
    args = first_nonempty(info).args
    arrays = [a for a in args if isinstance(a, np.ndarray)] + [
        x for a in args if isinstance(a, (list, tuple)) for x in a if isinstance(x, np.ndarray)]
    return any(a.dtype.kind == "f" for a in arrays)


def check_policy_row(info: OpInfo) -> None:
    """The op table and ``precision/policy.py`` agree on the op's category."""
    from ..amp import policy

    if info.amp is None:
        assert info.amp_note, f"{info.name}: amp=None needs an amp_note saying why"
        return
    assert info.row in policy.table(), f"precision/policy.py has no explicit row for {info.row!r}"
    assert policy.get(info.row) is info.amp, (
        f"{info.name}: policy row {info.row!r} is {policy.get(info.row)!r}, op table says "
        f"{info.amp!r}")


def check_forward(info: OpInfo, sample: Sample) -> None:
    """The op runs; its (first) output matches ``sample.expect`` and ``info.ref``."""
    out = _call(info, sample.args, sample.kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    assert all(isinstance(o, Tensor) for o in outs), f"{info.name}: returned a non-Tensor"
    if sample.expect is not None:
        _close(outs[0], sample.expect)
    if info.ref is not None:
        _close(outs[0], info.ref(*sample.args, **sample.kwargs))


_DTYPE_TOL = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 6e-2}


def check_dtype(info: OpInfo, dtype: str) -> None:
    """With every floating input in ``dtype`` (autocast off) the op matches its float64 result
    within that dtype's precision; floating outputs stay floating."""
    sample = first_nonempty(info)
    manual_seed(0)  # dropout: the same mask for both runs
    ref = _call(info, sample.args, sample.kwargs)
    ref = ref[0] if isinstance(ref, (tuple, list)) else ref
    fn, arrays = bind(info.op, sample, lambda a: tensor(a, dtype=dtype) if a.dtype.kind == "f"
                      else tensor(a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        manual_seed(0)
        out = fn(*[tensor(a, dtype=dtype) for a in arrays])
    out = out[0] if isinstance(out, (tuple, list)) else out
    assert is_floating(out.dtype) == is_floating(ref.dtype), (
        f"{info.name}: {dtype} inputs gave a {out.dtype} output (float64 inputs: {ref.dtype})")
    tol = _DTYPE_TOL[dtype]
    _close(out.astype("float64"), ref.numpy(), atol=tol, rtol=tol)


def check_gradcheck(info: OpInfo, sample: Sample) -> None:
    fn, arrays = bind(info.op, sample)
    gradcheck(fn, arrays, **info.tol)


def check_gradgrad(info: OpInfo, sample: Sample) -> None:
    fn, arrays = bind(info.op, sample)
    gradgradcheck(fn, arrays, **info.tol)


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
    # copy=False: the leaves hold the arrays as given (a view stays a view; Tensor() copies)
    xs = [Tensor(a, requires_grad=True, copy=False) for a in arrays]
    manual_seed(0)  # random ops (dropout) draw the same mask for both layouts
    out = fn(*xs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, Tensor)]
    floats = [o for o in outs if o.dtype.kind == "f"]
    gs = [None] * len(xs)
    if floats and any(o.requires_grad for o in floats):
        rng = np.random.default_rng(0)
        loss = sum((o * tensor(rng.standard_normal(o.shape))).sum() for o in floats)
        gs = grad(loss, xs, allow_unused=True)
    return [o.numpy() for o in outs], [None if g is None else g.numpy() for g in gs]


def check_noncontiguous(info: OpInfo, sample: Sample) -> None:
    """Transposed / strided views give the same values and gradients as contiguous inputs."""
    fn, arrays = bind(info.op, sample)
    views = [_strided(a) if a.ndim >= 1 and a.size > 1 else a for a in arrays]
    assert any(not v.flags["C_CONTIGUOUS"] for v in views)
    outs_c, grads_c = _values_and_grads(fn, arrays)
    outs_n, grads_n = _values_and_grads(fn, views)
    for c, n in zip(outs_c, outs_n):
        np.testing.assert_allclose(n, c, rtol=1e-12, atol=1e-12, equal_nan=True)
    for c, n in zip(grads_c, grads_n):
        assert (c is None) == (n is None), f"{info.name}: a gradient is missing for one layout"
        if c is not None:
            np.testing.assert_allclose(n, c, rtol=1e-12, atol=1e-12)


def check_autocast(info: OpInfo, low: str) -> None:
    """Under ``autocast(dtype=low)`` the op runs in the dtype its category says: lower -> low
    precision, fp32 -> float32, promote -> the widest input, pass-through -> the input dtype.

    "Runs in" is the dtype of the op's first floating input after autocast's casts, as the
    dispatch hooks see it (batch_norm's ``lower_input`` narrows only that input).
    """
    cat = info.amp
    low_dt, f32 = tensor([0.0], dtype=low).dtype, np.dtype(np.float32)
    # Feed the dtype that makes the category visible: lower casts float32 down, fp32 casts
    # low precision up, promote sees one low-precision and otherwise float32 inputs.
    given = [0]

    def convert(a):
        if a.dtype.kind != "f":
            return tensor(a)
        first = given[0] == 0
        given[0] += 1
        if cat is Category.LOWER or cat is Category.LOWER_INPUT or (
                cat is Category.PROMOTE and not first):
            return tensor(a.astype(f32))
        return tensor(a.astype(low_dt))

    fn, arrays = bind(info.op, first_nonempty(info), convert)
    tensors = [convert(a) for a in arrays]
    expected = {Category.LOWER: low_dt, Category.LOWER_INPUT: low_dt, Category.FP32: f32,
                Category.FP32_WARN: f32, Category.PASSTHROUGH: low_dt,
                Category.PROMOTE: f32 if given[0] > 1 else low_dt}[cat]
    seen = []

    def hook(phase, fn_, inputs, outputs):
        if phase == "forward" and fn_.name == info.row:
            seen.append([x.dtype for x in inputs if isinstance(x, Tensor) and is_floating(x.dtype)])

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


def check_nonfinite(info: OpInfo, case) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = _call(info, case.args, case.kwargs)
    _close(out[0] if isinstance(out, (tuple, list)) else out, case.expect)


def check_error(info: OpInfo, case) -> None:
    try:
        _call(info, case.args, case.kwargs)
    except case.exc as e:
        fragments = (case.match,) if isinstance(case.match, str) else case.match
        for fragment in fragments:
            assert fragment in str(e), f"{info.name}: {fragment!r} not in {str(e)!r}"
        return
    raise AssertionError(f"{info.name}: {case.name} did not raise {case.exc}")


def check_entry(info: OpInfo) -> None:
    """Every check of the suite for one entry, xfail declarations ignored."""
    check_policy_row(info)
    for s in info.samples:
        check_forward(info, s)
    for dtype in _DTYPE_TOL:
        check_dtype(info, dtype)
    for s in grad_samples(info):
        check_gradcheck(info, s)
    if info.gradgrad:
        check_gradgrad(info, first_nonempty(info))
    for s in noncontiguous_samples(info):
        check_noncontiguous(info, s)
    if autocast_applies(info):
        for low in ("float16", "bfloat16"):
            check_autocast(info, low)
    for case in info.nonfinite:
        check_nonfinite(info, case)
    for case in info.errors:
        check_error(info, case)
