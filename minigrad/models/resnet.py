"""ResNet-18/34 (He et al., 2016) with torchvision's module layout and parameter names."""

from __future__ import annotations

from ..nn import (
    AdaptiveAvgPool2d,
    BatchNorm2d,
    Conv2d,
    Identity,
    Linear,
    MaxPool2d,
    Module,
    ReLU,
    Sequential,
    init,
)

__all__ = ["BasicBlock", "ResNet", "resnet18", "resnet34"]


class BasicBlock(Module):
    """Two 3x3 conv-BN layers with an identity (or 1x1 conv-BN ``downsample``) shortcut."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None):
        super().__init__()
        self.conv1 = Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = BatchNorm2d(planes)
        self.relu = ReLU()
        self.conv2 = Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = BatchNorm2d(planes)
        if downsample is not None:
            self.downsample = downsample
        else:
            self.add_module("downsample", None)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(Module):
    """A ResNet of BasicBlocks.

    Args:
        layers: blocks per stage, e.g. ``(2, 2, 2, 2)`` for ResNet-18.
        num_classes: size of the ``fc`` output.
        small_input: for 32x32 images (CIFAR): a 3x3 stride-1 stem and no max pooling
            (``maxpool`` is an Identity so parameter names are unchanged).
    """

    def __init__(self, layers, num_classes: int = 1000, small_input: bool = False,
                 in_channels: int = 3):
        super().__init__()
        self.inplanes = 64
        if small_input:
            self.conv1 = Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        else:
            self.conv1 = Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = BatchNorm2d(64)
        self.relu = ReLU()
        self.maxpool = Identity() if small_input else MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = AdaptiveAvgPool2d((1, 1))
        self.fc = Linear(512 * BasicBlock.expansion, num_classes)
        # torchvision's initialisation: He normal (fan_out) convs, BN scale 1 and shift 0.
        for m in self.modules():
            if isinstance(m, Conv2d):
                init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, BatchNorm2d):
                init.ones_(m.weight)
                init.zeros_(m.bias)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * BasicBlock.expansion:
            downsample = Sequential(
                Conv2d(self.inplanes, planes * BasicBlock.expansion, 1, stride=stride,
                       bias=False),
                BatchNorm2d(planes * BasicBlock.expansion))
        blocks_ = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * BasicBlock.expansion
        blocks_ += [BasicBlock(self.inplanes, planes) for _ in range(1, blocks)]
        return Sequential(*blocks_)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.avgpool(x)
        return self.fc(x.reshape(x.shape[0], -1))


def resnet18(num_classes: int = 1000, small_input: bool = False, **kwargs) -> ResNet:
    """ResNet-18 (11,689,512 parameters with 1000 classes); ``small_input`` for 32x32 images."""
    return ResNet((2, 2, 2, 2), num_classes, small_input, **kwargs)


def resnet34(num_classes: int = 1000, small_input: bool = False, **kwargs) -> ResNet:
    """ResNet-34; ``small_input`` for 32x32 images."""
    return ResNet((3, 4, 6, 3), num_classes, small_input, **kwargs)
