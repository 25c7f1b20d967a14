"""MindSpore's quick start with its automatic mixed precision tutorial's loss scaling, with
``mindspore`` renamed ``minigrad``.

Synthetic 28x28x1 uint8 digits (NumPy, fixed seed) in a ``NumpySlicesDataset`` stand in for
``MnistDataset``; the rest is the tutorials': the ``datapipe`` (vision.Rescale, Normalize,
HWC2CHW, transforms.TypeCast, batch), an ``nn.Cell`` Network with ``construct``,
``auto_mixed_precision(model, 'O2')``, ``DynamicLossScaler``, ``mindspore.value_and_grad(...,
has_aux=True)`` over ``optimizer.parameters``, ``all_finite`` and ``optimizer(grads)``.
``main()`` returns the per-step losses, the test accuracy of each epoch and the final scale.
"""

import numpy as np

import minigrad
from minigrad import nn
from minigrad.amp import DynamicLossScaler, all_finite, auto_mixed_precision
from minigrad.dataset import NumpySlicesDataset, transforms, vision


def synthetic_mnist(n, seed):
    rng = np.random.default_rng(seed)
    templates = np.random.default_rng(11).random((10, 28, 28, 1))
    labels = rng.integers(0, 10, size=n)
    images = np.clip(templates[labels] + 0.25 * rng.standard_normal((n, 28, 28, 1)), 0, 1)
    return NumpySlicesDataset({"image": (images * 255).astype(np.uint8), "label": labels},
                              shuffle=False)


def datapipe(dataset, batch_size):
    image_transforms = [
        vision.Rescale(1.0 / 255.0, 0),
        vision.Normalize(mean=(0.1307,), std=(0.3081,)),
        vision.HWC2CHW()
    ]
    label_transform = transforms.TypeCast(minigrad.int32)

    dataset = dataset.map(image_transforms, 'image')
    dataset = dataset.map(label_transform, 'label')
    dataset = dataset.batch(batch_size)
    return dataset


# Define model
class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(28*28, 64),
            nn.ReLU(),
            nn.Dense(64, 64),
            nn.ReLU(),
            nn.Dense(64, 10)
        )

    def construct(self, x):
        x = self.flatten(x)
        logits = self.dense_relu_sequential(x)
        return logits


def main():
    minigrad.set_seed(0)
    train_dataset = datapipe(synthetic_mnist(256, seed=0), 64)
    test_dataset = datapipe(synthetic_mnist(128, seed=1), 64)

    model = Network()
    model = auto_mixed_precision(model, 'O2')
    print(model)

    # Instantiate loss function and optimizer
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.SGD(model.trainable_params(), 1e-1)
    loss_scaler = DynamicLossScaler(scale_value=2**16, scale_factor=2, scale_window=50)

    # 1. Define forward function
    def forward_fn(data, label):
        logits = model(data)
        loss = loss_fn(logits, label)
        loss = loss_scaler.scale(loss)
        return loss, logits

    # 2. Get gradient function
    grad_fn = minigrad.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)

    # 3. Define function of one-step training
    def train_step(data, label):
        (loss, _), grads = grad_fn(data, label)
        loss = loss_scaler.unscale(loss)

        is_finite = all_finite(grads)
        if is_finite:
            grads = loss_scaler.unscale(grads)
            optimizer(grads)
        loss_scaler.adjust(is_finite)
        return loss

    losses = []

    def train(model, dataset):
        size = dataset.get_dataset_size()
        model.set_train()
        for batch, (data, label) in enumerate(dataset.create_tuple_iterator()):
            loss = train_step(data, label)
            losses.append(float(loss.asnumpy()))

            if batch % 2 == 0:
                loss, current = loss.asnumpy(), batch
                print(f"loss: {loss:>7f}  [{current:>3d}/{size:>3d}]")

    def test(model, dataset, loss_fn):
        num_batches = dataset.get_dataset_size()
        model.set_train(False)
        total, test_loss, correct = 0, 0, 0
        for data, label in dataset.create_tuple_iterator():
            pred = model(data)
            total += len(data)
            test_loss += loss_fn(pred, label).asnumpy()
            correct += (pred.argmax(1) == label).asnumpy().sum()
        test_loss /= num_batches
        correct /= total
        print(f"Test: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
        return float(correct)

    epochs = 3
    accuracy = []
    for t in range(epochs):
        print(f"Epoch {t+1}\n-------------------------------")
        train(model, train_dataset)
        accuracy.append(test(model, test_dataset, loss_fn))
    print("Done!")
    return {"losses": losses, "accuracy": accuracy,
            "scale_value": float(loss_scaler.scale_value.asnumpy())}


if __name__ == '__main__':
    main()
