"""LeNet-5 (LeCun et al., 1998) for 32x32 images."""

from __future__ import annotations

from ..nn import Conv2d, Flatten, Linear, MaxPool2d, Module, ReLU

__all__ = ["LeNet5", "lenet5"]


class LeNet5(Module):
    """conv 6@5x5 - relu - maxpool 2 - conv 16@5x5 - relu - maxpool 2 - fc 120 - relu - fc 84 -
    relu - fc ``num_classes``, for ``(N, in_channels, 32, 32)`` inputs."""

    def __init__(self, num_classes: int = 10, in_channels: int = 1):
        super().__init__()
        self.conv1 = Conv2d(in_channels, 6, 5)
        self.conv2 = Conv2d(6, 16, 5)
        self.relu = ReLU()
        self.pool = MaxPool2d(2)
        self.flatten = Flatten()
        self.fc1 = Linear(16 * 5 * 5, 120)
        self.fc2 = Linear(120, 84)
        self.fc3 = Linear(84, num_classes)

    def forward(self, x):
        if x.ndim != 4 or x.shape[-2:] != (32, 32):
            raise ValueError(f"LeNet5 expects (N, C, 32, 32) images, got shape {x.shape}; pad "
                             "28x28 digits by 2 pixels per side")
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def lenet5(num_classes: int = 10, in_channels: int = 1) -> LeNet5:
    """A LeNet-5 for ``(N, in_channels, 32, 32)`` images (e.g. MNIST padded to 32x32)."""
    return LeNet5(num_classes, in_channels)
