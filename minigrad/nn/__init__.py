"""``minigrad.nn``: ``Module``, layers, losses, ``init`` and ``utils``.

Layers keep PyTorch's constructor signatures, parameter names and default initialisations so
state dicts and habits carry over; ``Dense`` is MindSpore's name for ``Linear``.
"""

from ..tensor import Parameter
from . import init, parallel, utils
from .activation import GELU, LeakyReLU, PReLU, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .attention import MultiheadAttention
from .cells import TrainOneStepCell, TrainOneStepWithLossScaleCell, WithLossCell
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .dropout import Dropout
from .linear import Dense, Flatten, Identity, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss
from .module import Cell, Module, RemovableHandle, current_module_path
from .norm import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .sparse import Embedding

__all__ = [
    "GELU",
    "GRU",
    "LSTM",
    "RNN",
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "Cell",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "CrossEntropyLoss",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "GRUCell",
    "GroupNorm",
    "Identity",
    "L1Loss",
    "LSTMCell",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "MSELoss",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "PReLU",
    "Parameter",
    "RNNCell",
    "ReLU",
    "RemovableHandle",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "TrainOneStepCell",
    "TrainOneStepWithLossScaleCell",
    "WithLossCell",
    "current_module_path",
    "init",
    "parallel",
    "utils",
]


def __getattr__(name):
    # nn.Graph lives in graph.py (another module family); import it on first use so this
    # package never depends on it being present.
    if name == "Graph":
        from .graph import Graph

        return Graph
    if name in ("DynamicLossScaleUpdateCell", "FixedLossScaleUpdateCell"):
        # MindSpore's cells over amp's loss-scale managers (amp sits above nn: imported on use)
        from ..amp import o_levels

        return getattr(o_levels, name)
    raise AttributeError(f"module 'minigrad.nn' has no attribute {name!r}")
