"""Seed 001 (MindSpore mixed-precision guide): both code samples verbatim, with only the framework
name changed: ``mindspore`` -> ``minigrad``.

Names the guide uses without importing them are bound as a MindSpore user would import them: ``nn``
(``minigrad.nn``: ``Cell``, ``Conv2d(pad_mode=)``, ``Dense``, ``WithLossCell``, ...), ``P``
(MindSpore's ``ops.operations``; ``P.Flatten`` is ``minigrad.nn.Flatten``), ``Tensor``, ``mstype``
(the dtypes: ``minigrad.float32``), ``MSELoss``, ``Momentum`` (``minigrad.optimizer``),
``TrainOneStepWithLossScaleCell``; ``from mindspore.train import amp`` stays as written
(``minigrad.train`` re-exports ``amp``). The guide builds ``predict`` but calls
``train_network(inputs, ...)`` (a NameError in MindSpore too); here ``inputs = predict``.

Claims asserted: ``build_train_network(level="O2")`` casts the network to float16 (fp32 master
weights, float32 loss), returns MindSpore's ``(loss, overflow, scale)`` and trains; the manual
form (``add_flags_recursive(fp16=True)`` with fc3 pinned to float32 first) computes fc1/fc2 in
float16 and fc3 in float32 with float32 parameters, and ``TrainOneStepWithLossScaleCell`` trains
it with the per-call ``scaling_sens``.
"""

import numpy as np

import minigrad as mg
import minigrad as mstype
import minigrad.nn as nn
import minigrad.nn as P
from minigrad import Tensor
from minigrad.nn import MSELoss, TrainOneStepWithLossScaleCell, WithLossCell
from minigrad.optimizer import Momentum


def test_sample1_build_train_network_o2():
    mg.manual_seed(0)
    # ------------------------------------------------------------ the guide's block, verbatim
    # The interface of Auto_mixed precision
    from minigrad.train import amp

    # Define network
    class LeNet5(nn.Cell):
        def __init__(self):
            super(LeNet5, self).__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, pad_mode='valid')
            self.conv2 = nn.Conv2d(6, 16, 5, pad_mode='valid')
            self.fc1 = nn.Dense(16 * 5 * 5, 120)
            self.fc2 = nn.Dense(120, 84)
            self.fc3 = nn.Dense(84, 10)
            self.relu = nn.ReLU()
            self.max_pool2d = nn.MaxPool2d(kernel_size=2)
            self.flatten = P.Flatten()

        def construct(self, x):
            x = self.max_pool2d(self.relu(self.conv1(x)))
            x = self.max_pool2d(self.relu(self.conv2(x)))
            x = self.flatten(x)
            x = self.relu(self.fc1(x))
            x = self.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    # Initialize network
    net = LeNet5()

    # Define training data, label and sens
    predict = Tensor(np.ones([1, 1, 32, 32]).astype(np.float32) * 0.01)
    label = Tensor(np.zeros([1, 10]).astype(np.float32))
    scaling_sens = Tensor(np.full((1), 1.0), dtype=mstype.float32)

    # Define Loss and Optimizer
    net.set_train()
    loss = MSELoss()
    optimizer = Momentum(params=net.trainable_params(), learning_rate=0.1, momentum=0.9)
    net_with_loss = WithLossCell(net, loss)
    train_network = amp.build_train_network(net_with_loss, optimizer, level="O2")

    # Run training
    inputs = predict  # (the guide's name mismatch, see the module docstring)
    output = train_network(inputs, label, scaling_sens)
    # ------------------------------------------------------------ claims
    loss_value, overflow, scale = output
    assert loss_value.dtype == mg.float32 and loss_value.shape == ()
    assert not overflow.item() and scale.item() == 1.0
    assert all(p.dtype == mg.float16 for p in net.parameters())
    assert all(m.dtype == mg.float32 for m in train_network.optimizer.master_params())
    assert net(inputs).dtype == mg.float16
    losses = [float(loss_value.item())]
    for _ in range(5):
        losses.append(float(train_network(inputs, label, scaling_sens)[0].item()))
    assert losses[-1] < 0.5 * losses[0]
    # without the per-call sens the manager's dynamic scale (2**24) is used: the first such
    # step overflows in float16 and is skipped, the scale halves
    w = net.fc1.weight.numpy().copy()
    with np.errstate(over="ignore", invalid="ignore"):
        _, overflow, scale = train_network(inputs, label)
    assert overflow.item() and scale.item() == 2.0 ** 23 == train_network.loss_scale
    np.testing.assert_array_equal(net.fc1.weight.numpy(), w)


def test_sample2_manual_mixed_precision():
    mg.manual_seed(0)
    # ------------------------------------------------------------ the guide's block, verbatim
    # Define network
    class LeNet5(nn.Cell):
        def __init__(self):
            super(LeNet5, self).__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, pad_mode='valid')
            self.conv2 = nn.Conv2d(6, 16, 5, pad_mode='valid')
            self.fc1 = nn.Dense(16 * 5 * 5, 120)
            self.fc2 = nn.Dense(120, 84)
            self.fc3 = nn.Dense(84, 10).add_flags_recursive(fp32=True)
            self.relu = nn.ReLU()
            self.max_pool2d = nn.MaxPool2d(kernel_size=2)
            self.flatten = P.Flatten()

        def construct(self, x):
            x = self.max_pool2d(self.relu(self.conv1(x)))
            x = self.max_pool2d(self.relu(self.conv2(x)))
            x = self.flatten(x)
            x = self.relu(self.fc1(x))
            x = self.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    # Initialize network and set mixing precision
    net = LeNet5()
    net.add_flags_recursive(fp16=True)

    # Define training data, label and sens
    predict = Tensor(np.ones([1, 1, 32, 32]).astype(np.float32) * 0.01)
    label = Tensor(np.zeros([1, 10]).astype(np.float32))
    scaling_sens = Tensor(np.full((1), 1.0), dtype=mstype.float32)

    # Define Loss and Optimizer
    net.set_train()
    loss = MSELoss()
    optimizer = Momentum(params=net.trainable_params(), learning_rate=0.1, momentum=0.9)
    net_with_loss = WithLossCell(net, loss)
    train_network = TrainOneStepWithLossScaleCell(net_with_loss, optimizer)

    # Run training
    inputs = predict  # (the guide's name mismatch, see the module docstring)
    output = train_network(inputs, label, scaling_sens)
    # ------------------------------------------------------------ claims
    # fc1/fc2 in float16, fc3 pinned to float32; parameters stay float32 (cast per op)
    acts = {}
    net.fc2.register_forward_hook(lambda m, a, o: acts.__setitem__("fc2", o.dtype))
    net.fc3.register_forward_hook(lambda m, a, o: acts.__setitem__("fc3", o.dtype))
    net(inputs)
    assert acts == {"fc2": mg.float16, "fc3": mg.float32}
    assert net.fc3.compute_dtype == mg.float32 and net.fc1.compute_dtype == mg.float16
    assert all(p.dtype == mg.float32 for p in net.parameters())
    # MindSpore's Conv2d(..., pad_mode='valid') has no bias: 2 conv weights + 3 Dense layers
    assert net.training and len(net.trainable_params()) == 8
    losses = [float(output[0].item())]
    for _ in range(5):
        losses.append(float(train_network(inputs, label, scaling_sens)[0].item()))
    assert losses[-1] < 0.5 * losses[0] and not train_network.overflow
