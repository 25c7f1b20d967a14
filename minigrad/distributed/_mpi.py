"""Collectives on NumPy buffers over MPI (mpi4py): the buffer protocol, never pickled arrays.

MPI has no float16/bfloat16 datatype, so those travel as raw bytes (``Allgather``) and every rank
reduces the gathered rows itself in rank order: the same operations in the same order, hence
bit-identical results on every rank.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

__all__ = ["MPIBackend", "Work"]

_OPS = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
_NATIVE = {np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                                 np.uint8, np.uint16, np.uint32, np.uint64)}


class Work:
    """A launched collective; ``wait()`` completes it (idempotent), ``progress()`` lets it
    advance without blocking (Open MPI moves a non-blocking collective only inside MPI calls)."""

    __slots__ = ("_finish", "_progress")

    def __init__(self, finish, progress=None):
        self._finish = finish
        self._progress = progress

    def progress(self) -> None:
        if self._progress is not None and self._finish is not None:
            self._progress()

    def wait(self) -> None:
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()


def reduce_rows(rows, op: str):
    """Reduce ``rows`` (world, ...) along axis 0 in rank order, in their own dtype."""
    if op == "sum":
        acc = rows[0].copy()
        with np.errstate(over="ignore", invalid="ignore"):  # inf stays inf for the scaler
            for r in rows[1:]:
                acc += r
        return acc
    return rows.max(axis=0) if op == "max" else rows.min(axis=0)


def _bytes(buf):
    return buf.reshape(-1).view(np.uint8)


class MPIBackend:
    """One communicator's collectives on C-contiguous NumPy arrays, in place where it can."""

    name = "mpi"

    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def iallreduce(self, buf, op: str = "sum") -> Work:
        if buf.dtype in _NATIVE:
            req = self.comm.Iallreduce(MPI.IN_PLACE, buf, _OPS[op])
            return Work(req.Wait, req.Test)
        rows = np.empty((self.size,) + buf.shape, buf.dtype)
        req = self.comm.Iallgather(_bytes(buf), _bytes(rows))

        def finish():
            req.Wait()
            buf[...] = reduce_rows(rows, op)
        return Work(finish, req.Test)

    def allreduce(self, buf, op: str = "sum") -> None:
        if buf.dtype in _NATIVE:
            self.comm.Allreduce(MPI.IN_PLACE, buf, _OPS[op])
        else:
            buf[...] = reduce_rows(self.allgather(buf), op)

    def bcast(self, buf, root: int = 0) -> None:
        self.comm.Bcast(_bytes(buf), root=root)

    def allgather(self, buf):
        rows = np.empty((self.size,) + buf.shape, buf.dtype)
        self.comm.Allgather(_bytes(buf), _bytes(rows))
        return rows

    def barrier(self) -> None:
        self.comm.Barrier()
