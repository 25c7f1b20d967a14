"""MegEngine's MNIST tutorial (LeNet with GradManager), with ``megengine`` renamed ``minigrad``.

Synthetic 28x28x1 uint8 digits (NumPy, fixed seed) in an ArrayDataset stand in for
``data.dataset.MNIST``; the pipeline is the tutorial's: RandomSampler/SequentialSampler with
batch_size, DataLoader with ``T.Compose([T.Normalize(...), T.ToMode("CHW")])``, ``M.Module``
LeNet, ``autodiff.GradManager().attach(...)``, ``optim.SGD(momentum, weight_decay)`` and
``optimizer.step().clear_grad()``. ``main()`` returns the per-step losses and the accuracies.
"""

import numpy as np

import minigrad
import minigrad.autodiff as autodiff
import minigrad.data as data
import minigrad.data.transform as T
import minigrad.functional as F
import minigrad.module as M
import minigrad.optimizer as optim


def synthetic_mnist(n, seed):
    rng = np.random.default_rng(seed)
    templates = np.zeros((10, 28, 28, 1))
    for k in range(10):  # one bright stroke per "digit", at its own place
        r, c = divmod(k, 5)
        templates[k, 4 + 10 * r:12 + 10 * r, 1 + 5 * c:6 + 5 * c] = 1.0
    labels = rng.integers(0, 10, size=n).astype(np.int32)
    images = np.clip(templates[labels] + 0.25 * rng.standard_normal((n, 28, 28, 1)), 0, 1)
    return (images * 255).astype(np.uint8), labels


train_dataset = data.dataset.ArrayDataset(*synthetic_mnist(128, seed=0))
test_dataset = data.dataset.ArrayDataset(*synthetic_mnist(64, seed=1))

batch_size = 32
train_sampler = data.RandomSampler(train_dataset, batch_size=batch_size)
test_sampler = data.SequentialSampler(test_dataset, batch_size=batch_size)

transform = T.Compose([
    T.Normalize(0.1307 * 255, 0.3081 * 255),
    T.ToMode("CHW"),
])

train_dataloader = data.DataLoader(train_dataset, train_sampler, transform)
test_dataloader = data.DataLoader(test_dataset, test_sampler, transform)


class LeNet(M.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = M.Conv2d(1, 6, 5)
        self.conv2 = M.Conv2d(6, 16, 5)
        self.fc1 = M.Linear(16 * 4 * 4, 120)
        self.fc2 = M.Linear(120, 84)
        self.classifier = M.Linear(84, 10)

        self.relu = M.ReLU()
        self.pool = M.MaxPool2d(2, 2)

    def forward(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = F.flatten(x, 1)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        x = self.classifier(x)
        return x


def main():
    minigrad.random.seed(0)
    model = LeNet()

    gm = autodiff.GradManager().attach(model.parameters())
    optimizer = optim.SGD(
        model.parameters(),
        lr=0.05,
        momentum=0.9,
        weight_decay=5e-4,
    )

    nums_epoch = 3
    losses, train_acc, test_acc = [], [], []
    for epoch in range(nums_epoch):
        training_loss = 0
        nums_train_correct, nums_train_example = 0, 0
        nums_val_correct, nums_val_example = 0, 0

        model.train()
        for step, (image, label) in enumerate(train_dataloader):
            image = minigrad.Tensor(image)
            label = minigrad.Tensor(label)

            with gm:
                logits = model(image)
                loss = F.nn.cross_entropy(logits, label)
                gm.backward(loss)
                optimizer.step().clear_grad()

            training_loss += loss.item() * len(image)
            losses.append(loss.item())

            pred = F.argmax(logits, axis=1)
            nums_train_correct += (pred == label).sum().item()
            nums_train_example += len(image)

        training_acc = nums_train_correct / nums_train_example
        training_loss /= nums_train_example

        model.eval()
        for image, label in test_dataloader:
            image = minigrad.Tensor(image)
            label = minigrad.Tensor(label)
            pred = F.argmax(model(image), axis=1)

            nums_val_correct += (pred == label).sum().item()
            nums_val_example += len(image)

        val_acc = nums_val_correct / nums_val_example
        train_acc.append(training_acc)
        test_acc.append(val_acc)

        print(f"Epoch = {epoch}, "
              f"train_loss = {training_loss:.3f}, "
              f"train_acc = {training_acc:.3f}, "
              f"val_acc = {val_acc:.3f}")
    return {"losses": losses, "train_acc": train_acc, "accuracy": test_acc}


if __name__ == "__main__":
    main()
