"""Collectives on CuPy buffers over NCCL (``cupy.cuda.nccl``), one GPU per rank.

The communicator's unique id travels over MPI. Collectives run on a side stream: an event
recorded on the current stream orders them after the kernels that produced the buffer, and
``Work.wait()`` makes the current stream wait for the collective's event, so the host never
blocks (DESIGN invariant 11).
"""

from __future__ import annotations

import cupy
from cupy.cuda import nccl

from ._mpi import Work

__all__ = ["NCCLBackend"]

_OPS = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN}
_DTYPES = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
           "float64": nccl.NCCL_FLOAT64, "int8": nccl.NCCL_INT8, "uint8": nccl.NCCL_UINT8,
           "int32": nccl.NCCL_INT32, "int64": nccl.NCCL_INT64,
           "bfloat16": getattr(nccl, "NCCL_BFLOAT16", 9)}  # ncclBfloat16 = 9 since NCCL 2.10


def _dtype(buf):
    try:
        return _DTYPES[buf.dtype.name]
    except KeyError:
        raise TypeError(f"minigrad.distributed (nccl): no NCCL datatype for {buf.dtype}; cast "
                        "the tensor to float16/bfloat16/float32/float64/int32/int64") from None


class NCCLBackend:
    """NCCL collectives among the ranks of ``mpi_comm``, on GPU ``local_rank``."""

    name = "nccl"

    def __init__(self, mpi_comm, local_rank: int):
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()
        cupy.cuda.Device(local_rank).use()
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = mpi_comm.bcast(uid, root=0)  # a tuple of ints, not an array
        self.comm = nccl.NcclCommunicator(self.size, uid, self.rank)
        self.stream = cupy.cuda.Stream(non_blocking=True)

    def _launch(self, call, *keep) -> Work:
        start = cupy.cuda.Event(disable_timing=True)
        start.record(cupy.cuda.get_current_stream())
        self.stream.wait_event(start)
        call(self.stream.ptr)
        done = cupy.cuda.Event(disable_timing=True)
        done.record(self.stream)

        def finish(keep=keep):  # the buffers stay alive until the wait
            cupy.cuda.get_current_stream().wait_event(done)
        return Work(finish)

    def iallreduce(self, buf, op: str = "sum") -> Work:
        return self._launch(lambda s: self.comm.allReduce(
            buf.data.ptr, buf.data.ptr, buf.size, _dtype(buf), _OPS[op], s), buf)

    def allreduce(self, buf, op: str = "sum") -> None:
        self.iallreduce(buf, op).wait()

    def bcast(self, buf, root: int = 0) -> None:
        self._launch(lambda s: self.comm.bcast(buf.data.ptr, buf.size, _dtype(buf), root, s),
                     buf).wait()

    def allgather(self, buf):
        rows = cupy.empty((self.size,) + buf.shape, buf.dtype)
        self._launch(lambda s: self.comm.allGather(buf.data.ptr, rows.data.ptr, buf.size,
                                                   _dtype(buf), s), buf, rows).wait()
        return rows

    def barrier(self) -> None:
        self.allreduce(cupy.zeros(1, cupy.int32))
