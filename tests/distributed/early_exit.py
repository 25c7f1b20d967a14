"""A rank that ends its process (``sys.exit``) while the others wait for it in a collective must
take the job down with an error naming it, not leave them hanging."""

import sys

from minigrad import distributed as dist

dist.init_process_group()
dist.barrier()  # a collective every rank makes
if dist.get_rank() == dist.get_world_size() - 1:
    sys.exit(3)
dist.barrier()  # the others wait here for the rank that left
