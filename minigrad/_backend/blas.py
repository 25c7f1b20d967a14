"""BLAS threads per GEMM on the CPU: more than one only for products worth splitting, and only
while the other processes on the machine leave room for them.

OpenBLAS splits a GEMM over its whole thread pool and its threads wait for each other. Measured
on the shared 2-core development machine (numpy 2.4's OpenBLAS 0.3.31, x86-64):

- idle, or beside processes that only keep a core busy, a second thread makes products of
  3-130 MFLOP (LeNet-5's are 3-30) 1.5-1.9x faster; under 2 MFLOP OpenBLAS keeps one thread;
- during other engineers' test runs (load average 4-10: several processes, each with its own
  BLAS and OpenMP pools), a descheduled thread holds up the other: LeNet's products ran 2-5x,
  some 25-60x, slower on 2 threads than on 1, and the main job at 2 threads 7x slower;
- in between (one such process beside), 15 MFLOP and larger products still gained, 3-6 MFLOP
  ones lost about 10% (one noisy measurement, hence the middle rule below is a hedge).

No size threshold serves all of these, so each GEMM asks :func:`for_flops`, which reads how many
cores the other processes kept busy over the last ``WINDOW`` seconds (Linux: the busy time of this
process's CPUs in ``/proc/stat`` minus this process's own CPU time; elsewhere none) and gives BLAS

- one thread when the others keep all but half a core busy, and for products under
  ``MIN_FLOPS_PER_EXTRA_THREAD`` floating-point operations;
- when the others use at least half a core, more than one only for products of at least
  ``MIN_FLOPS_BUSY``;
- else one more thread per ``MIN_FLOPS_PER_EXTRA_THREAD``, up to the cap.

The cap is what BLAS had when minigrad first multiplied: ``OPENBLAS_NUM_THREADS`` (and friends)
and a ``threadpoolctl.threadpool_limits`` in force then are respected; ``set_cap`` changes it
(``set_cap(1)``: always one thread). The setting is changed through threadpoolctl, and only when
the choice changes. Without threadpoolctl, or when NumPy's BLAS cannot be told apart from
another one, nothing is changed.
"""

from __future__ import annotations

import os
import time

__all__ = ["MIN_FLOPS_BUSY", "MIN_FLOPS_PER_EXTRA_THREAD", "WINDOW", "for_flops", "free_cores",
           "set_cap", "threads_for"]

# The smallest product that OpenBLAS 0.3.31 split with a gain (1.5x on 2 idle cores: a
# 32x400x120 GEMM, 3 MFLOP; 1.3 MFLOP ones took as long on 2 threads as on 1).
MIN_FLOPS_PER_EXTRA_THREAD = 1 << 21
# ... and beside one other busy process (1.6x for a 16x150x3200 GEMM, 15 MFLOP; 0.9x at 6).
MIN_FLOPS_BUSY = 12_000_000
WINDOW = 0.5  # seconds between two looks at the machine's load

_state = {"lib": None, "cap": None, "now": None, "initial": None, "free": 1.0, "probe": None,
          "cores": 1}


def _controller():
    """The BLAS library NumPy loaded (threadpoolctl's controller), or False."""
    lib = _state["lib"]
    if lib is None:
        lib = False
        try:
            import numpy
            from threadpoolctl import ThreadpoolController

            libs = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
            if len(libs) > 1:  # SciPy (imported by scikit-learn) brings its own OpenBLAS
                root = os.path.dirname(os.path.realpath(numpy.__file__))
                libs = [c for c in libs if os.path.realpath(c.filepath).startswith(root)]
            if len(libs) == 1:
                lib = libs[0]
                cap = max(1, int(lib.get_num_threads() or 1))
                _state["cap"] = _state["now"] = _state["initial"] = cap
        except Exception:  # noqa: BLE001 - thread choice is an optimisation, never an error
            lib = False
        _state["lib"] = lib
    return lib


# ---------------------------------------------------------------------------- the machine's load
def _cpus():
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


def _busy_seconds(cpus):
    """Busy seconds so far of the CPUs ``cpus`` (Linux ``/proc/stat``), or None."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    wanted = {f"cpu{i}" for i in cpus}
    busy = 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] in wanted:
            v = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
            busy += sum(v) - v[3] - v[4]
    return busy / os.sysconf("SC_CLK_TCK")


def free_cores() -> float:
    """Cores of this process's CPUs that other processes left free over the last ``WINDOW``
    seconds (refreshed at most once per window; before the first window has passed, and where
    ``/proc/stat`` is missing, every core counts as free)."""
    now = time.monotonic()
    probe = _state["probe"]
    if probe is not None and now - probe[0] < WINDOW:
        return _state["free"]
    cpus = _cpus()
    _state["cores"] = len(cpus)
    busy, mine = _busy_seconds(cpus), time.process_time()
    if busy is None:
        _state["free"] = float(len(cpus))
    elif probe is not None:
        wall = now - probe[0]
        others = max(0.0, (busy - probe[1]) - (mine - probe[2])) / wall
        _state["free"] = max(0.0, len(cpus) - others)
    else:
        _state["free"] = float(len(cpus))
    _state["probe"] = (now, busy if busy is not None else 0.0, mine)
    return _state["free"]


# ------------------------------------------------------------------------------------ the choice
def threads_for(flops: float) -> int:
    """Threads a GEMM of ``flops`` floating-point operations gets now."""
    if _state["lib"] is None:
        _controller()
    cap = _state["cap"] or 1
    if cap == 1 or flops < MIN_FLOPS_PER_EXTRA_THREAD:
        return 1
    free = free_cores()
    cores = _state["cores"]
    others = cores - free
    if others >= cores - 0.5 or (others >= 0.5 and flops < MIN_FLOPS_BUSY):
        return 1
    room = cores if others < 0.5 else max(2, cores - int(others))
    return int(min(cap, room, 1 + flops // MIN_FLOPS_PER_EXTRA_THREAD))


def for_flops(flops: float) -> None:
    """Set BLAS's threads for a product of ``flops`` floating-point operations (2*m*k*n)."""
    if _state["lib"] is None:
        _controller()
    if not _state["lib"]:
        return
    want = threads_for(flops)
    if want != _state["now"]:
        _state["lib"].set_num_threads(want)
        _state["now"] = want


def set_cap(threads: int | None) -> None:
    """The most threads a GEMM may get (None: what BLAS had at minigrad's first product)."""
    lib = _controller()
    if not lib:
        return
    _state["cap"] = max(1, int(_state["initial"] if threads is None else threads))
    lib.set_num_threads(_state["cap"])
    _state["now"] = _state["cap"]
