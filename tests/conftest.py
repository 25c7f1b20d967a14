"""Shared fixtures: every test that takes ``device`` runs on the CPU and, when CuPy sees a GPU,
on CUDA too (skipped cleanly otherwise)."""

import numpy as np
import pytest

import minigrad as mg

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not mg.cuda.is_available(), reason="CuPy sees no GPU"))]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(autouse=True)
def _seed():
    mg.manual_seed(0)
    np.random.seed(0)


@pytest.fixture(params=[True, False], ids=["f16c", "numpy-casts"])
def f16c(request, monkeypatch):
    """Both float16/bfloat16 cast implementations: the C extension's and the NumPy block
    kernels."""
    from minigrad._backend import lowp_cpu

    if request.param and not lowp_cpu.F16C:
        pytest.skip("the C cast extension is not built or the CPU lacks F16C")
    monkeypatch.setattr(lowp_cpu, "F16C", request.param)
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# ----------------------------------------------------------------------------- PyTorch oracle
# Tests that compare with PyTorch (a local or global named ``torch``) are counted, and the count
# closes the run: CI installs the ``oracle`` extra, so there they must run, not skip.
_oracle = {"passed": 0, "failed": 0, "skipped": 0}


def _uses_torch(item) -> bool:
    code = getattr(getattr(item, "function", None), "__code__", None)
    names = () if code is None else code.co_varnames + code.co_names
    return "torch" in names or hasattr(getattr(item, "module", None), "torch")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if _uses_torch(item):  # a property travels with the report, to xdist's controller too
        outcome.get_result().user_properties.append(("oracle", True))


def pytest_runtest_logreport(report):
    if (report.when == "call" or report.skipped) and ("oracle", True) in report.user_properties:
        _oracle[report.outcome] = _oracle.get(report.outcome, 0) + 1


def pytest_terminal_summary(terminalreporter):
    ran = _oracle["passed"] + _oracle["failed"]
    terminalreporter.write_line(
        f"PyTorch oracle: {ran} differential tests ran ({_oracle['failed']} failed), "
        f"{_oracle['skipped']} skipped" + ("" if ran else " (is the 'oracle' extra installed?)"))
