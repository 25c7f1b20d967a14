"""``minigrad.models``: a small model zoo (built from ``minigrad.nn``; no downloads).

``minigrad.hub.load("minigrad/models", name)`` resolves names from ``ZOO``.
"""

from .lenet import LeNet5, lenet5
from .mlp import mlp
from .resnet import BasicBlock, ResNet, resnet18, resnet34

__all__ = ["ZOO", "BasicBlock", "LeNet5", "ResNet", "lenet5", "mlp", "resnet18", "resnet34"]

# Public entry points by name (what hub.load accepts).
ZOO = {
    "lenet5": lenet5,
    "mlp": mlp,
    "resnet18": resnet18,
    "resnet34": resnet34,
}
