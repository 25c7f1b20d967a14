"""Data-parallel training over MPI (CPU tensors) and NCCL (CUDA tensors), ChainerMN style.

Launch one process per rank with ``mpiexec -n N python train.py``; without ``mpiexec`` the
group has one rank, so the same script runs alone. CPU tensors are reduced with MPI collectives
on their NumPy buffers; CUDA tensors with NCCL (one GPU per rank, ``cuda:<local rank>``).

Example:
    >>> import minigrad as mg
    >>> from minigrad import distributed as dist
    >>> dist.init_process_group()
    >>> t = mg.tensor([1.0, 2.0])
    >>> dist.all_reduce(t, op="mean").numpy().tolist()   # one rank: unchanged
    [1.0, 2.0]
    >>> dist.destroy_process_group()

``import minigrad`` never imports mpi4py; this package does, and says what to install.
"""

from .callbacks import bcast_list_, make_allreduce_cb
from .process_group import (
    all_gather, all_reduce, barrier, broadcast, destroy_process_group, get_backend,
    get_local_rank, get_rank, get_world_size, init_process_group, is_initialized,
)

__all__ = ["init_process_group", "is_initialized", "get_rank", "get_world_size", "get_local_rank",
           "get_backend", "barrier", "all_reduce", "broadcast", "all_gather",
           "destroy_process_group", "make_allreduce_cb", "bcast_list_"]
