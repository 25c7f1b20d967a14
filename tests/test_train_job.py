"""The main training job (examples/train_lenet.py): a short run, learning, and bit-exact resume."""

import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

import minigrad as mg  # noqa: E402
from minigrad.serialization import load  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from train_lenet import CHECKPOINT, main  # noqa: E402

ARGS = ["--no-progress", "--limit", "256", "--lr", "0.05"]


@pytest.fixture(scope="module")
def one_epoch(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("one_epoch"))
    # Interrupted after its first epoch: the schedule is still the 2-epoch one.
    return out, main(ARGS + ["--epochs", "2", "--stop-after", "1", "--out", out])


def test_short_run_results(one_epoch):
    out, res = one_epoch
    assert res["epochs"] == 1
    assert res["device"] == ("cuda:0" if mg.cuda.is_available() else "cpu")  # the GPU if any
    assert 0.0 <= res["test_accuracy"] <= 1.0
    assert abs(res["train_loss"] - math.log(10)) < 0.2       # one epoch: still near chance
    assert res["wall_time"] > 0 and res["skipped_steps"] >= 0
    assert os.path.getsize(os.path.join(out, "curves.png")) > 1000
    state = load(os.path.join(out, CHECKPOINT))
    assert state["epoch"] == 1 and state["config"]["dtype"] == "float16"
    assert state["loader"]["epoch"] == 1 and state["scaler"]["scale"] > 1
    assert set(state["model"]) >= {"conv1.weight", "fc3.bias"}
    assert len(state["optimizer"]["state"]) == len(state["model"])   # momentum buffers
    assert state["history"]["test_acc"] == [res["test_accuracy"]]


def test_resume_is_bit_identical(one_epoch, tmp_path):
    resumed = str(tmp_path / "resumed")
    shutil.copytree(one_epoch[0], resumed)
    straight = str(tmp_path / "straight")
    a = main(ARGS + ["--epochs", "2", "--out", straight])
    b = main(ARGS + ["--epochs", "2", "--out", resumed, "--resume"])
    assert b["history"] == a["history"] and b["epochs"] == 2
    sa, sb = load(os.path.join(straight, CHECKPOINT)), load(os.path.join(resumed, CHECKPOINT))
    for k, t in sa["model"].items():
        assert t.dtype == sb["model"][k].dtype
        np.testing.assert_array_equal(t.numpy(), sb["model"][k].numpy(), err_msg=k)
    for i, st in sa["optimizer"]["state"].items():
        np.testing.assert_array_equal(st["momentum_buffer"],
                                      sb["optimizer"]["state"][i]["momentum_buffer"])
    assert sa["scaler"] == sb["scaler"] and sa["rng"] == sb["rng"]
    assert sa["loader"] == sb["loader"] == {"seed": 0, "epoch": 2}
    again = main(ARGS + ["--epochs", "2", "--out", resumed, "--resume"])  # already finished
    assert again["epochs"] == 2 and again["wall_time"] == 0.0


def test_it_learns_in_float32(tmp_path):
    res = main(["--no-progress", "--no-amp", "--limit", "512", "--epochs", "3", "--lr", "0.05",
                "--out", str(tmp_path)])
    assert res["skipped_steps"] == 0
    assert res["test_accuracy"] > 0.4                          # chance is 0.1
    assert res["history"]["loss"][-1] < res["history"]["loss"][0]
    assert load(os.path.join(tmp_path, CHECKPOINT))["config"]["dtype"] == "float32"
