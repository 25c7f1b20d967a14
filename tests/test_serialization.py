"""Checkpoints: exact round trips (bfloat16, big ints, nested structure), atomic writes,
corrupt and truncated files rejected, no pickle."""

import json
import math
import os

import numpy as np
import pytest

import minigrad as mg
from minigrad._backend import random as R
from minigrad.serialization import load, save


def _state(device="cpu"):
    bf = np.array([1.0, -2.5, 3.140625, np.nan, np.inf, 1e-38], dtype=mg.bfloat16)
    return {
        "model": {"conv1.weight": mg.Parameter(np.arange(6, dtype=np.float32).reshape(2, 3),
                                               device=device),
                  "fc.bias": mg.tensor(bf, device=device),
                  "half": mg.tensor(np.array([0.1, 65504.0], np.float16), device=device)},
        "optimizer": {"state": {0: {"step": 3, "momentum_buffer": np.ones((2, 3), np.float32)}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}]},
        "rng": R.get_state(),
        "big": 2 ** 130 + 1, "neg": -(2 ** 70), "epoch": 3, "flag": True, "none": None,
        "floats": [0.1, float("inf"), float("-inf"), float("nan")], "name": "lenet/ü",
        "scalar": np.float32(2.5), "zero_d": np.array(7, np.int64),
        "empty": np.zeros((0, 4), np.float64), "strided": np.arange(12).reshape(3, 4).T,
        "mixed_keys": {0: "int", "0": "str", (1, "a"): "tuple", None: "none", 1.5: "float"},
        "bools": np.array([True, False]), "u8": np.arange(3, dtype=np.uint8),
    }


def test_round_trip_exact(tmp_path, device):
    path = tmp_path / "ckpt.safetensors"
    src = _state(device)
    save(src, path)
    out = load(path, device=device)
    assert set(out) == set(src)
    w = out["model"]["conv1.weight"]
    assert type(w) is mg.Parameter and w.requires_grad and w.device == src["model"][
        "conv1.weight"].device
    np.testing.assert_array_equal(w.numpy(), src["model"]["conv1.weight"].numpy())
    bf = out["model"]["fc.bias"]
    assert type(bf) is mg.Tensor and bf.dtype == mg.bfloat16 and not bf.requires_grad
    assert bf.numpy().view(np.uint16).tolist() == src["model"]["fc.bias"].numpy().view(
        np.uint16).tolist()
    assert out["model"]["half"].dtype == mg.float16
    st = out["optimizer"]["state"]
    assert list(st) == [0] and st[0]["step"] == 3
    np.testing.assert_array_equal(mg.tensor(st[0]["momentum_buffer"]).numpy(), np.ones((2, 3)))
    assert out["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert out["rng"] == src["rng"]
    assert out["big"] == 2 ** 130 + 1 and out["neg"] == -(2 ** 70)
    assert out["epoch"] == 3 and type(out["epoch"]) is int and out["flag"] is True
    assert out["none"] is None and out["name"] == "lenet/ü"
    assert out["floats"][:3] == [0.1, math.inf, -math.inf] and math.isnan(out["floats"][3])
    assert type(out["scalar"]) is np.float32 and out["scalar"] == 2.5
    assert out["zero_d"].shape == () and int(out["zero_d"]) == 7
    assert out["empty"].shape == (0, 4)
    np.testing.assert_array_equal(mg.tensor(out["strided"]).numpy(), src["strided"])
    assert out["mixed_keys"] == src["mixed_keys"]
    assert out["bools"].dtype == np.bool_ and out["u8"].dtype == np.uint8


def test_rng_state_restores_the_stream(tmp_path):
    mg.manual_seed(5)
    mg.randn(3)
    save({"rng": R.get_state()}, tmp_path / "r.safetensors")
    expected = mg.randn(4).numpy()
    mg.manual_seed(99)
    R.set_state(load(tmp_path / "r.safetensors")["rng"])
    np.testing.assert_array_equal(mg.randn(4).numpy(), expected)


def test_file_is_plain_safetensors(tmp_path):
    path = tmp_path / "c.safetensors"
    save({"a": {"w": np.arange(4, dtype=np.float32)}, "b": mg.ones(2, dtype=mg.bfloat16)}, path)
    data = path.read_bytes()
    header = json.loads(data[8:8 + int.from_bytes(data[:8], "little")])
    assert header["a/w"]["dtype"] == "F32" and header["b"]["dtype"] == "BF16"
    assert header["__metadata__"]["format"] == "minigrad"
    assert b"pickle" not in data and b"\x80\x04" not in data[:2]
    from safetensors.numpy import load_file
    assert load_file(str(path))["a/w"].tolist() == [0, 1, 2, 3]


def test_atomic_write_leaves_no_temp_file(tmp_path):
    path = tmp_path / "c.safetensors"
    save({"x": 1}, path)
    save({"x": 2}, path)                                    # replaced, not appended
    assert os.listdir(tmp_path) == ["c.safetensors"]
    assert load(path) == {"x": 2}
    with pytest.raises(TypeError, match="cannot store a object at 'y/0'"):
        save({"x": 3, "y": [object()]}, path)               # failure: old file intact, no temp
    assert os.listdir(tmp_path) == ["c.safetensors"] and load(path) == {"x": 2}


def test_truncated_and_corrupt_files_are_rejected(tmp_path):
    path = tmp_path / "c.safetensors"
    save(_state(), path)
    good = path.read_bytes()
    n = int.from_bytes(good[:8], "little")
    for cut in (0, 5, 8, 8 + n // 2, 8 + n + 3, len(good) - 1):
        path.write_bytes(good[:cut])
        with pytest.raises(ValueError, match="c.safetensors") as info:
            load(path)
        assert any(w in str(info.value) for w in ("truncated", "corrupt", "too few"))
    for pos in (3, 8 + 1, 8 + n // 3, len(good) - 2):      # flip header, then data bytes
        bad = bytearray(good)
        bad[pos] ^= 0x5A
        path.write_bytes(bytes(bad))
        with pytest.raises(ValueError, match="c.safetensors"):
            load(path)
    path.write_bytes(good)
    assert load(path)["epoch"] == 3


def test_not_a_minigrad_checkpoint(tmp_path):
    from safetensors.numpy import save_file

    path = tmp_path / "plain.safetensors"
    save_file({"a": np.zeros(2, np.float32)}, str(path))
    with pytest.raises(ValueError, match="not a minigrad checkpoint"):
        load(path)
    with pytest.raises(TypeError, match="dtype"):
        save({"c": np.zeros(2, np.complex128)}, tmp_path / "x.safetensors")


def test_every_flipped_byte_is_rejected(tmp_path):
    """Each byte of a small checkpoint flipped four ways (one bit, low nibble, all bits, and
    F<->I, the F32 -> I32 dtype-code flip) must fail to load -- including the length field,
    dtype codes, shapes, offsets, header padding and the checksum itself."""
    path = tmp_path / "c.safetensors"
    save({"w": mg.tensor(np.arange(12, dtype=np.float32).reshape(3, 4)),
          "b": np.ones(2, np.int64), "h": np.array([1.5], mg.bfloat16), "step": 7}, path)
    good = path.read_bytes()
    header = json.loads(good[8:8 + int.from_bytes(good[:8], "little")])
    assert header["w"]["dtype"] == "F32" and header["w"]["shape"] == [3, 4]
    masks = (0x01, 0x0F, 0xFF, ord("F") ^ ord("I"))
    loaded = []
    for pos in range(len(good)):
        for mask in masks:
            bad = bytearray(good)
            bad[pos] ^= mask
            path.write_bytes(bytes(bad))
            try:
                load(path)
            except ValueError:
                continue
            loaded.append((pos, mask))
    assert loaded == [], f"{len(loaded)} of {4 * len(good)} corrupted files loaded: {loaded[:5]}"
    path.write_bytes(good)
    assert load(path)["w"].shape == (3, 4)


def test_swapped_shape_and_dtype_in_header_are_rejected(tmp_path):
    path = tmp_path / "c.safetensors"
    save({"w": np.zeros((3, 4), np.float32)}, path)
    good = path.read_bytes()
    for old, new in ((b"[3,4]", b"[4,3]"), (b'"F32"', b'"I32"')):
        assert good.count(old) == 1
        path.write_bytes(good.replace(old, new))
        with pytest.raises(ValueError, match="checksum"):
            load(path)


def test_deep_nesting_is_bounded(tmp_path):
    from minigrad.serialization import MAX_DEPTH

    path = tmp_path / "deep.safetensors"
    ok = []                                  # the root dict and MAX_DEPTH - 1 lists
    for _ in range(MAX_DEPTH - 2):
        ok = [ok]
    save({"x": ok}, path)
    out = load(path)["x"]
    for _ in range(MAX_DEPTH - 2):
        out = out[0]
    assert out == []
    too_deep = {"x": [ok]}
    with pytest.raises(ValueError, match="nested more than"):
        save(too_deep, path)
    # A crafted file nesting 900 levels, with a valid checksum: a ValueError, not RecursionError.
    import minigrad.serialization as S

    structure = "[" * 900 + "]" * 900
    data = S._serialize({}, {"format": "minigrad", "minigrad.version": "2",
                             "minigrad.structure": structure, "minigrad.crc32": "00000000"})
    hole = S._crc_hole(data, 8 + int.from_bytes(data[:8], "little"))
    path.write_bytes(data[:hole] + S._file_crc(data, hole) + data[hole + 8:])
    with pytest.raises(ValueError, match="deeper than"):
        load(path)


def test_save_removes_temp_files_of_killed_writers(tmp_path):
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()                                    # a pid that no longer runs
    path = tmp_path / "c.safetensors"
    orphan = tmp_path / f".c.safetensors.{proc.pid}.abc123.tmp"
    orphan.write_bytes(b"half a checkpoint")
    alive = tmp_path / f".c.safetensors.{os.getppid()}.xyz.tmp"   # a live writer's: kept
    alive.write_bytes(b"in progress")
    other = tmp_path / f".d.safetensors.{proc.pid}.abc.tmp"       # another path's: kept
    other.write_bytes(b"")
    save({"x": 1}, path)
    assert sorted(os.listdir(tmp_path)) == sorted([alive.name, other.name, "c.safetensors"])


def test_version_1_checkpoints_still_load(tmp_path):
    import minigrad.serialization as S

    arrays = {"w": np.arange(3, dtype=np.float32)}
    structure = json.dumps({"$dict": [["w", {"$array": "w"}]]}, separators=(",", ":"))
    meta = {"format": "minigrad", "minigrad.version": "1", "minigrad.structure": structure,
            "minigrad.crc32": S._crc32_v1(arrays, structure)}
    path = tmp_path / "v1.safetensors"
    path.write_bytes(S._serialize(arrays, meta))
    assert load(path)["w"].tolist() == [0, 1, 2]
