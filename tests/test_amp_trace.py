"""amp.trace(): per-op dtype trace of forward and backward, built on dispatch_hooks only."""

import json

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import amp, nn
from minigrad.core.modes import dispatch_hooks


@pytest.fixture(autouse=True)
def _clean_policy():
    yield
    amp.policy.reset()


def _lenet_step(net, x, y):
    with amp.autocast():
        logits = net(x)
        probs = F.softmax(logits, axis=1)
        loss = F.nn.cross_entropy(logits, y)
    loss.backward()
    return probs, loss


def test_lenet_trace_dtypes_modules_and_reasons():
    mg.manual_seed(0)
    net = mg.models.lenet5()
    x = mg.randn(2, 1, 32, 32)
    y = mg.tensor(np.array([1, 7]))
    with amp.trace() as t:
        probs, loss = _lenet_step(net, x, y)
    fwd = t.records(phase="forward")
    by_op = {}
    for r in fwd:
        by_op.setdefault(r["op"], []).append(r)
    # conv2d / linear in float16 by the policy row, with their module paths
    assert [r["module"] for r in by_op["conv2d"]] == ["conv1", "conv2"]
    assert [r["module"] for r in by_op["linear"]] == ["fc1", "fc2", "fc3"]
    for r in by_op["conv2d"] + by_op["linear"]:
        assert r["compute_dtype"] == "float16" and r["output_dtypes"] == ("float16",)
        assert r["reason"] == "policy row: lower"
    # the first conv sees float32 data and float32 parameters: 3 casts into float16
    c1 = by_op["conv2d"][0]
    assert c1["input_dtypes"] == ("float32", "float32", "float32") and c1["casts"] == 3
    assert c1["cast_bytes"] == (2 * 32 * 32 + 6 * 25 + 6) * 2
    # softmax and the loss in float32, from float16 logits
    for op in ("softmax", "cross_entropy"):
        (r,) = by_op[op]
        assert r["compute_dtype"] == "float32" and r["output_dtypes"][0] == "float32"
        assert r["input_dtypes"][0] == "float16" and r["reason"] == "policy row: fp32"
        assert r["module"] == ""
    assert str(probs.dtype) == "float32" and str(loss.dtype) == "float32"
    # relu passes float16 through; autocast's own casts are not records
    assert all(r["compute_dtype"] == "float16" for r in by_op["relu"])
    assert "cast" not in by_op
    # backward nodes replay the forward dtype and carry the forward's module path
    bwd = [r for r in t.records(phase="backward", op="linear") if r["backward_of"] is None]
    assert [r["module"] for r in bwd] == ["fc3", "fc2", "fc1"]
    assert all(r["compute_dtype"] == "float16" for r in bwd)
    assert bwd[0]["reason"] == "replays forward (policy row: lower)"
    inner = [r for r in t.records(phase="backward") if r["backward_of"] == "linear"]
    assert inner and {r["module"] for r in inner} == {"fc1", "fc2", "fc3"}
    json.dumps(t.records())  # plain data
    s = t.summary()
    assert "conv2d" in s and "float16:2" in s and "cross_entropy" in s


def test_cache_hit_region_and_global_overrides_promotion_and_off():
    lin = nn.Linear(4, 4)
    x = mg.ones(2, 4)
    with amp.trace() as t, amp.autocast():
        lin(x)
        lin(x)  # weight and bias casts come from the cache
    a, b = t.records(op="linear")
    assert a["casts"] == 3 and a["cache_hits"] == 0
    assert b["casts"] == 1 and b["cache_hits"] == 2
    assert b["reason"] == "policy row: lower + cast cache hit"
    assert b["input_dtypes"] == ("float32", "float32", "float32")

    m = mg.ones(3, 3)
    with amp.trace() as t:
        with amp.autocast(fp32_ops=["matmul"]):
            m @ m
        amp.policy.set("relu", "fp32")
        with amp.autocast():
            F.relu(m.astype("float16"))
            m.astype("float16") + m
        m @ m
    recs = t.records()
    mm1, cast1, relu, cast2, add, mm2 = recs
    assert mm1["reason"] == "region override: fp32" and mm1["compute_dtype"] == "float32"
    assert relu["reason"] == "global override: fp32" and relu["input_dtypes"] == ("float16",)
    assert relu["casts"] == 1 and relu["compute_dtype"] == "float32"
    assert cast1["op"] == cast2["op"] == "cast" and cast2["reason"] == "explicit cast"
    assert add["reason"] == "promotion to float32" and add["casts"] == 1
    assert mm2["reason"] == "autocast off" and mm2["compute_dtype"] == "float32"


def test_bfloat16_and_module_paths_nested():
    net = nn.Sequential(nn.Linear(3, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 2)))
    with amp.trace() as t, amp.autocast(dtype="bfloat16"):
        net(mg.ones(1, 3))
    recs = t.records()
    assert [r["module"] for r in recs] == ["0", "1.0", "1.1"]
    assert recs[2]["compute_dtype"] == "bfloat16"


def test_zero_cost_when_off_and_restored_after_errors():
    assert dispatch_hooks.get() == ()
    with pytest.raises(ZeroDivisionError):
        with amp.trace():
            assert len(dispatch_hooks.get()) == 1
            1 / 0
    assert dispatch_hooks.get() == ()
    with amp.trace() as outer:
        with amp.trace() as inner:
            mg.ones(2) + 1.0
        mg.ones(2) * 2.0
    assert len(inner) == 1 and len(outer) == 2


def _cancellation_inputs():
    rng = np.random.default_rng(0)
    # features ~1000 whose neighbours differ by ~0.01: float16 (ulp 0.5 at 1000) loses it all
    x = mg.tensor(1000 + rng.standard_normal((8, 16)).astype(np.float32) * 0.01)
    d = np.zeros((16, 8), np.float32)
    d[np.arange(0, 16, 2), np.arange(8)] = 1.0
    d[np.arange(1, 16, 2), np.arange(8)] = -1.0
    return x, mg.tensor(d)


def test_advisor_flags_the_op_that_loses_precision_not_its_consumers():
    mg.manual_seed(0)
    x, d = _cancellation_inputs()
    head = nn.Sequential(nn.Linear(8, 4), nn.ReLU())

    def step(x):
        return head(x @ d).sum()

    adv = amp.suggest_policy(step, x)
    assert [o["op"] for o in adv.ops] == ["matmul", "linear", "relu", "sum"]
    assert [(c["op"], c["module"]) for c in adv.candidates] == [("matmul", "")]
    assert adv.candidates[0]["error"] > 0.5 and adv.fp32_ops == ["matmul"]
    lin = adv.ops[1]
    assert lin["input_error"] == adv.candidates[0]["error"] and lin["module"] == "0"
    assert "fp32_ops=['matmul']" in adv.report()
    fixed = amp.suggest_policy(step, x, fp32_ops=["matmul"])
    assert fixed.candidates == [] and "default policy is fine" in fixed.report()
    # an exp forced into float16 overflows near 11.1 (e^11.1 > 65504): error inf
    z = mg.full((4,), 11.5)
    adv = amp.suggest_policy(lambda z: F.exp(z * 1.0).sum(), z, lower_ops=["exp"])
    assert adv.fp32_ops == ["exp"] and adv.candidates[0]["error"] == float("inf")
    assert amp.suggest_policy(lambda z: F.exp(z * 1.0).sum(), z).candidates == []
