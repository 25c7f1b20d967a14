"""A rank that raises must take the whole job down (MPI Abort), not leave the others waiting."""

from minigrad import distributed as dist

dist.init_process_group()
if dist.get_rank() == dist.get_world_size() - 1:
    raise RuntimeError("deliberate failure on the last rank")
dist.barrier()  # never completes: the failing rank aborts the job
