"""Seed 001 (MindSpore mixed-precision guide): both code samples, with MindSpore names mapped to
minigrad: ``nn.Cell`` -> ``nn.Module`` with ``construct`` -> ``forward``, ``Tensor`` ->
``mg.tensor``, ``Momentum`` -> ``SGD(momentum=0.9)``, ``MSELoss`` -> ``nn.MSELoss``,
``P.Flatten()`` -> ``nn.Flatten()``, ``pad_mode='valid'`` -> ``padding=0``, ``net.set_train()``
-> ``net.train()``, ``net.trainable_params()`` -> ``net.parameters()``, ``mstype.float32`` ->
``mg.float32``. The guide builds ``predict`` but calls ``train_network(inputs, ...)``; here the
tensor is named ``inputs``. ``nn.Dense`` is minigrad's alias of ``nn.Linear``.

Claims asserted: ``build_train_network(level="O2")`` casts the network to float16 (fp32 master
weights, float32 loss) and trains; the manual form (``add_flags_recursive(fp16=True)`` with fc3
pinned to float32 first) computes fc1/fc2 in float16 and fc3 in float32 with float32 parameters,
and ``TrainOneStepWithLossScaleCell`` trains it with the per-call ``scaling_sens``.
"""

import numpy as np

import minigrad as mg
import minigrad.nn as nn
from minigrad import amp
from minigrad.nn import MSELoss, TrainOneStepWithLossScaleCell, WithLossCell
from minigrad.optimizer import SGD


# ---------------------------------------------------------------- sample 1: automatic (O2)
class LeNet5(nn.Module):
    def __init__(self):
        super(LeNet5, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=0)
        self.conv2 = nn.Conv2d(6, 16, 5, padding=0)
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, 10)
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2)
        self.flatten = nn.Flatten()

    def forward(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def test_sample1_build_train_network_o2():
    mg.manual_seed(0)
    # Initialize network
    net = LeNet5()

    # Define training data, label and sens
    inputs = mg.tensor(np.ones([1, 1, 32, 32]).astype(np.float32) * 0.01)
    label = mg.tensor(np.zeros([1, 10]).astype(np.float32))
    scaling_sens = mg.tensor(np.full((1), 1.0), dtype=mg.float32)

    # Define Loss and Optimizer
    net.train()
    loss = MSELoss()
    optimizer = SGD(net.parameters(), lr=0.1, momentum=0.9)
    net_with_loss = WithLossCell(net, loss)
    train_network = amp.build_train_network(net_with_loss, optimizer, level="O2")

    # Run training
    output = train_network(inputs, label, scaling_sens)

    assert output.dtype == mg.float32 and output.shape == ()
    assert all(p.dtype == mg.float16 for p in net.parameters())
    assert all(m.dtype == mg.float32 for m in train_network.optimizer.master_params())
    assert net(inputs).dtype == mg.float16
    assert not train_network.overflow
    losses = [float(output.item())]
    for _ in range(5):
        losses.append(float(train_network(inputs, label, scaling_sens).item()))
    assert losses[-1] < 0.5 * losses[0]
    # without the per-call sens the manager's dynamic scale (2**24) is used: the first such
    # step overflows in float16 and is skipped, the scale halves
    w = net.fc1.weight.numpy().copy()
    with np.errstate(over="ignore", invalid="ignore"):
        train_network(inputs, label)
    assert train_network.overflow and train_network.loss_scale == 2.0 ** 23
    np.testing.assert_array_equal(net.fc1.weight.numpy(), w)


# ---------------------------------------------------------------- sample 2: manual
class LeNet5Manual(nn.Module):
    def __init__(self):
        super(LeNet5Manual, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=0)
        self.conv2 = nn.Conv2d(6, 16, 5, padding=0)
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, 10).add_flags_recursive(fp32=True)
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2)
        self.flatten = nn.Flatten()

    def forward(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def test_sample2_manual_mixed_precision():
    mg.manual_seed(0)
    # Initialize network and set mixing precision
    net = LeNet5Manual()
    net.add_flags_recursive(fp16=True)

    # Define training data, label and sens
    inputs = mg.tensor(np.ones([1, 1, 32, 32]).astype(np.float32) * 0.01)
    label = mg.tensor(np.zeros([1, 10]).astype(np.float32))
    scaling_sens = mg.tensor(np.full((1), 1.0), dtype=mg.float32)

    # Define Loss and Optimizer
    net.train()
    loss = MSELoss()
    optimizer = SGD(net.parameters(), lr=0.1, momentum=0.9)
    net_with_loss = WithLossCell(net, loss)
    train_network = TrainOneStepWithLossScaleCell(net_with_loss, optimizer)

    # Run training
    output = train_network(inputs, label, scaling_sens)

    # fc1/fc2 in float16, fc3 pinned to float32; parameters stay float32 (cast per op)
    acts = {}
    net.fc2.register_forward_hook(lambda m, a, o: acts.__setitem__("fc2", o.dtype))
    net.fc3.register_forward_hook(lambda m, a, o: acts.__setitem__("fc3", o.dtype))
    net(inputs)
    assert acts == {"fc2": mg.float16, "fc3": mg.float32}
    assert net.fc3.compute_dtype == mg.float32 and net.fc1.compute_dtype == mg.float16
    assert all(p.dtype == mg.float32 for p in net.parameters())
    losses = [float(output.item())]
    for _ in range(5):
        losses.append(float(train_network(inputs, label, scaling_sens).item()))
    assert losses[-1] < 0.5 * losses[0] and not train_network.overflow
