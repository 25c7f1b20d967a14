"""MegEngine/Models official/vision/classification/resnet/train.py (one worker), with
``megengine`` renamed ``minigrad``.

The Models script imports its network from the repository's ``model.py``; a small ResNet of the
same shape (``M.Module`` BasicBlocks) stands in, and synthetic HWC images (NumPy, fixed seed) in
an ArrayDataset stand in for ImageNet. Kept from train.py: the GradManager attach (allreduce
callback only with several workers), ``train_step``/``valid_step`` closures with
``F.nn.cross_entropy`` and ``F.topk_accuracy``, ``optimizer.step().clear_grad()``, the
``Infinite(RandomSampler(drop_last=True))`` train queue with ``next()``, the cosine
``adjust_learning_rate`` writing ``param_group["lr"]``, and AverageMeter logging. ``main()``
returns the per-step losses, top-1 accuracies and learning rates.
"""

import argparse
import math
import time

import numpy as np

import minigrad
import minigrad.autodiff as autodiff
import minigrad.data as data
import minigrad.data.transform as T
import minigrad.distributed as dist
import minigrad.functional as F
import minigrad.module as M
import minigrad.optimizer as optim


class BasicBlock(M.Module):
    def __init__(self, in_channels, channels, stride=1):
        super().__init__()
        self.conv1 = M.Conv2d(in_channels, channels, 3, stride, padding=1, bias=False)
        self.bn1 = M.BatchNorm2d(channels)
        self.conv2 = M.Conv2d(channels, channels, 3, 1, padding=1, bias=False)
        self.bn2 = M.BatchNorm2d(channels)
        self.downsample = (
            M.Identity()
            if in_channels == channels and stride == 1
            else M.Sequential(
                M.Conv2d(in_channels, channels, 1, stride, bias=False),
                M.BatchNorm2d(channels),
            )
        )

    def forward(self, x):
        identity = x
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        identity = self.downsample(identity)
        x = F.relu(x + identity)
        return x


class ResNet(M.Module):
    def __init__(self, num_classes=10, width=8):
        super().__init__()
        self.conv1 = M.Conv2d(3, width, 3, 1, padding=1, bias=False)
        self.bn1 = M.BatchNorm2d(width)
        self.layer1 = BasicBlock(width, width)
        self.layer2 = BasicBlock(width, 2 * width, stride=2)
        self.fc = M.Linear(2 * width, num_classes)

        for m in self.modules():
            if isinstance(m, M.Conv2d):
                M.init.msra_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, M.BatchNorm2d):
                M.init.ones_(m.weight)
                M.init.zeros_(m.bias)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = F.avg_pool2d(x, 16)
        x = F.flatten(x, 1)
        return self.fc(x)


class AverageMeter:
    """Computes and stores the average and current value"""

    def __init__(self, name, fmt=":.3f"):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = "{name} {val" + self.fmt + "} ({avg" + self.fmt + "})"
        return fmtstr.format(**self.__dict__)


def synthetic_imagenet(n, seed, num_classes=10):
    rng = np.random.default_rng(seed)
    colors = np.random.default_rng(5).uniform(40, 215, size=(num_classes, 1, 1, 3))
    labels = rng.integers(0, num_classes, size=n).astype(np.int32)
    images = np.clip(colors[labels] + 30 * rng.standard_normal((n, 32, 32, 3)), 0, 255)
    return images.astype(np.uint8), labels


def build_dataset(args):
    train_dataset = data.dataset.ArrayDataset(*synthetic_imagenet(64, seed=0))
    train_sampler = data.Infinite(
        data.RandomSampler(train_dataset, batch_size=args.batch_size, drop_last=True)
    )
    train_dataloader = data.DataLoader(
        train_dataset,
        sampler=train_sampler,
        transform=T.Compose(
            [  # Baseline Augmentation for small models
                T.RandomHorizontalFlip(),
                T.Normalize(
                    mean=[103.530, 116.280, 123.675], std=[57.375, 57.120, 58.395]
                ),  # BGR
                T.ToMode("CHW"),
            ]
        ),
        num_workers=args.workers,
    )
    valid_dataset = data.dataset.ArrayDataset(*synthetic_imagenet(32, seed=1))
    valid_sampler = data.SequentialSampler(
        valid_dataset, batch_size=16, drop_last=False
    )
    valid_dataloader = data.DataLoader(
        valid_dataset,
        sampler=valid_sampler,
        transform=T.Compose(
            [
                T.Normalize(
                    mean=[103.530, 116.280, 123.675], std=[57.375, 57.120, 58.395]
                ),  # BGR
                T.ToMode("CHW"),
            ]
        ),
        num_workers=args.workers,
    )
    return train_dataloader, valid_dataloader


def worker(args):
    # pylint: disable=too-many-statements
    rank = dist.get_rank()
    world_size = dist.get_world_size()

    # build model
    model = ResNet(num_classes=10)

    # Sync parameters and buffers
    if dist.get_world_size() > 1:
        dist.bcast_list_(model.parameters())
        dist.bcast_list_(model.buffers())

    # Autodiff gradient manager
    gm = autodiff.GradManager().attach(
        model.parameters(),
        callbacks=dist.make_allreduce_cb("mean") if world_size > 1 else None,
    )

    # Optimizer
    params_wd = []
    params_nwd = []
    for n, p in model.named_parameters():
        if n.find("weight") >= 0 and len(p.shape) > 1:
            params_wd.append(p)
        else:
            params_nwd.append(p)
    opt = optim.SGD(
        [
            {"params": params_wd},
            {"params": params_nwd, "weight_decay": 0},
        ],
        lr=args.lr * world_size,
        momentum=args.momentum,
        weight_decay=args.weight_decay,
    )

    # train and valid func
    def train_step(image, label):
        with gm:
            logits = model(image)
            loss = F.nn.cross_entropy(logits, label)
            acc1, acc5 = F.topk_accuracy(logits, label, topk=(1, 5))
            gm.backward(loss)
            opt.step().clear_grad()
        return loss, acc1, acc5

    def valid_step(image, label):
        logits = model(image)
        loss = F.nn.cross_entropy(logits, label)
        acc1, acc5 = F.topk_accuracy(logits, label, topk=(1, 5))
        # calculate mean values
        if world_size > 1:
            loss = F.distributed.all_reduce_sum(loss) / world_size
            acc1 = F.distributed.all_reduce_sum(acc1) / world_size
            acc5 = F.distributed.all_reduce_sum(acc5) / world_size
        return loss, acc1, acc5

    # build dataset
    train_dataloader, valid_dataloader = build_dataset(args)
    train_queue = iter(train_dataloader)
    steps_per_epoch = 64 // (world_size * args.batch_size)
    total_steps = steps_per_epoch * args.epochs

    # adjust learning rate by cosine annealing
    def adjust_learning_rate(step):
        lr = args.lr * 0.5 * (1 + math.cos(math.pi * step / total_steps))
        for param_group in opt.param_groups:
            param_group["lr"] = lr
        return lr

    history = {"losses": [], "acc1": [], "lr": []}

    def valid(func, data_queue):
        objs = AverageMeter("Loss")
        top1 = AverageMeter("Acc@1")
        top5 = AverageMeter("Acc@5")
        clck = AverageMeter("Time")

        t = time.time()
        for step, (image, label) in enumerate(data_queue):
            image = minigrad.tensor(image, dtype="float32")
            label = minigrad.tensor(label, dtype="int32")

            n = image.shape[0]

            loss, acc1, acc5 = func(image, label)

            objs.update(loss.item(), n)
            top1.update(100 * acc1.item(), n)
            top5.update(100 * acc5.item(), n)
            clck.update(time.time() - t, n)
            t = time.time()

            if step % args.print_freq == 0 and dist.get_rank() == 0:
                print("Step {}, {}, {}, {}, {}".format(step, objs, top1, top5, clck))

        return objs.avg, top1.avg, top5.avg

    # start training
    objs = AverageMeter("Loss")
    clck = AverageMeter("Time")

    for step in range(0, total_steps):
        # Linear learning rate decay
        lr = adjust_learning_rate(step)

        t = time.time()

        image, label = next(train_queue)
        image = minigrad.tensor(image, dtype="float32")
        label = minigrad.tensor(label, dtype="int32")

        loss, acc1, _ = train_step(image, label)

        objs.update(loss.item())
        history["losses"].append(loss.item())
        history["acc1"].append(acc1.item())
        history["lr"].append(lr)

        clck.update(time.time() - t)
        if step % args.print_freq == 0 and rank == 0:
            print(
                "Epoch {} Step {}, LR {:.4f}, {} {}".format(
                    step // steps_per_epoch, step, lr, objs, clck,
                )
            )
            objs.reset()

        if (step + 1) % steps_per_epoch == 0:
            model.eval()
            _, valid_acc1, valid_acc5 = valid(valid_step, valid_dataloader)
            model.train()
            print(
                "Epoch {} Test Acc@1 {:.3f}, Acc@5 {:.3f}".format(
                    (step + 1) // steps_per_epoch, valid_acc1, valid_acc5,
                )
            )
            history.setdefault("valid_acc1", []).append(valid_acc1)
    return history


def main(argv=()):
    parser = argparse.ArgumentParser(description="MegEngine ImageNet Training")
    parser.add_argument("--epochs", default=3, type=int)
    parser.add_argument("-b", "--batch-size", metavar="SIZE", default=16, type=int)
    parser.add_argument("--lr", metavar="LR", default=0.05, type=float)
    parser.add_argument("--momentum", metavar="M", default=0.9, type=float)
    parser.add_argument("--weight-decay", metavar="WD", default=1e-4, type=float)
    parser.add_argument("-j", "--workers", default=0, type=int)
    parser.add_argument("-p", "--print-freq", metavar="N", default=2, type=int)
    args = parser.parse_args(list(argv))

    minigrad.random.seed(0)
    return worker(args)


if __name__ == "__main__":
    main()
