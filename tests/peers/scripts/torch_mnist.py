"""pytorch/examples mnist/main.py, as its users write it, with ``torch`` renamed ``minigrad``.

Synthetic 28x28 digits (NumPy, fixed seed) stand in for torchvision's MNIST; two epochs of a few
batches. ``main()`` returns the per-step training losses and the test accuracy of each epoch.
"""

import argparse

import numpy as np

import minigrad
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim
from minigrad.optim.lr_scheduler import StepLR
from minigrad.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(2304, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = minigrad.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch, losses):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
            if args.dry_run:
                break


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with minigrad.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return correct / len(test_loader.dataset)


def synthetic_mnist(n, seed):
    """Ten 'digits' (a bright 8x8 block at a place of its own) plus noise, normalized like
    MNIST's (0.1307, 0.3081)."""
    rng = np.random.default_rng(seed)
    templates = np.zeros((10, 1, 28, 28), np.float32)
    for k in range(10):
        r, c = divmod(k, 4)
        templates[k, 0, 2 + 9 * r:10 + 9 * r, 2 + 6 * c:10 + 6 * c] = 1.0
    labels = rng.integers(0, 10, size=n)
    images = templates[labels] + 0.3 * rng.standard_normal((n, 1, 28, 28)).astype(np.float32)
    images = (np.clip(images, 0, 1) - 0.1307) / 0.3081
    return minigrad.from_numpy(images.astype(np.float32)), minigrad.from_numpy(labels)


def main(argv=()):
    # Training settings
    parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
    parser.add_argument('--batch-size', type=int, default=16, metavar='N',
                        help='input batch size for training (default: 16)')
    parser.add_argument('--test-batch-size', type=int, default=32, metavar='N',
                        help='input batch size for testing (default: 32)')
    parser.add_argument('--epochs', type=int, default=2, metavar='N',
                        help='number of epochs to train (default: 2)')
    parser.add_argument('--lr', type=float, default=1.0, metavar='LR',
                        help='learning rate (default: 1.0)')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M',
                        help='Learning rate step gamma (default: 0.7)')
    parser.add_argument('--no-accel', action='store_true',
                        help='disables accelerator')
    parser.add_argument('--dry-run', action='store_true',
                        help='quickly check a single pass')
    parser.add_argument('--seed', type=int, default=1, metavar='S',
                        help='random seed (default: 1)')
    parser.add_argument('--log-interval', type=int, default=2, metavar='N',
                        help='how many batches to wait before logging training status')
    parser.add_argument('--save-model', action='store_true',
                        help='For Saving the current Model')
    args = parser.parse_args(list(argv))

    use_accel = not args.no_accel and minigrad.cuda.is_available()

    minigrad.manual_seed(args.seed)

    if use_accel:
        device = minigrad.device("cuda")
    else:
        device = minigrad.device("cpu")

    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_accel:
        accel_kwargs = {'num_workers': 1,
                        'pin_memory': True,
                        'shuffle': True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)
    else:
        train_kwargs['shuffle'] = True

    dataset1 = TensorDataset(*synthetic_mnist(96, seed=0))
    dataset2 = TensorDataset(*synthetic_mnist(64, seed=1))
    train_loader = DataLoader(dataset1, **train_kwargs)
    test_loader = DataLoader(dataset2, **test_kwargs)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    losses, accuracies = [], []
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch, losses)
        accuracies.append(test(model, device, test_loader))
        scheduler.step()

    if args.save_model:
        minigrad.save(model.state_dict(), "mnist_cnn.pt")
    return {"losses": losses, "accuracy": accuracies}


if __name__ == '__main__':
    main()
