"""PyTorch's "Quickstart" tutorial, with ``torch`` renamed ``minigrad``.

Synthetic 28x28 "clothes" (NumPy, fixed seed) in a TensorDataset stand in for FashionMNIST; the
rest is the tutorial's: DataLoader(batch_size=64), NeuralNetwork with nn.Flatten and a
linear_relu_stack, CrossEntropyLoss, SGD(lr=1e-3), train()/test(), saving and loading the
state_dict, and predicting one sample. ``main()`` returns the per-step losses and each epoch's
test accuracy and average loss.
"""

import os
import tempfile

import numpy as np

import minigrad
from minigrad import nn
from minigrad.utils.data import DataLoader, TensorDataset


def synthetic_fashion(n, seed):
    rng = np.random.default_rng(seed)
    templates = np.random.default_rng(7).random((10, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, size=n)
    images = np.clip(templates[labels] + 0.2 * rng.standard_normal((n, 1, 28, 28)), 0, 1)
    return TensorDataset(minigrad.tensor(images.astype(np.float32)), minigrad.tensor(labels))


training_data = synthetic_fashion(256, seed=0)
test_data = synthetic_fashion(128, seed=1)

batch_size = 64

# Get cpu, gpu or mps device for training.
device = (
    "cuda"
    if minigrad.cuda.is_available()
    else "mps"
    if minigrad.backends.mps.is_available()
    else "cpu"
)
print(f"Using {device} device")


# Define model
class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28*28, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 10)
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(dataloader, model, loss_fn, optimizer, losses):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)

        # Compute prediction error
        pred = model(X)
        loss = loss_fn(pred, y)

        # Backpropagation
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        losses.append(loss.item())
        if batch % 2 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with minigrad.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(minigrad.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return correct, test_loss


def main():
    minigrad.manual_seed(0)
    # Create data loaders.
    train_dataloader = DataLoader(training_data, batch_size=batch_size)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)

    for X, y in test_dataloader:
        print(f"Shape of X [N, C, H, W]: {X.shape}")
        print(f"Shape of y: {y.shape} {y.dtype}")
        break

    model = NeuralNetwork().to(device)
    print(model)

    loss_fn = nn.CrossEntropyLoss()
    optimizer = minigrad.optim.SGD(model.parameters(), lr=2e-1)

    epochs = 3
    losses, results = [], []
    for t in range(epochs):
        print(f"Epoch {t+1}\n-------------------------------")
        train(train_dataloader, model, loss_fn, optimizer, losses)
        results.append(test(test_dataloader, model, loss_fn))
    print("Done!")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pth")
        minigrad.save(model.state_dict(), path)
        print("Saved PyTorch Model State to model.pth")

        model = NeuralNetwork().to(device)
        model.load_state_dict(minigrad.load(path, weights_only=True))

    classes = [
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
    ]

    model.eval()
    x, y = test_data[0][0], test_data[0][1]
    with minigrad.no_grad():
        x = x.to(device)
        pred = model(x)
        predicted, actual = classes[pred[0].argmax(0)], classes[y]
        print(f'Predicted: "{predicted}", Actual: "{actual}"')
    return {"losses": losses, "accuracy": [c for c, _ in results],
            "test_loss": [v for _, v in results], "predicted": predicted, "actual": actual}


if __name__ == '__main__':
    main()
