"""MindSpore's loss-scale cells, as their API examples use them, with ``mindspore`` renamed
``minigrad``: ``nn.TrainOneStepWithLossScaleCell`` with ``scale_sense`` a
``DynamicLossScaleUpdateCell``, a ``FixedLossScaleUpdateCell``, or a Tensor (and the per-call
``scaling_sens`` argument), next to a plain ``nn.TrainOneStepCell``, on the examples' ``Net``
(a ``Parameter`` weight and ``ops.MatMul``) with MSELoss and ``nn.Momentum``.

The inputs are synthetic (NumPy, fixed seed) instead of the examples' ones/zeros, and every run
starts from the same weight, so all four trajectories must be the same (loss scaling divides the
gradients back exactly once). ``main()`` returns each run's per-step losses, overflow flags and
scales, and the initial weight and data so a reference can be computed.
"""

import numpy as np

import minigrad as ms
from minigrad import Parameter, Tensor, nn, ops
from minigrad import dtype as mstype


class Net(nn.Cell):
    def __init__(self, in_features, out_features, weight):
        super(Net, self).__init__()
        self.weight = Parameter(Tensor(weight.astype(np.float32)), name='weight')
        self.matmul = ops.MatMul()

    def construct(self, x):
        output = self.matmul(x, self.weight)
        return output


size, in_features, out_features = 16, 16, 10
rng = np.random.default_rng(0)
weight0 = rng.standard_normal([in_features, out_features]) * 0.1
inputs_np = rng.standard_normal([size, in_features]).astype(np.float32)
label_np = rng.standard_normal([size, out_features]).astype(np.float32)
steps = 8
learning_rate, momentum = 0.1, 0.9


def run(make_train_network, pass_scaling_sens=None):
    net = Net(in_features, out_features, weight0)
    loss_fn = nn.MSELoss()
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=learning_rate,
                            momentum=momentum)
    net_with_loss = nn.WithLossCell(net, loss_fn)
    train_network = make_train_network(net_with_loss, optimizer)
    train_network.set_train()

    inputs = Tensor(inputs_np)
    label = Tensor(label_np)
    losses, overflows, scales = [], [], []
    for _ in range(steps):
        if pass_scaling_sens is not None:
            scaling_sens = Tensor([pass_scaling_sens], dtype=mstype.float32)
            output = train_network(inputs, label, scaling_sens)
        else:
            output = train_network(inputs, label)
        if isinstance(output, tuple):
            loss, overflow, scale = output
            overflows.append(bool(overflow.asnumpy()))
            scales.append(float(np.asarray(scale.asnumpy()).reshape(-1)[0]))
        else:
            loss = output
        losses.append(float(loss.asnumpy()))
    return {"losses": losses, "overflow": overflows, "scale": scales,
            "weight": net.weight.asnumpy().copy()}


def main():
    ms.set_seed(0)

    # 1) when the type of scale_sense is Cell: dynamic
    def dynamic(net_with_loss, optimizer):
        manager = nn.DynamicLossScaleUpdateCell(loss_scale_value=2**12, scale_factor=2,
                                                scale_window=1000)
        return nn.TrainOneStepWithLossScaleCell(net_with_loss, optimizer, scale_sense=manager)

    # 1') when the type of scale_sense is Cell: fixed
    def fixed(net_with_loss, optimizer):
        manager = nn.FixedLossScaleUpdateCell(loss_scale_value=2**12)
        return nn.TrainOneStepWithLossScaleCell(net_with_loss, optimizer, scale_sense=manager)

    # 2) when the type of scale_sense is Tensor
    def tensor_sense(net_with_loss, optimizer):
        scaling_sens = Tensor([1024], dtype=mstype.float32)
        return nn.TrainOneStepWithLossScaleCell(net_with_loss, optimizer,
                                                scale_sense=scaling_sens)

    def plain(net_with_loss, optimizer):
        return nn.TrainOneStepCell(net_with_loss, optimizer)

    out = {
        "dynamic": run(dynamic),
        "fixed": run(fixed),
        "tensor": run(tensor_sense),
        "tensor_per_call": run(tensor_sense, pass_scaling_sens=256.0),
        "plain": run(plain),
        "weight0": weight0, "inputs": inputs_np, "label": label_np,
        "lr": learning_rate, "momentum": momentum,
    }
    out["losses"] = out["dynamic"]["losses"]
    return out


if __name__ == "__main__":
    main()
