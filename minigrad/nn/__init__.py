"""``minigrad.nn``: ``Module``, layers, losses, ``init`` and ``utils``.

Layers keep PyTorch's constructor signatures, parameter names and default initialisations so
state dicts and habits carry over. MindSpore's ``Cell``, ``Dense`` and cells and OneFlow's
``Graph`` are attached by ``minigrad.compat``.
"""

from ..core.tensor import Parameter
from . import init, parallel, utils
from .activation import GELU, LeakyReLU, PReLU, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .dropout import Dropout
from .linear import Flatten, Identity, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss
from .module import Module, RemovableHandle, current_module_path
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
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "CrossEntropyLoss",
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
    "current_module_path",
    "init",
    "parallel",
    "utils",
]

