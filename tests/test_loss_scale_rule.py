"""The dynamic loss-scale rule is written once (``_backend/loss_scale_rule.adjust``) and every
form of it agrees: the rule on Python numbers and on arrays, ``fused.scale_update``'s CPU branch,
the CUDA kernel's C source (executed here on the CPU), and ``GradScaler`` on both of its paths
(host and ``sync_free=True``), over a table of cases and over random sequences."""

import ast
import functools
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import amp
from minigrad._backend import fused
from minigrad._backend.loss_scale_rule import F32_MAX, adjust
from minigrad.optimizer import SGD

INF, NAN = float("inf"), float("nan")
RULE = {"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3, "min_scale": None,
        "max_scale": F32_MAX}

# (case, scale, tracker, found_inf, loss_bad, constants that differ from RULE, expected)
CASES = [
    ("overflow backs off, tracker resets", 1024.0, 2, True, False, {}, (512.0, 0)),
    ("overflow stops at min_scale", 1.5, 1, True, False, {"min_scale": 1.0}, (1.0, 0)),
    ("overflow above min_scale", 4.0, 0, True, False, {"min_scale": 1.0}, (2.0, 0)),
    ("overflow without a floor underflows to 0", 5e-324, 0, True, False, {}, (0.0, 0)),
    ("backoff_factor 1 only resets the tracker", 64.0, 2, True, False,
     {"backoff_factor": 1.0}, (64.0, 0)),
    ("clean step counts", 1024.0, 0, False, False, {}, (1024.0, 1)),
    ("clean step before the interval", 1024.0, 1, False, False, {}, (1024.0, 2)),
    ("clean step at the interval grows", 1024.0, 2, False, False, {}, (2048.0, 0)),
    ("interval 1 grows every clean step", 3.0, 0, False, False, {"growth_interval": 1},
     (6.0, 0)),
    ("growth capped at float32 max", 2.0 ** 127, 2, False, False, {}, (F32_MAX, 0)),
    ("growth from the cap stays there", F32_MAX, 2, False, False, {}, (F32_MAX, 0)),
    ("growth to inf is capped", 2.0 ** 127, 0, False, False,
     {"growth_factor": 2.0 ** 1000, "growth_interval": 1}, (F32_MAX, 0)),
    ("growth capped at max_scale 65504 (Chainer)", 40000.0, 2, False, False,
     {"max_scale": 65504.0}, (65504.0, 0)),
    ("max_scale does not touch a non-growing step", 1e6, 0, False, False,
     {"max_scale": 65504.0}, (1e6, 1)),
    ("NaN loss keeps scale and tracker", 1024.0, 2, True, True, {}, (1024.0, 2)),
    ("NaN loss with clean gradients keeps too", 1024.0, 2, False, True, {}, (1024.0, 2)),
    ("static scale (interval 0) never changes", 1024.0, 0, True, False,
     {"growth_interval": 0}, (1024.0, 0)),
    ("static scale on a clean step", 1024.0, 0, False, False, {"growth_interval": 0},
     (1024.0, 0)),
]
IDS = [c[0] for c in CASES]


def _consts(extra):
    return {**RULE, **extra}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rule_on_python_numbers(case):
    _, scale, tracker, found, bad, extra, expect = case
    got = adjust(scale, tracker, found, bad, **_consts(extra))
    assert got == expect
    assert type(got[0]) is float and type(got[1]) is int


@pytest.mark.parametrize("shape", [(), (1,)])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rule_on_arrays_equals_it_on_numbers(case, shape):
    _, scale, tracker, found, bad, extra, expect = case
    s, t = adjust(np.full(shape, scale), np.full(shape, tracker, np.int64),
                  np.full(shape, found, np.int32), np.full(shape, bad, np.int32),
                  **_consts(extra))
    assert s.dtype == np.float64 and t.dtype == np.int64 and s.shape == t.shape == shape
    assert s.reshape(-1)[0].tobytes() == np.float64(expect[0]).tobytes()
    assert int(t.reshape(-1)[0]) == expect[1]


def _both_forms(scale, tracker, found, bad, consts):
    """The rule's ``if`` form (Python numbers) and its ``np.where`` form (0-d arrays) on one
    state, as (scale bytes, tracker) pairs."""
    s, t = adjust(scale, tracker, found, bad, **consts)
    assert type(s) is float and type(t) is int
    with np.errstate(invalid="ignore"):  # odd states multiply inf by 0 (the values count)
        sa, ta = adjust(np.array(scale), np.array(tracker, np.int64),
                        np.array(found, np.int32), np.array(bad, np.int32), **consts)
    assert isinstance(sa, np.ndarray)
    return (np.float64(s).tobytes(), t), (sa.tobytes(), int(ta))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_python_number_form_is_the_array_form(case):
    # adjust() answers Python numbers with plain ifs (no NumPy dispatch on the host path's
    # every step); over the case table they are the np.where selections, bit for bit
    _, scale, tracker, found, bad, extra, _ = case
    numbers, arrays = _both_forms(scale, tracker, found, bad, _consts(extra))
    assert numbers == arrays


_ODD = [0.0, -0.0, 5e-324, 1.0, 3.0, 65504.0, F32_MAX, 1e308, INF, NAN]


@settings(max_examples=300, deadline=None)
@given(scale=st.sampled_from(_ODD) | st.floats(allow_nan=True, allow_infinity=True),
       tracker=st.integers(0, 5), found=st.booleans(), bad=st.booleans(),
       interval=st.integers(1, 5), growth=st.sampled_from([1.0, 2.0, 3.0, 2.0 ** 1000, INF]),
       backoff=st.sampled_from([0.5, 0.1, 1.0, 0.0]),
       min_scale=st.sampled_from([None, *_ODD]), max_scale=st.sampled_from(_ODD))
def test_python_number_form_is_the_array_form_on_any_state(scale, tracker, found, bad,
                                                            interval, growth, backoff,
                                                            min_scale, max_scale):
    # including states no scaler reaches (NaN or negative scales, NaN or signed-zero bounds):
    # NumPy's maximum/minimum semantics (NaN wins, a tie gives the second operand) are kept
    consts = {"growth_factor": growth, "backoff_factor": backoff, "growth_interval": interval,
              "min_scale": min_scale, "max_scale": max_scale}
    numbers, arrays = _both_forms(scale, tracker, found, bad, consts)
    assert numbers == arrays


def _device_args(case):
    """The arguments ``GradScaler`` gives ``fused.scale_update`` for one case."""
    _, scale, tracker, found, bad, extra, _ = case
    c = _consts(extra)
    return ([np.array([scale]), np.array([tracker], np.int64), np.array([found], np.int32),
             np.array([bad], np.int32)],
            (c["growth_factor"], c["backoff_factor"], c["growth_interval"],
             c["min_scale"] or 0.0, c["max_scale"]))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fused_scale_update_cpu_branch_is_the_rule(case):
    arrays, consts = _device_args(case)
    fused.scale_update(*arrays, *consts)          # in place, as the sync-free scaler uses it
    assert (float(arrays[0][0]), int(arrays[1][0])) == case[-1]


# ----------------------------------------------------------------------------- the CUDA kernel
@functools.lru_cache(maxsize=None)
def _fused_source():
    """``fused.py`` parsed whole: reading it through ``ast`` (not ``inspect.getsource``, which
    maps the imported functions' line numbers onto the file as it is now) stays right while
    the file is being edited."""
    return ast.parse(Path(fused.__file__).read_text())


def _function(name):
    return next(n for n in ast.walk(_fused_source())
                if isinstance(n, ast.FunctionDef) and n.name == name)


def _kernel_params() -> list:
    """The kernel's parameter names, in order (inputs, then the in/out ``s``, ``t``)."""
    call = next(n for n in ast.walk(_function("_scale_kernel"))
                if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "ElementwiseKernel")
    decl = call.args[0].value + ", " + call.args[1].value
    return [d.split()[-1] for d in decl.split(",")]


def _launch_args() -> list:
    """The Python names ``scale_update`` passes to the kernel, in order."""
    call = next(n for n in ast.walk(_function("scale_update"))
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Call)
                and getattr(n.func.func, "id", "") == "_scale_kernel")
    return [a.id for a in call.args]


def _kernel_body() -> str:
    assign = next(n for n in _fused_source().body if isinstance(n, ast.Assign)
                  and getattr(n.targets[0], "id", "") == "_SCALE_OP")
    return assign.value.value


def _c_to_python(src: str) -> str:
    """Translate the kernel body (a small C subset: if/else if/else blocks, declarations and
    assignments, the ?: operator) into Python, line by line. Anything else fails loudly: a
    kernel edited beyond this subset needs the translator taught, not the test skipped."""
    out = []
    for raw in src.strip("\n").splitlines():
        pad = "    " * ((len(raw) - len(raw.lstrip())) // 2)
        code = raw.strip()
        if code == "}":
            continue
        if code == "} else {":
            out.append(pad + "else:")
            continue
        m = re.fullmatch(r"(\} else )?if \((.+)\) \{", code)
        if m:
            out.append(pad + ("elif " if m.group(1) else "if ") + m.group(2) + ":")
            continue
        m = re.fullmatch(r"(?:double |long long |int )?(\w+) = (.+);", code)
        if m:
            expr = m.group(2)
            t = re.fullmatch(r"(.+?) \? (.+?) : (.+)", expr)
            if t:
                expr = f"({t.group(2)} if {t.group(1)} else {t.group(3)})"
            out.append(f"{pad}{m.group(1)} = {expr}")
            continue
        raise AssertionError(f"kernel line outside the translated C subset: {raw!r}")
    return "\n".join(out)


def _run_kernel_source(arrays, consts):
    """One thread of the kernel, run on the CPU with the arguments ``scale_update`` gives it
    (raw arrays as lists, the elementwise ``s``/``t`` as Python numbers: C ``double`` and
    ``long long`` arithmetic here is Python's float and int arithmetic)."""
    scale, tracker, found, bad = arrays
    values = {"found_inf": [int(found[0])], "loss_bad": [int(bad[0])],
              "growth_factor": consts[0], "backoff_factor": consts[1],
              "growth_interval": consts[2], "min_scale": consts[3], "cap": consts[4],
              "scale": float(scale[0]), "tracker": int(tracker[0])}
    params, args = _kernel_params(), _launch_args()
    assert len(params) == len(args) == len(values), (params, args)
    env = {p: values[a] for p, a in zip(params, args)}
    exec(_c_to_python(_kernel_body()), {}, env)
    return env[params[-2]], env[params[-1]]


def test_kernel_signature_matches_its_launch():
    assert _kernel_params() == ["found", "loss_bad", "growth", "backoff", "interval",
                                "min_scale", "cap", "s", "t"]
    assert _launch_args() == ["found_inf", "loss_bad", "growth_factor", "backoff_factor",
                              "growth_interval", "min_scale", "cap", "scale", "tracker"]


@pytest.mark.parametrize("case", [c for c in CASES if _consts(c[5])["growth_interval"] > 0],
                         ids=[c[0] for c in CASES if _consts(c[5])["growth_interval"] > 0])
def test_cuda_kernel_source_expresses_the_rule(case):
    # interval 0 never reaches the kernel (scale_update returns first: nothing changes)
    arrays, consts = _device_args(case)
    s, t = _run_kernel_source(arrays, consts)
    assert (np.float64(s).tobytes(), t) == (np.float64(case[-1][0]).tobytes(), case[-1][1])


@settings(max_examples=200, deadline=None)
@given(scale=st.floats(min_value=5e-324, max_value=1e300), tracker=st.integers(0, 5),
       found=st.booleans(), bad=st.booleans(), interval=st.integers(1, 5),
       growth=st.sampled_from([1.0, 2.0, 3.0, 2.0 ** 900]),
       backoff=st.sampled_from([0.5, 0.1, 1.0]),
       min_scale=st.sampled_from([None, 1.0, 1e-300]),
       max_scale=st.sampled_from([F32_MAX, 65504.0]))
def test_cuda_kernel_source_equals_the_rule_on_random_states(scale, tracker, found, bad,
                                                             interval, growth, backoff,
                                                             min_scale, max_scale):
    consts = {"growth_factor": growth, "backoff_factor": backoff, "growth_interval": interval,
              "min_scale": min_scale, "max_scale": max_scale}
    expect = adjust(scale, tracker, found, bad, **consts)
    case = ("random", scale, tracker, found, bad, consts, expect)
    arrays, args = _device_args(case)
    s, t = _run_kernel_source(arrays, args)
    assert (np.float64(s).tobytes(), t) == (np.float64(expect[0]).tobytes(), expect[1])


# ----------------------------------------------------------------------------- GradScaler
def _scaler_sequence(events, sync_free, init_scale, **kw):
    """(scale, tracker) after each ``update()`` of a GradScaler fed ``events``: pairs
    (gradient overflowed, loss was NaN), both learnt the ordinary way (an inf gradient, a NaN
    loss passed to ``scale``)."""
    p = mg.Parameter(np.ones(2, np.float32))
    opt = SGD([p], lr=0.01)
    scaler = amp.GradScaler(init_scale=init_scale, sync_free=sync_free, max_nonfinite_losses=0,
                            **kw)
    out = []
    for grad_inf, loss_nan in events:
        scaler.scale((p * mg.tensor(NAN if loss_nan else 0.0)).sum())
        p.grad = mg.tensor([INF if grad_inf else 1.0, 0.5])
        scaler.step(opt)
        scaler.update()
        out.append((scaler.get_scale(), scaler._growth_tracker))
    return out


def _rule_sequence(events, init_scale, growth_factor=2.0, backoff_factor=0.5,
                   growth_interval=2000, min_scale=None, max_scale=None):
    consts = {"growth_factor": growth_factor, "backoff_factor": backoff_factor,
              "growth_interval": growth_interval, "min_scale": min_scale,
              "max_scale": F32_MAX if max_scale is None else min(max_scale, F32_MAX)}
    s, t, out = init_scale, 0, []
    for grad_inf, loss_nan in events:
        s, t = adjust(s, t, grad_inf, loss_nan, **consts)
        out.append((s, t))
    return out


C, O, L, B = (False, False), (True, False), (False, True), (True, True)  # clean/overflow/loss
SEQUENCES = [
    ("overflow backs off and resets the tracker", [C, C, O, C, C, C],
     {"init_scale": 1024.0, "growth_interval": 3},
     [(1024.0, 1), (1024.0, 2), (512.0, 0), (512.0, 1), (512.0, 2), (1024.0, 0)]),
    ("min_scale floor", [O, O, O, C],
     {"init_scale": 4.0, "min_scale": 2.0, "growth_interval": 2},
     [(2.0, 0), (2.0, 0), (2.0, 0), (2.0, 1)]),
    ("growth capped at float32 max", [C, C, C],
     {"init_scale": 2.0 ** 127, "growth_interval": 1},
     [(F32_MAX, 0), (F32_MAX, 0), (F32_MAX, 0)]),
    ("growth to inf capped", [C], {"init_scale": 2.0 ** 127, "growth_interval": 1,
                                    "growth_factor": 2.0 ** 1000}, [(F32_MAX, 0)]),
    ("max_scale 65504", [C, C, O], {"init_scale": 32768.0, "growth_interval": 1,
                                    "max_scale": 65504.0},
     [(65504.0, 0), (65504.0, 0), (32752.0, 0)]),
    ("NaN loss keeps scale and tracker", [C, B, L, C],
     {"init_scale": 1024.0, "growth_interval": 2},
     [(1024.0, 1), (1024.0, 1), (1024.0, 1), (2048.0, 0)]),
    ("static scale", [O, C, C], {"init_scale": 1024.0, "growth_interval": 0},
     [(1024.0, 0), (1024.0, 0), (1024.0, 0)]),
]


@pytest.mark.parametrize("sync_free", [False, True])
@pytest.mark.parametrize("seq", SEQUENCES, ids=[s[0] for s in SEQUENCES])
def test_grad_scaler_follows_the_rule_over_a_sequence(seq, sync_free):
    _, events, kw, expect = seq
    assert _rule_sequence(events, **kw) == expect
    assert _scaler_sequence(events, sync_free, **kw) == expect


@settings(max_examples=60, deadline=None)
@given(events=st.lists(st.sampled_from([C, C, C, O, L, B]), min_size=1, max_size=16),
       init_scale=st.sampled_from([1.0, 3.0, 2.0 ** 16, 2.0 ** 127]),
       growth_interval=st.integers(0, 4),
       growth_factor=st.sampled_from([1.0, 2.0, 3.0, 2.0 ** 1000]),
       backoff_factor=st.sampled_from([0.5, 0.25, 1.0]),
       min_scale=st.sampled_from([None, 1.0, 8.0]),
       max_scale=st.sampled_from([None, 65504.0, 2.0 ** 20]))
def test_grad_scaler_both_paths_equal_the_rule_on_random_sequences(events, **kw):
    expect = _rule_sequence(events, **kw)
    assert _scaler_sequence(events, False, **kw) == expect
    assert _scaler_sequence(events, True, **kw) == expect    # the sync-free path on NumPy
