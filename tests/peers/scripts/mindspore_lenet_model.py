"""MindSpore model-zoo LeNet (train.py + eval.py + src/lenet.py + src/dataset.py), with
``mindspore`` renamed ``minigrad``.

Synthetic 32x32x1 uint8 digits (NumPy, fixed seed) in a ``NumpySlicesDataset`` stand in for
``MnistDataset`` (already at LeNet's 32x32, so no Resize). Kept from the model zoo:
``set_context``, the ``create_dataset`` map chain (Rescale, HWC2CHW, TypeCast, shuffle, batch
with drop_remainder), LeNet5 with ``pad_mode='valid'`` and ``Normal(0.02)`` weight_init,
``SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")``, ``nn.Momentum``,
``Model(..., metrics={"Accuracy": Accuracy()}, amp_level="O2")`` trained with TimeMonitor,
ModelCheckpoint and LossMonitor callbacks, then eval.py's ``load_checkpoint``,
``load_param_into_net`` and ``model.eval``. A small ``Callback`` records each step's loss (as
model-zoo users do). ``main()`` returns the per-step losses and the eval accuracy.
"""

import glob
import os
import tempfile

import numpy as np

import minigrad.dataset as ds
import minigrad.dataset.transforms as C
import minigrad.dataset.vision as CV
import minigrad.nn as nn
from minigrad import context, load_checkpoint, load_param_into_net
from minigrad.common import dtype as mstype
from minigrad.common import set_seed
from minigrad.common.initializer import Normal
from minigrad.nn.metrics import Accuracy
from minigrad.train import Model
from minigrad.train.callback import (
    Callback, CheckpointConfig, LossMonitor, ModelCheckpoint, TimeMonitor,
)


class LeNet5(nn.Cell):
    """
    Lenet network

    Args:
        num_class (int): Number of classes. Default: 10.
        num_channel (int): Number of channels. Default: 1.

    Returns:
        Tensor, output tensor
    Examples:
        >>> LeNet5(num_class=10)

    """
    def __init__(self, num_class=10, num_channel=1, include_top=True):
        super(LeNet5, self).__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode='valid')
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode='valid')
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.include_top = include_top
        if self.include_top:
            self.flatten = nn.Flatten()
            self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init=Normal(0.02))
            self.fc2 = nn.Dense(120, 84, weight_init=Normal(0.02))
            self.fc3 = nn.Dense(84, num_class, weight_init=Normal(0.02))

    def construct(self, x):
        x = self.conv1(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        x = self.conv2(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        if not self.include_top:
            return x
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def synthetic_mnist(n, seed):
    rng = np.random.default_rng(seed)
    templates = np.zeros((10, 32, 32, 1))  # digit k: a bright 8x8 block at its own place
    for k in range(10):
        r, c = divmod(k, 4)
        templates[k, 2 + 10 * r:10 + 10 * r, 2 + 8 * c:10 + 8 * c] = 1.0
    labels = rng.integers(0, 10, size=n)
    images = np.clip(templates[labels] + 0.25 * rng.standard_normal((n, 32, 32, 1)), 0, 1)
    return {"image": (images * 255).astype(np.uint8), "label": labels}


def create_dataset(data, batch_size=32, repeat_size=1, num_parallel_workers=1):
    """
    create dataset for train or test
    """
    # define dataset
    mnist_ds = ds.NumpySlicesDataset(data, shuffle=False)

    rescale = 1.0 / 255.0
    shift = 0.0
    rescale_nml = 1 / 0.3081
    shift_nml = -1 * 0.1307 / 0.3081

    # define map operations
    rescale_nml_op = CV.Rescale(rescale_nml, shift_nml)
    rescale_op = CV.Rescale(rescale, shift)
    hwc2chw_op = CV.HWC2CHW()
    type_cast_op = C.TypeCast(mstype.int32)

    # apply map operations on images
    mnist_ds = mnist_ds.map(operations=type_cast_op, input_columns="label",
                            num_parallel_workers=num_parallel_workers)
    mnist_ds = mnist_ds.map(operations=[rescale_op, rescale_nml_op, hwc2chw_op],
                            input_columns="image", num_parallel_workers=num_parallel_workers)

    # apply DatasetOps
    buffer_size = 10000
    mnist_ds = mnist_ds.shuffle(buffer_size=buffer_size)  # 10000 as in LeNet train script
    mnist_ds = mnist_ds.batch(batch_size, drop_remainder=True)
    mnist_ds = mnist_ds.repeat(repeat_size)

    return mnist_ds


class StepLossRecorder(Callback):
    """Keeps the loss of every step (what LossMonitor prints)."""

    def __init__(self):
        super().__init__()
        self.losses = []

    def step_end(self, run_context):
        cb_params = run_context.original_args()
        loss = cb_params.net_outputs
        if isinstance(loss, (tuple, list)):
            loss = loss[0]
        self.losses.append(float(np.mean(loss.asnumpy())))


class config:
    device_target = "CPU"
    num_classes = 10
    lr = 0.03  # the model zoo's 0.01 needs more than these 60 steps of tiny data
    momentum = 0.9
    epoch_size = 15
    batch_size = 32
    save_checkpoint_steps = 4
    keep_checkpoint_max = 2


def train_lenet(ckpt_save_dir):
    context.set_context(mode=context.PYNATIVE_MODE, device_target=config.device_target)
    ds_train = create_dataset(synthetic_mnist(128, seed=0), config.batch_size)
    if ds_train.get_dataset_size() == 0:
        raise ValueError("Please check dataset size > 0 and batch_size <= dataset size")

    network = LeNet5(config.num_classes)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), config.lr, config.momentum)
    time_cb = TimeMonitor(data_size=ds_train.get_dataset_size())
    config_ck = CheckpointConfig(save_checkpoint_steps=config.save_checkpoint_steps,
                                 keep_checkpoint_max=config.keep_checkpoint_max)
    ckpoint_cb = ModelCheckpoint(prefix="checkpoint_lenet", directory=ckpt_save_dir,
                                 config=config_ck)

    model = Model(network, net_loss, net_opt, metrics={"Accuracy": Accuracy()}, amp_level="O2")

    recorder = StepLossRecorder()
    print("============== Starting Training ==============")
    model.train(config.epoch_size, ds_train, callbacks=[time_cb, ckpoint_cb, LossMonitor(),
                                                        recorder])
    return recorder.losses


def eval_lenet(ckpt_path):
    network = LeNet5(config.num_classes)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(network, net_loss, metrics={"Accuracy": Accuracy()})

    print("============== Starting Testing ==============")
    param_dict = load_checkpoint(ckpt_path)
    load_param_into_net(network, param_dict)
    ds_eval = create_dataset(synthetic_mnist(64, seed=1), config.batch_size)
    if ds_eval.get_dataset_size() == 0:
        raise ValueError("Please check dataset size > 0 and batch_size <= dataset size")

    acc = model.eval(ds_eval)
    print("============== {} ==============".format(acc))
    return acc


def main():
    set_seed(1)
    with tempfile.TemporaryDirectory() as ckpt_save_dir:
        losses = train_lenet(ckpt_save_dir)
        ckpts = sorted(glob.glob(os.path.join(ckpt_save_dir, "checkpoint_lenet*.ckpt")),
                       key=os.path.getmtime)
        acc = eval_lenet(ckpts[-1])
    return {"losses": losses, "accuracy": acc["Accuracy"], "n_checkpoints": len(ckpts)}


if __name__ == "__main__":
    main()
