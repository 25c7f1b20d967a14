"""One parametrised suite over the op table (``minigrad/testing/op_table.py``).

Every public op of ``minigrad.functional`` has an entry (test_every_public_op_has_an_entry);
each entry's samples run forward (values, empty and 0-d shapes; float32/float16/bfloat16
against float64), through the float64 gradcheck
(and gradgradcheck where declared), with non-contiguous inputs and under autocast (float16 and
bfloat16); every declared error input and inf/NaN case is checked. The checks themselves live
in ``minigrad/testing/op_checks.py``. Known deviations are declared in the table with a reason
and run as ``xfail(strict=True)``: a mark left on a fixed op fails.
"""

import importlib
import pkgutil
import re

import numpy as np
import pytest

import minigrad as mg
from minigrad.testing import op_checks as C
from minigrad.testing.op_table import FAMILIES, NON_OPS, op_table, public_ops

TABLE = op_table()
_GRAD_TESTS = ("gradcheck", "gradgrad", "noncontiguous")


def _params(select, test):
    """pytest params ``<op>-<item>`` for every (entry, item) pair ``select`` yields; an item's
    or the entry's ``xfail`` for ``test`` becomes an xfail mark."""
    out = []
    for name, info in sorted(TABLE.items()):
        for item in select(info):
            reason = getattr(item, "xfail", None) or info.xfail.get(test)
            if test in _GRAD_TESTS:
                reason = reason or item.xfail_grad
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            out.append(pytest.param(info, item, id=f"{name}-{item.name}", marks=marks))
    return out


def test_every_public_op_has_an_entry():
    missing = sorted(public_ops() - set(TABLE))
    assert not missing, (
        f"public ops without an op-table entry: {missing}; add one OpInfo per op in "
        "minigrad/testing/ops/<family>.py (see docs/internals.md, 'The op table')")
    unknown = sorted(set(TABLE) - public_ops())
    assert not unknown, f"op-table entries for names that are not public ops: {unknown}"
    assert all(NON_OPS.values()), "every exclusion in NON_OPS needs its reason"


def test_every_family_declares_error_inputs():
    families = {info.family for info in TABLE.values() if info.errors}
    assert set(FAMILIES) <= families, f"families without error inputs: {set(FAMILIES) - families}"


def test_public_ops_reads_family_modules_and_nn():
    ops = public_ops()
    assert {"relu", "sum", "conv2d", "cross_entropy", "nn.cross_entropy", "nn.square_loss"} <= ops
    assert "nn.relu" not in ops  # F.nn re-exports under the same name are the same op
    assert "sum_to_shape" not in ops  # private helpers are not ops


def test_every_entry_names_the_family_file_its_op_lives_in():
    wrong = []
    for name, info in sorted(TABLE.items()):
        if name.startswith("nn.") or info.family == "cast":  # F.nn spellings; core.cast
            continue
        module = getattr(mg.functional, name).__module__
        if module != f"minigrad.functional.{info.family}":
            wrong.append(f"{name}: family {info.family!r}, defined in {module}")
    assert not wrong, wrong


def test_no_function_class_shares_a_layer_name():
    """``nn.Conv2d`` is the layer; the op's Function is ``Conv2dFunction`` (one name, one class)."""
    import inspect

    from minigrad.core.function import Function

    layers = {n for n, c in vars(mg.nn).items() if inspect.isclass(c)}
    shared = []
    for fam in pkgutil.iter_modules(mg.functional.__path__):
        module = importlib.import_module(f"minigrad.functional.{fam.name}")
        shared += [f"{fam.name}.{n}" for n, c in vars(module).items()
                   if inspect.isclass(c) and issubclass(c, Function) and n in layers
                   and c.__module__ == module.__name__]
    assert not shared, f"Function classes named like a layer of minigrad.nn: {shared}"


@pytest.mark.parametrize("info", [pytest.param(i, id=n) for n, i in sorted(TABLE.items())])
def test_policy_row_matches_entry(info):
    C.check_policy_row(info)


@pytest.mark.parametrize("info,sample", _params(lambda i: i.samples, "forward"))
def test_forward(info, sample):
    C.check_forward(info, sample)


@pytest.mark.parametrize("info,dtype", [
    pytest.param(info, dtype, id=f"{name}-{dtype}", marks=[pytest.mark.xfail(
        reason=info.xfail[dtype], strict=True)] if dtype in info.xfail else [])
    for name, info in sorted(TABLE.items()) for dtype in ("float32", "float16", "bfloat16")])
def test_dtype(info, dtype):
    C.check_dtype(info, dtype)


@pytest.mark.parametrize("info,sample", _params(C.grad_samples, "gradcheck"))
def test_gradcheck(info, sample):
    C.check_gradcheck(info, sample)


@pytest.mark.parametrize("info,sample", _params(
    lambda i: [C.first_nonempty(i)] if i.gradgrad else [], "gradgrad"))
def test_gradgradcheck(info, sample):
    C.check_gradgrad(info, sample)


@pytest.mark.parametrize("info,sample", _params(C.noncontiguous_samples, "noncontiguous"))
def test_noncontiguous(info, sample):
    C.check_noncontiguous(info, sample)


@pytest.mark.parametrize("info,low", [
    pytest.param(info, low, id=f"{name}-{low}", marks=[pytest.mark.xfail(
        reason=info.xfail["autocast"], strict=True)] if "autocast" in info.xfail else [])
    for name, info in sorted(TABLE.items()) if C.autocast_applies(info)
    for low in ("float16", "bfloat16")])
def test_autocast_dtype(info, low):
    C.check_autocast(info, low)


@pytest.mark.parametrize("info,case", _params(lambda i: i.nonfinite, "nonfinite"))
def test_nonfinite(info, case):
    C.check_nonfinite(info, case)


@pytest.mark.parametrize("info,case", _params(lambda i: i.errors, "error"))
def test_error_input(info, case):
    C.check_error(info, case)


def test_checks_catch_a_wrong_entry():
    """The suite is not vacuous: a wrong category, gradient or error declaration fails."""
    import dataclasses

    from minigrad.testing.op_table import ErrorInput, rand

    relu = TABLE["relu"]
    with pytest.raises(AssertionError):
        C.check_policy_row(dataclasses.replace(relu, amp="fp32"))
    with pytest.raises(AssertionError):
        C.check_autocast(dataclasses.replace(relu, amp="fp32"), "float16")
    with pytest.raises(AssertionError):
        C.check_forward(dataclasses.replace(relu, ref=lambda x: x), relu.samples[0])
    with pytest.raises(AssertionError):
        C.check_error(relu, ErrorInput((rand(2),), ValueError, "x"))


def _operand_variants(sample):
    """(position, array) pairs: each array argument of ``sample`` swapped for an unrelated
    shape, the other kind of dtype, a 0-d, an empty and a higher-rank array."""
    for i, a in enumerate(sample.args):
        if hasattr(a, "shape"):
            yield i, a.astype(np.float32) if a.dtype.kind in "iub" else a.astype(np.int64)
            yield i, np.array(1, a.dtype)
            yield i, np.ones((0,) * max(a.ndim, 1), a.dtype)
            yield i, np.ones((2,) + a.shape, a.dtype)
            yield i, np.ones((5, 7) if a.ndim != 2 else (7,), a.dtype)


@pytest.mark.filterwarnings("ignore")  # broadcasting warnings are asserted elsewhere
@pytest.mark.parametrize("info", [pytest.param(i, id=n) for n, i in sorted(TABLE.items())])
def test_a_wrong_operand_is_an_error_naming_an_op(info):
    """Each operand swapped for a wrong shape, rank or dtype either computes or raises an error
    that starts with an op's name, never a raw NumPy message (an audit found cross and
    scatter_add leaking one; this sweep then found twelve more, from embedding's 0-d weight
    to interpolate's empty input)."""
    for sample in info.samples[:2]:
        for which, array in _operand_variants(sample):
            args = [mg.tensor(a) if hasattr(a, "shape") else a for a in sample.args]
            args[which] = mg.tensor(array)
            try:
                info.op(*args, **sample.kwargs)
            except (ValueError, TypeError, RuntimeError, IndexError) as e:
                named = re.match(r"([A-Za-z_0-9.]+)[ :]", str(e))
                assert named and named.group(1).split(".")[-1] in TABLE, (which, array.shape,
                                                                          str(e))
