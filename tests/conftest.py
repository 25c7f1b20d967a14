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


@pytest.fixture
def rng():
    return np.random.default_rng(0)
