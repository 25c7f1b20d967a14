"""OneFlow's quickstart, then its nn.Graph tutorial's training graph with AMP
(``config.enable_amp(True)`` and ``set_grad_scaler``), with ``oneflow`` renamed ``minigrad``.

Synthetic 28x28 "clothes" (NumPy, fixed seed) in a ``flow.utils.data.TensorDataset`` stand in for
flowvision's FashionMNIST. One eager epoch as the quickstart writes it (``print(f"loss:
{loss:>7f} ...")`` of a Tensor included), then epochs of a ``flow.nn.Graph`` train graph with AMP
and an eval graph. ``main()`` returns the eager and graph per-step losses, the test accuracy
after each epoch and the graph's output dtype.
"""

import numpy as np

import minigrad as flow
import minigrad.nn as nn

BATCH_SIZE = 64
DEVICE = "cuda" if flow.cuda.is_available() else "cpu"
print("Using {} device".format(DEVICE))


def synthetic_fashion(n, seed):
    rng = np.random.default_rng(seed)
    templates = np.random.default_rng(17).random((10, 1, 28, 28))
    labels = rng.integers(0, 10, size=n)
    images = np.clip(templates[labels] + 0.2 * rng.standard_normal((n, 1, 28, 28)), 0, 1)
    return flow.utils.data.TensorDataset(flow.tensor(images, dtype=flow.float32),
                                         flow.tensor(labels, dtype=flow.int64))


class NeuralNetwork(nn.Module):
    def __init__(self):
        super(NeuralNetwork, self).__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28*28, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(iter, model, loss_fn, optimizer, losses):
    size = len(iter.dataset)
    for batch, (x, y) in enumerate(iter):
        x = x.to(DEVICE)
        y = y.to(DEVICE)

        # Compute prediction error
        pred = model(x)
        loss = loss_fn(pred, y)

        # Backpropagation
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        losses.append(loss.numpy().item())
        current = batch * BATCH_SIZE
        if batch % 2 == 0:
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test(iter, model, loss_fn):
    size = len(iter.dataset)
    num_batches = len(iter)
    model.eval()
    test_loss, correct = 0, 0
    with flow.no_grad():
        for x, y in iter:
            x = x.to(DEVICE)
            y = y.to(DEVICE)

            pred = model(x)
            test_loss += loss_fn(pred, y)
            bool_value = (pred.argmax(1).to(dtype=flow.int64) == y)
            correct += float(bool_value.sum().numpy())
    test_loss /= num_batches
    print("test_loss", test_loss, "num_batches ", num_batches)
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}, Avg loss: {test_loss:>8f}")
    return correct


def main():
    flow.manual_seed(0)
    training_data = synthetic_fashion(256, seed=0)
    test_data = synthetic_fashion(128, seed=1)
    train_dataloader = flow.utils.data.DataLoader(training_data, BATCH_SIZE, shuffle=True)
    test_dataloader = flow.utils.data.DataLoader(test_data, BATCH_SIZE, shuffle=False)

    for x, y in train_dataloader:
        print("x.shape:", x.shape)
        print("y.shape:", y.shape)
        break

    model = NeuralNetwork().to(DEVICE)
    print(model)

    loss_fn = nn.CrossEntropyLoss().to(DEVICE)
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1)

    eager_losses, accuracy = [], []
    print("Epoch 1 (eager)\n-------------------------------")
    model.train()
    train(train_dataloader, model, loss_fn, optimizer, eager_losses)
    accuracy.append(test(test_dataloader, model, loss_fn))

    grad_scaler = flow.amp.GradScaler(
        init_scale=2**12,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=1000,
    )

    class NeuralGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.loss_fn = loss_fn
            self.add_optimizer(optimizer)
            self.config.enable_amp(True)
            self.set_grad_scaler(grad_scaler)

        def build(self, x, y):
            y_pred = self.model(x)
            loss = self.loss_fn(y_pred, y)
            loss.backward()
            return loss, y_pred

    class EvalGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.config.enable_amp(True)

        def build(self, x):
            return self.model(x)

    graph_train = NeuralGraph()
    graph_eval = EvalGraph()

    graph_losses, out_dtype = [], None
    for t in range(1, 3):
        print(f"Epoch {t+1} (nn.Graph, AMP)\n-------------------------------")
        model.train()
        for batch, (x, y) in enumerate(train_dataloader):
            x = x.to(DEVICE)
            y = y.to(DEVICE)
            loss, y_pred = graph_train(x, y)
            out_dtype = y_pred.dtype
            graph_losses.append(loss.numpy().item())
            if batch % 2 == 0:
                print(f"loss: {loss:>7f}")
        model.eval()
        correct = 0
        for x, y in test_dataloader:
            pred = graph_eval(x.to(DEVICE))
            correct += float((pred.argmax(1).to(dtype=flow.int64) == y.to(DEVICE)).sum().numpy())
        accuracy.append(correct / len(test_dataloader.dataset))
    print("Done!")
    return {"losses": eager_losses + graph_losses, "eager_losses": eager_losses,
            "graph_losses": graph_losses, "accuracy": accuracy, "graph_dtype": str(out_dtype),
            "scale": graph_train.grad_scaler.get_scale()}


if __name__ == "__main__":
    main()
