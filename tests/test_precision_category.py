"""One encoding of an op's AMP category: ``policy.Category``.

The policy table, the dispatch fast path (``AutocastPolicy``), the module policy and the op
table's ``OpInfo.amp`` all hold ``Category`` members; the public API still takes and compares
the strings (a ``str`` enum)."""

import ast
import dataclasses
import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import amp
from minigrad.core.function import Function
from minigrad.precision import module as module_policy
from minigrad.precision import policy
from minigrad.precision.autocast import AutocastPolicy, make_policy
from minigrad.precision.policy import Category
from minigrad.testing.op_table import OpInfo, Sample, op_table

f16, f32 = np.dtype(np.float16), np.dtype(np.float32)


class _Probe(Function):
    """An identity op whose category the tests set; records the dtypes it received."""

    name = "category_probe"
    seen: list = []  # noqa: RUF012 - shared on purpose: the tests read what the op received

    def forward(self, *xs):
        _Probe.seen.append(tuple(x.dtype for x in xs))
        return xs[0].copy()

    def backward(self, gy):
        return (gy,) + (None,) * (len(self.inputs) - 1)


@pytest.fixture(autouse=True)
def _clean_policy():
    policy.reset()
    yield
    policy.reset()


# ------------------------------------------------------------------------------------- values
def test_category_members_are_their_strings():
    assert [c.value for c in Category] == ["lower", "fp32", "promote", "lower_input",
                                           "fp32_warn", "passthrough"]
    assert policy.CATEGORIES == tuple(Category)
    for c in Category:
        assert c == c.value and hash(c) == hash(c.value)
        assert str(c) == c.value and f"{c}" == c.value and f"{c:>12}" == f"{c.value:>12}"
        assert Category(c.value) is c and policy.as_category(c.value) is c
        assert policy.as_category(c) is c
        assert {c.value: 1}[c] == 1  # string-keyed tables (docs) still look members up


def test_get_and_table_return_members():
    assert policy.get("matmul") is Category.LOWER
    assert policy.get("softmax") is Category.FP32
    assert policy.get("add") is Category.PROMOTE
    assert policy.get("batch_norm") is Category.LOWER_INPUT
    assert policy.get("binary_cross_entropy") is Category.FP32_WARN
    assert policy.get("tanh") is Category.PASSTHROUGH
    assert policy.get("no_such_op") is Category.PASSTHROUGH
    assert amp.policy.get("tanh") == "passthrough"  # the documented string comparison
    assert all(type(c) is Category for c in policy.table().values())


def test_set_takes_strings_and_members_and_stores_members():
    amp.policy.set("tanh", "fp32")
    assert policy.get("tanh") is Category.FP32 and policy.table()["tanh"] is Category.FP32
    amp.policy.set("tanh", Category.LOWER)
    assert policy.get("tanh") is Category.LOWER
    assert amp.policy.set is policy.set_category


@pytest.mark.parametrize("bad", ["half", "LOWER", "Category.LOWER", 1, None])
def test_unknown_category_names_the_valid_strings(bad):
    with pytest.raises(ValueError, match="unknown category") as err:
        policy.set_category("tanh", bad)
    msg = str(err.value)
    assert all(repr(c.value) in msg for c in Category) and "<Category" not in msg
    if bad is not None:  # amp=None is an op table entry without a Function of its own
        with pytest.raises(ValueError, match="unknown category"):
            OpInfo("tanh", "elementwise", (), bad)


def test_policy_module_never_calls_builtin_set():
    """``set`` is rebound to ``set_category`` at the end of the module, so a call of the name
    ``set`` anywhere in it would reach the override, not the builtin."""
    tree = ast.parse(inspect.getsource(policy))
    calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "set"]
    assert calls == []
    assert policy.__dict__["set"] is policy.set_category
    policy.check_op_name("category_probe")  # walks the Function classes (a set comprehension)


def test_merged_table_omits_passthrough_and_never_cast_rows():
    merged = policy.merged_table()
    assert "tanh" not in merged and "cast" not in merged and "detach" not in merged
    assert merged["matmul"] is Category.LOWER and merged["batch_norm"] is Category.LOWER_INPUT
    region = policy.merged_table(fp32_ops=("matmul",), lower_ops=("tanh",))
    assert region["matmul"] is Category.FP32 and region["tanh"] is Category.LOWER
    assert all(type(c) is Category for c in region.values())


def test_module_table_derives_from_the_policy_categories():
    table = module_policy._module_table()
    assert table["batch_norm"] is Category.LOWER_INPUT
    assert all(table[n] is Category.PASSTHROUGH for n in ("cast", "to_device", "clone", "detach"))
    assert set(table.values()) <= {Category.LOWER_INPUT, Category.PASSTHROUGH}
    policy.set_category("batch_norm", "fp32")  # a module policy then casts all its inputs
    assert "batch_norm" not in module_policy._module_table()


def test_fast_path_reasons_name_the_category():
    x, h = mg.ones(2), mg.ones(2, dtype=mg.float16)
    for cat, ins, reason in [
            (Category.LOWER, (x,), "autocast:lower(float16)"),
            (Category.FP32, (h,), "autocast:fp32(float32)"),
            (Category.PROMOTE, (x, h), "autocast:promote(float32)"),
            (Category.LOWER_INPUT, (x, x), "autocast:lower_input(float16, params float32)"),
            (Category.PASSTHROUGH, (h,), None)]:
        policy.set_category("category_probe", cat)
        pol = make_policy(mg.float16, mg.float32, None)
        assert pol.cast_inputs(_Probe, ins)[2] == reason, cat


# ------------------------------------------------------------------ the op table vs the policy
def test_every_op_table_entry_names_its_policy_category():
    entries = [info for info in op_table().values() if info.amp is not None]
    assert len(entries) > 100
    for info in entries:
        assert type(info.amp) is Category, info.name
        assert policy.get(info.row) is info.amp, (
            f"{info.name}: policy row {info.row!r} is {policy.get(info.row)!r}, op table says "
            f"{info.amp!r}")


def test_op_info_validates_and_stores_the_member():
    info = OpInfo("tanh", "elementwise", (Sample((np.ones(2),)),), "passthrough")
    assert info.amp is Category.PASSTHROUGH
    assert dataclasses.replace(info, amp="fp32").amp is Category.FP32
    assert dataclasses.replace(info, amp=Category.LOWER).amp is Category.LOWER
    assert dataclasses.replace(info, amp=None, amp_note="no Function").amp is None


# ---------------------------------------------------------------------------- round trips
# What the probe receives under autocast(float16) from inputs (float32, float16), per category.
_AUTOCAST_SEEN = {
    Category.LOWER: (f16, f16),
    Category.FP32: (f32, f32),
    Category.PROMOTE: (f32, f32),
    Category.LOWER_INPUT: (f16, f32),
    Category.FP32_WARN: (f32, f32),
    Category.PASSTHROUGH: (f32, f16),
}


@settings(max_examples=60, deadline=None)
@given(cat=st.sampled_from(list(Category)), as_string=st.booleans(),
       name=st.sampled_from(sorted(set(policy.table()) - policy._NEVER_CAST) + ["category_probe"]))
def test_every_category_round_trips(cat, as_string, name):
    """set -> get -> table -> the region's merged table -> the module table -> dispatch."""
    policy.reset()
    try:
        policy.set_category(name, cat.value if as_string else cat)
        assert policy.get(name) is cat and policy.table()[name] is cat
        merged = policy.merged_table()
        assert merged.get(name) is (None if cat is Category.PASSTHROUGH else cat)
        assert policy.merged_table(fp32_ops=(name,))[name] is Category.FP32
        assert AutocastPolicy(merged, f16, f32, None).categories is merged
        assert (module_policy._module_table().get(name) is Category.LOWER_INPUT) == (
            cat is Category.LOWER_INPUT)
        if name == "category_probe":
            _Probe.seen.clear()
            with warnings.catch_warnings(), amp.autocast(dtype="float16"):
                warnings.simplefilter("ignore", UserWarning)  # fp32_warn warns once
                _Probe.apply(mg.ones(2), mg.ones(2, dtype=mg.float16))
            assert _Probe.seen[-1] == _AUTOCAST_SEEN[cat]
    finally:
        policy.reset()
