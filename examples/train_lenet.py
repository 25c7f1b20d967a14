"""Train LeNet-5 on the scikit-learn digits with mixed precision (see ``minigrad.train``).

    python examples/train_lenet.py                 # AMP float16, cuda if available
    python examples/train_lenet.py --no-amp --epochs 3
    python examples/train_lenet.py --resume        # continue from runs/lenet/checkpoint.safetensors
    mpiexec -n 2 python examples/train_lenet.py --distributed   # data-parallel, 2 ranks
"""

import os
import sys

# Under mpiexec several ranks share this machine's cores: give each rank its share of BLAS
# threads before NumPy starts its pool, or the ranks' spinning BLAS threads fight for the cores
# (on 2 cores, 2 ranks with 2 threads each train ~10x slower than with 1).
_local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
if _local > 1:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(max(1, (os.cpu_count() or 1) // _local)))

from minigrad.train import cli  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli())
