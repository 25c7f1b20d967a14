"""Collectives on NumPy buffers over MPI (mpi4py): the buffer protocol, never pickled arrays.

MPI has no float16/bfloat16 datatype, so those travel as raw bytes (``Allgather``) and every rank
reduces the gathered rows itself in rank order: the same operations in the same order, hence
bit-identical results on every rank.
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

__all__ = ["MPIBackend", "Work", "LEAVE_TAG", "RankLeft"]

LEAVE_TAG = 0x6D67  # the tag of the notice a rank sends the others when its process exits
_GRACE_S = 2.0  # how long a collective may still complete after a peer's exit notice


class RankLeft(RuntimeError):
    """Another rank's process exited while this rank waits for it in a collective."""

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
    """One communicator's collectives on C-contiguous NumPy arrays, in place where it can.

    ``leave_comm`` (a communicator of the same ranks) carries exit notices: a collective waits by
    polling its request and that communicator, so a rank whose process ended (``sys.exit``, the
    end of its script) turns the others' wait into :class:`RankLeft` instead of a hang.
    """

    name = "mpi"

    def __init__(self, comm, leave_comm=None):
        self.comm = comm
        self.leave_comm = leave_comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def _complete(self, req) -> None:
        if self.leave_comm is None:
            req.Wait()
            return
        status = MPI.Status()
        while not req.Test():
            if self.leave_comm.Iprobe(MPI.ANY_SOURCE, LEAVE_TAG, status):
                # The rank may have left right after its part of this very collective: give
                # the request a moment to complete before calling it a desertion.
                deadline = time.monotonic() + _GRACE_S
                while time.monotonic() < deadline:
                    if req.Test():
                        return
                raise RankLeft(
                    f"minigrad.distributed: rank {status.Get_source()} exited (sys.exit or the "
                    f"end of its script) while rank {self.rank} waits for it in a collective; "
                    "every rank must make the same collective calls")

    def iallreduce(self, buf, op: str = "sum") -> Work:
        if buf.dtype in _NATIVE:
            req = self.comm.Iallreduce(MPI.IN_PLACE, buf, _OPS[op])
            return Work(lambda: self._complete(req), req.Test)
        rows = np.empty((self.size,) + buf.shape, buf.dtype)
        req = self.comm.Iallgather(_bytes(buf), _bytes(rows))

        def finish():
            self._complete(req)
            buf[...] = reduce_rows(rows, op)
        return Work(finish, req.Test)

    def allreduce(self, buf, op: str = "sum") -> None:
        self.iallreduce(buf, op).wait()

    def bcast(self, buf, root: int = 0) -> None:
        self._complete(self.comm.Ibcast(_bytes(buf), root=root))

    def allgather(self, buf):
        rows = np.empty((self.size,) + buf.shape, buf.dtype)
        self._complete(self.comm.Iallgather(_bytes(buf), _bytes(rows)))
        return rows

    def barrier(self) -> None:
        self._complete(self.comm.Ibarrier())

    def announce_exit(self) -> list:
        """Tell every other rank this process is ending; returns the send requests (kept alive
        until MPI finalizes)."""
        note = np.zeros(1, np.uint8)
        return [self.leave_comm.Isend(note, dest=r, tag=LEAVE_TAG)
                for r in range(self.size) if r != self.rank]
