"""The GPU path (issue 7): fused kernels, cuBLAS batched matmul, cuDNN conv, CUDA graphs.

CPU tests check the NumPy reference implementations that define what the fused GPU kernels
compute (against hand values and the optimizers' own CPU updates), the CPU matmul paths, the
no-GPU behaviour of the cuDNN and CUDA-graph modules, and the benchmarks' ``--cpu-smoke`` mode.
The GPU tests at the bottom run only where CuPy sees a GPU.
"""

import contextlib
import importlib.util
import io
import pathlib
import sys
import types
import warnings

import ml_dtypes
import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad._backend import (bf16_cpu_gemm, cublas_gemm, cuda_graph, cudnn_conv, fused, kernels,
                               matmul_paths)
from minigrad.optimizer import SGD, Adam, AdamW

GPU = mg.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="CuPy sees no GPU")
BF16 = np.dtype(ml_dtypes.bfloat16)
BENCH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"


# ----------------------------------------------------------------------------- unscale + check
def test_unscale_values_and_dtypes(rng):
    g32 = rng.standard_normal((3, 4)).astype(np.float32)
    g64 = rng.standard_normal(5)
    gbf = rng.standard_normal(6).astype(BF16)
    inv = 1.0 / 3.0
    out, found = fused.unscale_and_check([g32, g64, gbf], inv)
    assert found.shape == () and found.dtype == np.int32 and int(found) == 0
    np.testing.assert_array_equal(out[0], g32 * np.float32(inv))
    assert out[0].dtype == np.float32
    np.testing.assert_array_equal(out[1], g64 * inv)           # float64 math for float64
    expect_bf = (gbf.astype(np.float32) * np.float32(inv)).astype(BF16)  # fp32 math, one rounding
    assert out[2].dtype == BF16
    np.testing.assert_array_equal(out[2].astype(np.float32), expect_bf.astype(np.float32))


def test_unscale_does_not_modify_inputs(rng):
    g = rng.standard_normal(8).astype(np.float32)
    before = g.copy()
    out, _ = fused.unscale_and_check([g, g], 0.5)   # one gradient shared by two parameters
    np.testing.assert_array_equal(g, before)
    assert out[0] is not g and out[1] is not g
    np.testing.assert_array_equal(out[0], before * np.float32(0.5))


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_unscale_flags_nonfinite(bad):
    clean = np.ones(4, np.float32)
    dirty = np.array([1.0, bad, 2.0], np.float32)
    _, found = fused.unscale_and_check([clean, dirty], 0.25)
    assert int(found) == 1
    _, found = fused.unscale_and_check([clean], 0.25)
    assert int(found) == 0


def test_unscale_flags_overflow_of_the_product():
    # finite input, infinite result: the check is on the unscaled values
    g = np.array([3e38], np.float32)
    _, found = fused.unscale_and_check([g], 4.0)
    assert int(found) == 1


def test_unscale_empty_list():
    out, found = fused.unscale_and_check([], 0.5)
    assert out == [] and int(found) == 0


def test_use_fused_is_false_on_the_cpu():
    assert not fused.use_fused(np.zeros(3, np.float32))


# ----------------------------------------------------------------------------- SGD reference
def _run_optimizer(opt_cls, kwargs, dtype, grads, w0):
    p = mg.Parameter(w0.astype(dtype))
    opt = opt_cls([p], **kwargs)
    for g in grads:
        p.grad = mg.tensor(g.astype(dtype))
        opt.step()
    return p.numpy(), opt.state.get(p, {})


SGD_CASES = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3),
             dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.01),
             dict(lr=0.1, weight_decay=0.1)]


@pytest.mark.parametrize("kwargs", SGD_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16])
def test_sgd_update_matches_sgd_optimizer(kwargs, dtype, rng):
    w0 = rng.standard_normal(7)
    grads = [rng.standard_normal(7) for _ in range(3)]
    expect, st = _run_optimizer(SGD, kwargs, dtype, grads, w0)
    hp = dict(lr=kwargs["lr"], momentum=kwargs.get("momentum", 0.0),
              dampening=kwargs.get("dampening", 0.0), weight_decay=kwargs.get("weight_decay", 0.0),
              nesterov=kwargs.get("nesterov", False))
    w, buf = w0.astype(dtype), None
    for g in grads:
        buf = fused.sgd_update(w, g.astype(dtype), buf, **hp)
    np.testing.assert_allclose(w.astype(np.float64), expect.astype(np.float64), rtol=1e-6,
                               atol=1e-7)
    if hp["momentum"]:
        np.testing.assert_allclose(buf, st["momentum_buffer"], rtol=1e-6, atol=1e-7)
        assert buf.dtype == (np.float64 if dtype == np.float64 else np.float32)
    else:
        assert buf is None


def test_sgd_update_hand_values():
    w = np.array([1.0, 2.0], np.float32)
    buf = fused.sgd_update(w, np.array([0.5, -1.0], np.float32), None, lr=0.1, momentum=0.9,
                           dampening=0.0, weight_decay=0.0, nesterov=False)
    np.testing.assert_allclose(w, [0.95, 2.1])        # first step: buf = g
    np.testing.assert_allclose(buf, [0.5, -1.0])
    fused.sgd_update(w, np.array([0.5, -1.0], np.float32), buf, 0.1, 0.9, 0.0, 0.0, False)
    np.testing.assert_allclose(buf, [0.95, -1.9])     # 0.9 * 0.5 + 0.5
    np.testing.assert_allclose(w, [0.855, 2.29], rtol=1e-6)


# ----------------------------------------------------------------------------- Adam reference
ADAM_CASES = [(Adam, dict(lr=1e-2)), (Adam, dict(lr=1e-2, weight_decay=0.1)),
              (Adam, dict(lr=1e-2, amsgrad=True, betas=(0.8, 0.9))),
              (AdamW, dict(lr=1e-2)), (AdamW, dict(lr=1e-2, weight_decay=0.1, amsgrad=True))]


@pytest.mark.parametrize("opt_cls,kwargs", ADAM_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16])
def test_adam_update_matches_adam_optimizers(opt_cls, kwargs, dtype, rng):
    w0 = rng.standard_normal(6)
    grads = [rng.standard_normal(6) for _ in range(4)]
    expect, st = _run_optimizer(opt_cls, kwargs, dtype, grads, w0)
    full = {"betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-2 if opt_cls is AdamW else 0.0,
            "amsgrad": False, **kwargs}
    sd = np.float64 if dtype == np.float64 else np.float32
    w = w0.astype(dtype)
    m, v, vmax = np.zeros(6, sd), np.zeros(6, sd), None
    for t, g in enumerate(grads, 1):
        vmax = fused.adam_update(w, g.astype(dtype), m, v, vmax, t, full["lr"], *full["betas"],
                                 full["eps"], full["weight_decay"], opt_cls is AdamW,
                                 full["amsgrad"])
    np.testing.assert_allclose(w.astype(np.float64), expect.astype(np.float64), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(m, st["exp_avg"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(v, st["exp_avg_sq"], rtol=1e-6, atol=1e-12)
    if full["amsgrad"]:
        np.testing.assert_allclose(vmax, st["max_exp_avg_sq"], rtol=1e-6, atol=1e-12)
    else:
        assert vmax is None


def test_adam_first_step_hand_value():
    # step 1: m = 0.1 g, v = 0.001 g^2, update = lr * g/|g| (bias-corrected), eps negligible
    w = np.array([1.0, -1.0], np.float32)
    m, v = np.zeros(2, np.float32), np.zeros(2, np.float32)
    fused.adam_update(w, np.array([0.3, -2.0], np.float32), m, v, None, 1, 0.1, 0.9, 0.999,
                      1e-8, 0.0, False, False)
    np.testing.assert_allclose(w, [0.9, -0.9], rtol=1e-6)
    np.testing.assert_allclose(m, [0.03, -0.2], rtol=1e-6)


# ----------------------------------------------------------------------------- found_inf
def test_found_inf_leaves_sgd_state_untouched(rng):
    w = rng.standard_normal(5).astype(np.float32)
    buf = rng.standard_normal(5).astype(np.float32)
    w0, b0 = w.copy(), buf.copy()
    flag = np.ones((), np.int32)
    out = fused.sgd_update(w, np.full(5, np.nan, np.float32), buf, 0.1, 0.9, 0.0, 0.01, True,
                           found_inf=flag)
    assert out is buf
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(buf, b0)
    # no buffer yet: a zero buffer comes back and the parameter is unchanged
    out = fused.sgd_update(w, np.ones(5, np.float32), None, 0.1, 0.9, 0.0, 0.0, False,
                           found_inf=flag)
    np.testing.assert_array_equal(out, np.zeros(5))
    np.testing.assert_array_equal(w, w0)
    # a zero flag is an ordinary step
    fused.sgd_update(w, np.ones(5, np.float32), None, 0.1, 0.0, 0.0, 0.0, False,
                     found_inf=np.zeros((), np.int32))
    np.testing.assert_allclose(w, w0 - 0.1)


def test_found_inf_leaves_adam_state_untouched(rng):
    w = rng.standard_normal(4).astype(np.float32)
    m, v, vm = (rng.random(4).astype(np.float32) for _ in range(3))
    snap = [a.copy() for a in (w, m, v, vm)]
    out = fused.adam_update(w, np.full(4, np.inf, np.float32), m, v, vm, 3, 1e-2, 0.9, 0.999,
                            1e-8, 0.1, True, True, found_inf=np.ones((), np.int32))
    assert out is vm
    for a, b in zip((w, m, v, vm), snap):
        np.testing.assert_array_equal(a, b)


def test_unscale_flag_drives_skipped_update():
    """The flag from unscale_and_check is what the updates take (the GPU protocol, on NumPy)."""
    w = np.array([1.0, 2.0], np.float32)
    grads, found = fused.unscale_and_check([np.array([np.inf, 1.0], np.float32)], 0.5)
    fused.sgd_update(w, grads[0], None, 0.1, 0.0, 0.0, 0.0, False, found_inf=found)
    np.testing.assert_array_equal(w, [1.0, 2.0])


# ----------------------------------------------------------------------------- matmul path (CPU)
def test_cpu_matmul_paths(rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float16)
    b = rng.standard_normal((5, 6)).astype(np.float16)
    with matmul_paths.record() as paths:
        y = F.matmul(mg.tensor(a), mg.tensor(b))
    assert paths == ["cpu-emulated-fp32-accumulate"]
    assert y.dtype == mg.float16
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(y.numpy(), ref)
    with matmul_paths.record() as paths:
        F.matmul(mg.tensor(a.astype(np.float32)), mg.tensor(b.astype(np.float32)))
    assert paths == ["cpu"]


# ----------------------------------------------------------------------------- no-GPU behaviour
@pytest.mark.skipif(GPU, reason="checks the behaviour without a GPU")
def test_cudnn_and_graphs_unavailable_without_gpu():
    assert cudnn_conv.available() is False
    x = np.zeros((1, 2, 5, 5), np.float16)
    w = np.zeros((3, 2, 3, 3), np.float16)
    assert cudnn_conv.forward(x, w, (1, 1), (0, 0), (1, 1), 1) is None
    assert cuda_graph.supported() is False and cuda_graph.is_capturing() is False
    with pytest.raises(cuda_graph.CaptureError, match="needs a GPU"):
        cuda_graph.capture(lambda: None)


def test_cudnn_conv_declines_numpy_arrays():
    for dt in (np.float16, np.float32):
        x = np.ones((1, 1, 3, 3), dt)
        assert cudnn_conv.forward(x, x, (1, 1), (0, 0), (1, 1), 1) is None
        assert cudnn_conv.weight_grad(x, x, (1, 1, 1, 1), (1, 1), (0, 0), (1, 1), 1) is None
        assert cudnn_conv.data_grad(x, x, (3, 3), (1, 1), (0, 0), (1, 1), 1) is None


class _FakeCudnn(types.ModuleType):
    """The parts of the cuDNN frontend 1.23 API that ``cudnn_conv`` uses; records the calls."""

    data_type = types.SimpleNamespace(HALF="HALF", BFLOAT16="BFLOAT16", FLOAT="FLOAT")
    heur_mode = types.SimpleNamespace(A="A", FALLBACK="FALLBACK")
    numerical_note = types.SimpleNamespace(TENSOR_CORE="TENSOR_CORE",
                                           DOWN_CONVERT_INPUTS="DOWN_CONVERT_INPUTS")
    __version__ = "1.23.0"

    def __init__(self, fail=None):
        super().__init__("cudnn")
        self.calls, self.fail = [], fail

    def backend_version(self):
        if self.fail:
            raise self.fail
        return 92700

    def create_handle(self):
        return 7

    def pygraph(self, **kw):
        calls = self.calls
        calls.append(("pygraph", kw))

        class Node:
            def __getattr__(self, name):
                def method(*args, **kwargs):
                    calls.append((name, args, kwargs))
                    return self
                return method

        class Graph(Node):
            def get_workspace_size(self):
                return 0

        return Graph()


@pytest.mark.parametrize("layout,strides,out_strides", [
    ("nhwc", [[240, 1, 48, 8], [72, 1, 24, 8]], [48, 1, 16, 4]),
    ("nchw", [[240, 30, 6, 1], [72, 9, 3, 1]], [48, 12, 4, 1])])
def test_cudnn_plan_float32_tf32_and_layout(monkeypatch, layout, strides, out_strides):
    fake = _FakeCudnn()
    monkeypatch.setitem(cudnn_conv._state, "module", fake)
    x, w, y = (2, 8, 5, 6), (4, 8, 3, 3), (2, 4, 3, 4)
    for tf32 in (True, False):
        fake.calls.clear()
        cudnn_conv._Plan("fprop", x, w, y, np.dtype(np.float32), (1, 1), (0, 0), (1, 1), tf32,
                         layout, handle=7)
        names = [c[0] for c in fake.calls]
        assert fake.calls[0] == ("pygraph", dict(handle=7, io_data_type="FLOAT",
                                                 intermediate_data_type="FLOAT",
                                                 compute_data_type="FLOAT"))
        tensors = [c[2] for c in fake.calls if c[0] == "tensor"]
        assert [t["stride"] for t in tensors] == strides
        assert ("set_stride", (out_strides,), {}) in fake.calls
        deselect = [c for c in fake.calls if c[0] == "deselect_numeric_notes"]
        if tf32:   # PyTorch's default: TF32 engines allowed
            assert deselect == []
        else:      # allow_tf32=False: no Tensor Core / down-converting engines for fp32
            assert deselect == [("deselect_numeric_notes",
                                 (["TENSOR_CORE", "DOWN_CONVERT_INPUTS"],), {})]
            # filtered after the plans exist, before support is checked and plans are built
            assert names.index("create_execution_plans") < names.index(
                "deselect_numeric_notes") < names.index("check_support")
    assert cudnn_conv.allow_tf32() is True
    assert cudnn_conv.set_allow_tf32(False) is True and cudnn_conv.allow_tf32() is False
    cudnn_conv.set_allow_tf32(True)


@pytest.mark.parametrize("fail,why", [(None, "not installed"),
                                      (OSError("libcudnn.so.9: cannot open"), "LD_LIBRARY_PATH")])
def test_cudnn_unavailable_warns_once_with_reason(monkeypatch, fail, why):
    # A GPU is present (pretended) but cuDNN cannot load: one warning naming the reason.
    monkeypatch.setattr(cudnn_conv, "cuda_available", lambda: True)
    monkeypatch.setattr(cudnn_conv, "_state", {**cudnn_conv._state, "checked": False,
                                               "ok": False, "enabled": True, "module": None})
    monkeypatch.setitem(sys.modules, "cudnn", None if fail is None else _FakeCudnn(fail))
    with pytest.warns(RuntimeWarning, match=f"cuDNN is unavailable.*{why}"):
        assert cudnn_conv.available() is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cudnn_conv.available() is False   # no second warning
    assert why in cudnn_conv.unavailable_reason()


def test_cudnn_untested_frontend_version_warns(monkeypatch):
    fake = _FakeCudnn()
    fake.__version__ = "1.29.0"
    monkeypatch.setitem(sys.modules, "cudnn", fake)
    with pytest.warns(RuntimeWarning, match="written for nvidia-cudnn-frontend 1.23.0, found 1.29"):
        module, reason = cudnn_conv._load()
    assert module is fake and reason is None


# ----------------------------------------------------------------------------- benchmarks
def _bench(name):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run_bench(name, args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = _bench(name).main(args)
    return rc, buf.getvalue()


def _rows(text):
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and "---" not in line][1:]


def test_amp_mlp_cpu_smoke(tmp_path):
    out = tmp_path / "results.md"
    rc, text = _run_bench("amp_mlp", ["--cpu-smoke", "--no-torch", "--out", str(out)])
    assert rc == 0
    rows = _rows(text)
    names = {(r[0], r[1]) for r in rows}
    assert {("minigrad eager", "default"), ("minigrad eager", "mixed"),
            ("minigrad nn.Graph eager", "default"), ("minigrad nn.Graph eager", "mixed")} <= names
    by = {(r[0], r[1]): r for r in rows}
    # same data, same initial weights, same recipe: eager and nn.Graph end at the same loss
    assert by[("minigrad eager", "default")][5] == by[("minigrad nn.Graph eager", "default")][5]
    assert float(by[("minigrad eager", "mixed")][5]) == pytest.approx(
        float(by[("minigrad eager", "default")][5]), rel=1e-2)
    assert "amp_mlp" in out.read_text()


def test_amp_mlp_matches_torch_on_cpu_smoke():
    pytest.importorskip("torch")
    rc, text = _run_bench("amp_mlp", ["--cpu-smoke"])
    by = {(r[0], r[1]): r for r in _rows(text)}
    assert float(by[("PyTorch eager", "default")][5]) == pytest.approx(
        float(by[("minigrad eager", "default")][5]), rel=1e-4)


def test_amp_mlp_warms_up_untimed_and_measures_memory_apart(monkeypatch):
    mod = _bench("amp_mlp")
    events = []

    def make():
        events.append("new model")
        return lambda batches, epochs: events.append(("train", batches, epochs)) or 0.5

    monkeypatch.setattr(mod.time, "perf_counter", lambda: events.append("clock") or 0.0)
    cfg = types.SimpleNamespace(warmup=2, num_batches=5, epochs=3)
    assert mod.timed_run(make, lambda: events.append("sync"), cfg) == (0.0, 0.5)
    # the warm-up trains a throwaway model before the clock starts; the timed model is fresh
    assert events == ["new model", ("train", 2, 1), "new model", "sync", "clock",
                      ("train", 5, 3), "sync", "clock"]
    events.clear()
    peak = mod.peak_run(make, lambda: events.append("sync"), lambda: events.append("reset"),
                        lambda: 123, cfg)
    assert peak == 123 and "clock" not in events
    assert events == ["new model", "sync", "reset", ("train", 3, 1), "sync"]


def test_amp_resnet_cpu_smoke():
    rc, text = _run_bench("amp_resnet", ["--cpu-smoke", "--no-torch"])
    assert rc == 0
    rows = _rows(text)
    assert [r[:2] for r in rows] == [["minigrad", "fp32"], ["minigrad", "AMP fp16"]]
    assert all(float(r[2]) > 0 and np.isfinite(float(r[4])) for r in rows)


def test_matmul_peak_cpu_smoke():
    rc, text = _run_bench("matmul_peak", ["--cpu-smoke"])
    assert rc == 0
    rows = _rows(text)
    assert len(rows) == 4
    paths = [r[5] for r in rows]
    bf16 = "cpu-avx512-bf16" if bf16_cpu_gemm.AVAILABLE else "cpu-emulated-fp32-accumulate"
    assert paths == ["cpu-emulated-fp32-accumulate", bf16, "cpu", "cpu-emulated-fp32-accumulate"]
    assert all(float(r[6]) < 1e-2 for r in rows)   # fp32 accumulation: errors are rounding only


@pytest.mark.skipif(GPU, reason="checks the no-GPU message")
@pytest.mark.parametrize("name", ["amp_mlp", "amp_resnet", "matmul_peak"])
def test_benchmarks_exit_cleanly_without_gpu(name):
    rc, text = _run_bench(name, [])
    assert rc == 0 and "no GPU" in text and "--cpu-smoke" in text


# ============================================================================= GPU only
@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gpu_batched_matmul_paths(dtype, rng):
    import cupy

    dt = mg._backend.normalize_dtype(dtype)
    tol = 1e-2 if dtype == "float16" else 4e-2
    cases = [((4, 64, 32), (32, 48), "cupy-folded-2d"),
             ((4, 64, 32), (4, 32, 48), "cublas-strided-batched"),
             ((64, 32), (3, 32, 48), "cublas-strided-batched"),     # a shared: stride 0
             ((2, 1, 64, 32), (3, 32, 48), "cublas-strided-batched"),
             ((32,), (3, 32, 48), "cublas-strided-batched"),
             ((4, 64, 32), (32,), "cupy-folded-2d")]
    for sa, sb, path in cases:
        a = rng.standard_normal(sa).astype(np.float32).astype(dt)
        b = rng.standard_normal(sb).astype(np.float32).astype(dt)
        with matmul_paths.record() as paths:
            y = kernels.matmul(cupy.asarray(a), cupy.asarray(b))
        assert paths[-1] == path, (sa, sb)
        assert y.dtype == dt
        ref = np.matmul(a.astype(np.float32), b.astype(np.float32))
        got = cupy.asnumpy(y.astype(np.float32))
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())


@needs_gpu
def test_gpu_fused_kernels_match_numpy_reference(rng):
    import cupy

    g32 = rng.standard_normal((5, 7)).astype(np.float32)
    gbf = rng.standard_normal(9).astype(BF16)
    ref, ref_found = fused.unscale_and_check([g32, gbf], 0.125)
    got, found = fused.unscale_and_check([cupy.asarray(g32), cupy.asarray(gbf)], 0.125)
    assert int(found) == int(ref_found) == 0
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(cupy.asnumpy(g).astype(np.float32), r.astype(np.float32))
    _, found = fused.unscale_and_check([cupy.asarray(g32), cupy.asarray([np.nan], np.float32)],
                                       1.0)
    assert int(found) == 1
    for dtype in (np.float32, BF16):
        w, g = rng.standard_normal(33).astype(dtype), rng.standard_normal(33).astype(dtype)
        wc, gc = cupy.asarray(w), cupy.asarray(g)
        buf = bufc = None
        for _ in range(2):
            buf = fused.sgd_update(w, g, buf, 0.1, 0.9, 0.1, 0.01, False)
            bufc = fused.sgd_update(wc, gc, bufc, 0.1, 0.9, 0.1, 0.01, False)
        np.testing.assert_allclose(cupy.asnumpy(wc).astype(np.float32), w.astype(np.float32),
                                   rtol=1e-5, atol=1e-6)
        m, v = np.zeros(33, np.float32), np.zeros(33, np.float32)
        mc, vc = cupy.zeros(33, np.float32), cupy.zeros(33, np.float32)
        vm = vmc = None
        for t in (1, 2):
            vm = fused.adam_update(w, g, m, v, vm, t, 1e-2, 0.9, 0.999, 1e-8, 0.1, True, True)
            vmc = fused.adam_update(wc, gc, mc, vc, vmc, t, 1e-2, 0.9, 0.999, 1e-8, 0.1, True,
                                    True)
        np.testing.assert_allclose(cupy.asnumpy(wc).astype(np.float32), w.astype(np.float32),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(cupy.asnumpy(vc), v, rtol=1e-5, atol=1e-9)
    # the device flag skips the update with no host read
    before = wc.copy()
    fused.sgd_update(wc, gc, None, 0.1, 0.0, 0.0, 0.0, False, found_inf=cupy.ones((), np.int32))
    np.testing.assert_array_equal(cupy.asnumpy(wc), cupy.asnumpy(before))


@needs_gpu
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_gpu_cudnn_conv_matches_im2col(rng, monkeypatch, layout):
    if not cudnn_conv.available():
        pytest.skip("nvidia-cudnn-frontend / cuDNN library not available")
    monkeypatch.setattr(cudnn_conv, "_plans", {})       # plans of earlier tests must not count
    monkeypatch.setitem(cudnn_conv._state, "layout", layout)
    configs = (((1, 1), (1, 1), 1), ((2, 2), (0, 0), 1), ((1, 1), (1, 1), 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # a fallback to im2col warns: fail on it
        for stride, padding, groups in configs:
            x_np = rng.standard_normal((4, 8, 12, 12)).astype(np.float16)
            w_np = (rng.standard_normal((16, 8 // groups, 3, 3)) * 0.2).astype(np.float16)
            results = []
            for use_cudnn in (False, True):
                prev = cudnn_conv.set_enabled(use_cudnn)
                try:
                    x = mg.tensor(x_np, device="cuda", requires_grad=True)
                    w = mg.tensor(w_np, device="cuda", requires_grad=True)
                    y = F.conv2d(x, w, stride=stride, padding=padding, groups=groups)
                    (y.astype("float32") * y.astype("float32")).sum().backward()
                    results.append([t.numpy().astype(np.float32) for t in (y, x.grad, w.grad)])
                finally:
                    cudnn_conv.set_enabled(prev)
            for ref, got in zip(*results):
                np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())
    # fprop, dgrad and wgrad of every configuration ran on cuDNN plans of this layout
    assert cudnn_conv.plan_cache_info() == {"plans": 3 * len(configs), "unsupported": 0}
    assert all(key[-2] == layout for key in cudnn_conv._plans)


@needs_gpu
def test_gpu_memory_stats_follow_allocations():
    import cupy

    mg.cuda.reset_peak_memory_stats()
    base = mg.cuda.memory_allocated()
    a = cupy.empty(64 * 2 ** 20, np.uint8)
    assert mg.cuda.memory_allocated() >= base + a.nbytes
    assert mg.cuda.max_memory_allocated() >= base + a.nbytes
    del a
    assert mg.cuda.memory_allocated() < base + 64 * 2 ** 20
    assert mg.cuda.max_memory_allocated() >= base + 64 * 2 ** 20   # the peak remains


def _needs_nvmath():
    if not cublas_gemm.available():
        pytest.skip("nvmath-python not installed: matmuls cannot be captured (see docs/gpu.md)")


@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_gpu_capturable_gemm_matches_cupy(dtype, rng):
    # The real cuBLAS calls of cublas_gemm (eager) against cupy.matmul in fp32/fp64: checks the
    # column-major translation, op flags (transposed views) and batch strides on the device.
    import cupy

    _needs_nvmath()
    dt = mg._backend.normalize_dtype(dtype)
    tol = {"float16": 1e-2, "bfloat16": 4e-2, "float32": 1e-5}.get(dtype, 1e-12)
    cases = [((64, 32), (32, 48)), ((4, 64, 32), (32, 48)), ((4, 64, 32), (4, 32, 48)),
             ((64, 32), (3, 32, 48)), ((2, 1, 64, 32), (3, 32, 48)), ((32,), (32,)),
             ((1, 32), (32, 1))]
    for sa, sb in cases:
        for transpose in (False, True):
            a = cupy.asarray(rng.standard_normal(sa).astype(np.float32).astype(dt))
            b = cupy.asarray(rng.standard_normal(sb).astype(np.float32).astype(dt))
            if transpose and a.ndim >= 2:   # the same values through a transposed view
                a = cupy.ascontiguousarray(cupy.swapaxes(a, -1, -2)).swapaxes(-1, -2)
            got = cublas_gemm.matmul(a, b)
            acc = np.float64 if dtype == "float64" else np.float32
            ref = cupy.matmul(a.astype(acc), b.astype(acc))
            assert got.shape == ref.shape and got.dtype == dt, (sa, sb)
            np.testing.assert_allclose(cupy.asnumpy(got.astype(acc)), cupy.asnumpy(ref),
                                       rtol=tol, atol=tol * float(abs(ref).max()))


@needs_gpu
def test_gpu_cuda_graph_replay_equals_eager(rng):
    import cupy

    _needs_nvmath()
    x0 = cupy.asarray(rng.standard_normal((8, 16)).astype(np.float32))
    w = cupy.asarray(rng.standard_normal((16, 4)).astype(np.float32))
    static = [x0.copy()]
    paths = []

    def fn():
        with matmul_paths.record() as ran:
            y = kernels.matmul(static[0], w)   # minigrad's matmul: capturable while recording
        paths.append(ran[-1])
        return cupy.tanh(y) * 2 + 1

    step = cuda_graph.capture(fn, static)
    assert paths == ["cublas-capturable", "cublas-capturable"]   # the warm-up and the capture
    np.testing.assert_allclose(cupy.asnumpy(step.warmup_output), cupy.asnumpy(fn()), rtol=1e-5)
    assert paths[-1] != "cublas-capturable"   # eager again after the capture
    for _ in range(3):
        x = cupy.asarray(rng.standard_normal((8, 16)).astype(np.float32))
        out = step.replay(x)
        np.testing.assert_allclose(cupy.asnumpy(out), cupy.asnumpy(cupy.tanh(x @ w) * 2 + 1),
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="static shapes"):
        step.replay(cupy.zeros((4, 16), np.float32))


@needs_gpu
def test_gpu_capture_of_a_matmul_without_nvmath_is_a_clear_error(monkeypatch):
    import cupy

    monkeypatch.setattr(cublas_gemm, "_lib", [None])
    x = cupy.ones((4, 4), np.float32)
    with pytest.raises(cuda_graph.CaptureError, match="nvmath-python") as info:
        cuda_graph.capture(lambda: kernels.matmul(x, x), [x])
    assert float(info.value.warmup_output.sum()) == 64.0   # the eager warm-up ran on CuPy
    assert not cuda_graph.is_capturing()


@needs_gpu
def test_gpu_cuda_graph_training_step_equals_eager(rng):
    x_np = rng.standard_normal((16, 8)).astype(np.float32)
    t_np = rng.standard_normal((16, 3)).astype(np.float32)

    def make():
        mg.manual_seed(0)
        net = mg.nn.Linear(8, 3).to("cuda")
        return net, SGD(net.parameters(), lr=0.1, momentum=0.9)

    def train_step(net, opt, x, t):
        loss = F.mse_loss(net(x), t)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    eager_net, eager_opt = make()
    for _ in range(4):
        train_step(eager_net, eager_opt, mg.tensor(x_np, device="cuda"),
                   mg.tensor(t_np, device="cuda"))
    _needs_nvmath()
    net, opt = make()
    sx, st = mg.tensor(x_np, device="cuda"), mg.tensor(t_np, device="cuda")
    step = cuda_graph.capture(lambda: train_step(net, opt, sx, st), [sx._data, st._data])
    for _ in range(3):   # warm-up step + 3 replays = 4 steps
        step.replay(mg.tensor(x_np, device="cuda")._data, mg.tensor(t_np, device="cuda")._data)
    for p, q in zip(net.parameters(), eager_net.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)


@needs_gpu
def test_gpu_cuda_graph_capture_error_on_host_sync():
    import cupy

    x = cupy.ones(4, np.float32)
    with pytest.raises(cuda_graph.CaptureError) as info:
        cuda_graph.capture(lambda: float((x * 2).sum()), [x])
    assert info.value.warmup_output == 8.0   # the eager warm-up call's result
    assert not cuda_graph.is_capturing()
    assert float((x * 3).sum()) == 12.0   # the stream works after the failed capture


# ----------------------------------------------------------------------------- kernels vs twins
_SGD_CONFIGS = [dict(momentum=0.9), dict(momentum=0.9, nesterov=True, weight_decay=1e-2),
                dict(momentum=0.0, weight_decay=1e-3), dict(momentum=0.5, dampening=0.1)]


@needs_gpu
@pytest.mark.parametrize("kw", _SGD_CONFIGS)
def test_gpu_multi_tensor_sgd_equals_the_per_tensor_kernel_and_the_twin(kw, rng):
    shapes = [(7,), (3, 5), (1,), (64, 33)] + [(10,)] * 9   # more than 8: a real table
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(3)]

    def train(device, many):
        ps = [mg.Parameter(a.copy(), device=device) for a in init]
        opt = SGD(ps, lr=0.05, **kw)
        for step in grads:
            for p, g in zip(ps, step):
                p.grad = mg.tensor(g, device=device)
            if many:
                opt.step()
            else:   # the per-tensor kernel, parameter by parameter
                for p in ps:
                    st = opt.state.get(p)
                    buf = fused.sgd_update(p._data, p.grad._data, None if st is None else
                                           st["momentum_buffer"], 0.05, kw.get("momentum", 0.0),
                                           kw.get("dampening", 0.0), kw.get("weight_decay", 0.0),
                                           kw.get("nesterov", False))
                    if buf is not None and st is None:
                        opt.state[p] = {"momentum_buffer": buf}
        return [p.numpy() for p in ps]

    many, single, twin = train("cuda", True), train("cuda", False), train("cpu", True)
    for a, b, c in zip(many, single, twin):
        np.testing.assert_array_equal(a, b)                  # same arithmetic, bit for bit
        np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-7)  # FMA contraction aside


@needs_gpu
def test_gpu_multi_tensor_sgd_skips_on_the_flag():
    ps = [mg.Parameter(np.ones(5, np.float32), device="cuda") for _ in range(10)]
    opt = SGD(ps, lr=0.1, momentum=0.9)
    for p in ps:
        p.grad = mg.ones(5, device="cuda")
    opt.step()                                   # makes the buffers
    before = [p.numpy().copy() for p in ps]
    bufs = [opt.state[p]["momentum_buffer"].get() for p in ps]
    for p in ps:
        p.grad = mg.ones(5, device="cuda")
    opt.step(found_inf=mg._backend.cupy.ones(1, np.int32))
    for p, b, buf in zip(ps, before, bufs):
        np.testing.assert_array_equal(p.numpy(), b)
        np.testing.assert_array_equal(opt.state[p]["momentum_buffer"].get(), buf)


@needs_gpu
@pytest.mark.parametrize("found,bad", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gpu_scale_update_kernel_equals_its_numpy_twin(found, bad):
    from minigrad._backend import cupy

    for tracker0 in (0, 1, 2):
        host = [np.array([1024.0]), np.array([tracker0], np.int64)]
        dev = [cupy.asarray(a) for a in host]
        for arrays, xp in ((host, np), (dev, cupy)):
            fused.scale_update(*arrays, xp.array([found], np.int32), xp.array([bad], np.int32),
                               2.0, 0.5, 3, 1.0)
        assert float(dev[0].get()[0]) == float(host[0][0])
        assert int(dev[1].get()[0]) == int(host[1][0])


@needs_gpu
def test_gpu_capture_safe_joins_replay_new_values():
    from minigrad._backend import cupy

    parts = [cupy.full(3, i, np.float32) for i in range(12)]    # > 8: CuPy would copy a table
    step = cuda_graph.capture(lambda: (cuda_graph.concatenate(parts), cuda_graph.stack(parts)),
                              [parts[0]])
    step.replay(cupy.full(3, 42.0, np.float32))
    cat, st = step.output
    mg.cuda.synchronize()
    expect = [np.full(3, 42.0 if i == 0 else i, np.float32) for i in range(12)]
    np.testing.assert_array_equal(cat.get(), np.concatenate(expect))
    np.testing.assert_array_equal(st.get(), np.stack(expect))


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("training", [True, False])
def test_gpu_batch_norm_kernels_follow_the_numpy_twin(dtype, training, rng):
    x_np = (rng.standard_normal((8, 5, 6, 7)) * 3 + 1).astype(dtype)
    gy_np = rng.standard_normal(x_np.shape).astype(dtype)
    w_np, b_np = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(
        np.float32)
    results = []
    for device in ("cpu", "cuda"):
        x = mg.tensor(x_np, device=device, requires_grad=True)
        w = mg.tensor(w_np, device=device, requires_grad=True)
        b = mg.tensor(b_np, device=device, requires_grad=True)
        rm, rv = mg.zeros(5, device=device), mg.ones(5, device=device)
        y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.1)
        y.backward(mg.tensor(gy_np, device=device))
        results.append([t.numpy().astype(np.float64) for t in (y, x.grad, w.grad, b.grad, rm, rv)])
    tol = 2e-2 if dtype == np.float16 else 1e-5
    for cpu, gpu in zip(*results):
        np.testing.assert_allclose(gpu, cpu, rtol=tol, atol=tol * max(1.0, np.abs(cpu).max()))


def test_cudnn_is_unavailable_when_no_plan_can_be_built(monkeypatch):
    # The library loads (backend_version answers) but building a plan fails, as when the
    # frontend finds no libcudart of its CUDA major: available() must say no, with the reason.
    fake = _FakeCudnn()
    fake.pygraph = lambda **kw: (_ for _ in ()).throw(RuntimeError("libcudart.so.12: missing"))
    monkeypatch.setattr(cudnn_conv, "cuda_available", lambda: True)
    monkeypatch.setattr(cudnn_conv, "_state", {**cudnn_conv._state, "checked": False,
                                               "ok": False, "enabled": True, "module": None})
    monkeypatch.setitem(sys.modules, "cudnn", fake)
    with pytest.warns(RuntimeWarning, match="could not build a convolution plan.*libcudart"):
        assert cudnn_conv.available() is False


@needs_gpu
@pytest.mark.parametrize("low", [np.float16, ml_dtypes.bfloat16])
def test_gpu_vectorised_casts_equal_astype_bit_for_bit(low, rng):
    from minigrad._backend import casts, cupy

    def _bits(a):
        return a.view(f"u{a.dtype.itemsize}")

    n = 1 << 17
    x = (rng.standard_normal(n) * np.logspace(-45, 38, n)).astype(np.float32)
    x[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 7e4, 1e-42, 65519.99]
    d = cupy.asarray(x)
    for src, dtype in ((d, low), (d.astype(low), np.float32)):
        got = casts.astype(src, dtype)
        assert casts._vectorisable(src, np.dtype(dtype))
        ref = src.astype(dtype)
        np.testing.assert_array_equal(_bits(got.get()), _bits(ref.get()))
    odd = d[1:n - 2]                                   # misaligned and a size not divisible by 4
    assert not casts._vectorisable(odd, np.dtype(low))
    np.testing.assert_array_equal(_bits(casts.astype(odd, low).get()),
                                  _bits(odd.astype(low).get()))


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_gpu_relu_grad_kernel_equals_the_numpy_rule(dtype, rng):
    from minigrad._backend import cupy

    y = np.maximum(rng.standard_normal(1000), 0).astype(dtype)
    y[:3] = [np.nan, 0.0, np.inf]
    gy = rng.standard_normal(1000).astype(dtype)
    gy[3:6] = [np.inf, np.nan, -np.inf]
    got = kernels.relu_grad(cupy.asarray(gy), cupy.asarray(y)).get()
    np.testing.assert_array_equal(got, kernels.relu_grad(gy, y))
