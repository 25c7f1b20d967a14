"""Random chains of 3-8 ops mixing dtypes (float64/32/16, int64/32, bool), 0-d tensors and
Python scalars, run in minigrad and PyTorch: both raise or both give the same dtype, shape and
values (hypothesis draws the programs). Skips without PyTorch."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minigrad as mg

torch = pytest.importorskip("torch")

DTYPES = ["float64", "float32", "float16", "int64", "int32", "bool"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "lt", "eq"]
UNARY = ["neg", "abs", "exp", "sqrt_abs", "square", "sum", "mean_float"]


def _apply(lib, op, a, b=None):
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    if op in ("maximum", "minimum"):
        if not isinstance(b, (mg.Tensor, torch.Tensor)):
            b = lib.tensor(b)
        return getattr(torch if lib is torch else mg.functional, op)(a, b)
    if op == "lt":
        return a < b
    if op == "eq":
        return a == b
    if op == "neg":
        return -a
    if op == "abs":
        return abs(a)
    if op == "exp":
        return a.exp()
    if op == "sqrt_abs":
        return abs(a).sqrt()
    if op == "square":
        return a * a
    if op == "sum":
        return a.sum()
    if op == "mean_float":
        return a.astype("float32").mean() if lib is mg else a.to(torch.float32).mean()
    raise AssertionError(op)


@st.composite
def programs(draw):
    shape = draw(st.sampled_from([(), (3,), (2, 3)]))
    start = draw(st.sampled_from(DTYPES[:5]))
    steps = []
    for _ in range(draw(st.integers(3, 8))):
        if draw(st.booleans()):
            kind = draw(st.sampled_from(["tensor", "zero_d", "scalar"]))
            dtype = draw(st.sampled_from(DTYPES))
            value = draw(st.sampled_from([2, 0.5, -1.5, 3, True]))
            steps.append(("binary", draw(st.sampled_from(BINARY)), kind, dtype, value))
        else:
            steps.append(("unary", draw(st.sampled_from(UNARY)), None, None, None))
    return shape, start, steps


def _operand(lib, kind, dtype, value, shape):
    arr = np.full(shape if kind == "tensor" else (), value).astype(dtype)
    if kind == "scalar":
        return value
    return mg.tensor(arr) if lib is mg else torch.tensor(arr)


def _run(lib, program, nudge=None):
    """Run ``program``; ``nudge(i, x)`` (if given) may replace the value after step ``i``
    (``-1``: the input)."""
    shape, start, steps = program
    x0 = (np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64) / 2).reshape(shape)
    x = mg.tensor(x0.astype(start)) if lib is mg else torch.tensor(x0.astype(start))
    try:
        x = nudge(-1, x) if nudge else x
        for i, (kind, op, okind, dtype, value) in enumerate(steps):
            if kind == "unary":
                x = _apply(lib, op, x)
            else:
                x = _apply(lib, op, x, _operand(lib, okind, dtype, value, shape))
            x = nudge(i, x) if nudge else x
        return None, x
    except Exception as e:  # noqa: BLE001 - compared: both raise or neither
        return e, None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_chain_agrees_with_pytorch(program):
    e_mg, y_mg = _run(mg, program)
    e_pt, y_pt = _run(torch, program)
    assert (e_mg is None) == (e_pt is None), (program, e_mg, e_pt)
    if e_mg is not None:
        return
    assert str(y_mg.dtype) == str(y_pt.dtype).replace("torch.", ""), (program, y_mg, y_pt)
    a, b = y_mg.numpy(), y_pt.numpy()
    assert a.shape == b.shape
    tol = 2e-3 if "float16" in str(y_mg.dtype) else 1e-5
    tol = max(tol, 4 * _sensitivity(program))
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol,
                               equal_nan=True, err_msg=str(program))


def _widened(program):
    """The program with every float16/bfloat16/float32 in float64 (run it with PyTorch's
    default dtype float64, so an integer start widens too)."""
    shape, start, steps = program
    wide = {"float16": "float64", "bfloat16": "float64", "float32": "float64"}
    return (shape, wide.get(start, start),
            [(k, op, ok, wide.get(d, d), v) for k, op, ok, d, v in steps])


_ULP = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8, torch.float32: 2.0 ** -24,
        torch.float64: 2.0 ** -53}


def _sensitivity(program) -> float:
    """How far the result moves when one intermediate is off by half an ulp of the dtype it has
    in the program, the worst over every stage, measured on the chain run in float64. Two
    libraries' one-ulp differences (NumPy's float32 exp(1) is one ulp above PyTorch's) are
    amplified by chains such as exp(square(square(exp(x)))) far beyond a fixed tolerance, even
    where an early op clamps the input (maximum(x, 2))."""
    dtypes = {}

    def record(i, x):
        dtypes[i] = x.dtype
        return x

    _run(torch, program, nudge=record)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # integer inputs of exp & co. become float64 too
    try:
        _, exact = _run(torch, _widened(program))
        if exact is None or not exact.is_floating_point():
            return 0.0
        worst = 0.0
        for stage, dtype in dtypes.items():
            ulp = _ULP.get(dtype)
            if ulp is None:
                continue
            _, moved = _run(torch, _widened(program), nudge=lambda i, x, s=stage, u=ulp:
                            x * (1 + u) if i == s else x)
            if moved is None or moved.shape != exact.shape:
                continue
            a, b = exact.numpy(), moved.numpy()
            ok = np.isfinite(a) & np.isfinite(b) & (a != 0)
            worst = max(worst, float(np.max(np.abs(a[ok] - b[ok]) / np.abs(a[ok]),
                                            initial=0.0)))
        return worst
    finally:
        torch.set_default_dtype(default)
