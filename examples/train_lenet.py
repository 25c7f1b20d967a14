"""Train LeNet-5 on the scikit-learn digits with mixed precision (see ``minigrad.train``).

    python examples/train_lenet.py                 # AMP float16, cuda if available
    python examples/train_lenet.py --no-amp --epochs 3
    python examples/train_lenet.py --resume        # continue from runs/lenet/checkpoint.safetensors
    mpiexec -n 2 python examples/train_lenet.py --distributed   # data-parallel, 2 ranks
"""

import sys

from minigrad.train import cli

if __name__ == "__main__":
    sys.exit(cli())
