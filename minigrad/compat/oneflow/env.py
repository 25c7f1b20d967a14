"""OneFlow's ``oneflow.env``: this process's place in a distributed run (``minigrad.env``).

The answers are ``minigrad.distributed``'s process group's once ``init_process_group`` ran, and
those of a single process before (rank 0 of 1), as OneFlow reports outside a launcher. Nothing
here imports ``minigrad.distributed`` (and so mpi4py): a process group exists only when user code
imported it.

Example:
    >>> import minigrad as mg
    >>> mg.env.get_rank(), mg.env.get_world_size()
    (0, 1)
"""

from __future__ import annotations

import sys

__all__ = ["get_local_rank", "get_rank", "get_world_size"]


def _group():
    return sys.modules.get("minigrad.distributed")


def get_rank() -> int:
    """This process's rank (0 without a process group)."""
    dist = _group()
    return 0 if dist is None else dist.get_rank()


def get_world_size() -> int:
    """The number of ranks (1 without a process group)."""
    dist = _group()
    return 1 if dist is None else dist.get_world_size()


def get_local_rank() -> int:
    """The rank among this machine's processes (0 without a process group)."""
    dist = _group()
    return 0 if dist is None else dist.get_local_rank()

