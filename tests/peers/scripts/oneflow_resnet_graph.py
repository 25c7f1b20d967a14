"""OneFlow-Inc/models Vision/classification/image/resnet50 (graph training), with ``oneflow``
renamed ``minigrad``.

A small ResNet (BasicBlocks) stands in for resnet50 and a synthetic data-loader Module (NumPy,
fixed seed; a Module whose ``forward()`` returns the next ``(image, label)`` batch, as the
OFRecord loader does) stands in for ImageNet. Kept from the models repository: ``make_optimizer``
with the param-group ``clip_grad_max_norm``/``clip_grad_norm_type`` keys, ``CosineDecayLR``
wrapped in ``WarmUpLR``, ``make_grad_scaler``, the ``TrainGraph`` (enable_amp +
set_grad_scaler, allow_fuse_add_to_output, allow_fuse_model_update_ops,
``add_optimizer(optimizer, lr_sch=...)``, ``build()`` reading the data loader and returning loss,
softmax pred and label) and the ``EvalGraph``, with top-1 accuracy from ``pred.argmax``.
``main()`` returns the per-step losses, the learning rates and the eval accuracy per epoch.
"""

import argparse

import numpy as np

import minigrad as flow
import minigrad.nn as nn

DEVICE = "cuda" if flow.cuda.is_available() else "cpu"


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super(BasicBlock, self).__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride, padding=1,
                               bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out = out + identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block=BasicBlock, layers=(1, 1), num_classes=10, width=8):
        super(ResNet, self).__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, 2 * width, layers[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2 * width * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1,
                          stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = self.avgpool(x)
        x = flow.flatten(x, 1)
        return self.fc(x)


class SyntheticDataLoader(flow.nn.Module):
    """Plays the OFRecordDataLoader: ``forward()`` yields the next batch, epoch after epoch."""

    def __init__(self, num_samples, batch_size, seed, num_classes=10):
        super().__init__()
        rng = np.random.default_rng(seed)
        centers = np.random.default_rng(23).standard_normal((num_classes, 3, 1, 1))
        self.labels = rng.integers(0, num_classes, size=num_samples)
        self.images = (centers[self.labels]
                       + rng.standard_normal((num_samples, 3, 16, 16))).astype(np.float32)
        self.batch_size = batch_size
        self.cursor = 0

    def __len__(self):
        return len(self.labels) // self.batch_size

    def forward(self):
        sl = slice(self.cursor, self.cursor + self.batch_size)
        self.cursor = (self.cursor + self.batch_size) % (len(self) * self.batch_size)
        image = flow.tensor(self.images[sl], dtype=flow.float32)
        label = flow.tensor(self.labels[sl], dtype=flow.int32)
        return image, label


def make_grad_scaler():
    return flow.amp.GradScaler(
        init_scale=2 ** 16 * flow.env.get_world_size(), growth_factor=2.0, backoff_factor=0.5,
        growth_interval=2000,
    )


def make_optimizer(args, model):
    param_group = {"params": [p for p in model.parameters() if p is not None]}

    if args.grad_clipping > 0.0:
        assert args.grad_clipping == 1.0, "ONLY support grad_clipping == 1.0"
        param_group["clip_grad_max_norm"] = 1.0
        param_group["clip_grad_norm_type"] = 2.0

    optimizer = flow.optim.SGD(
        [param_group],
        lr=args.learning_rate,
        momentum=args.momentum,
        weight_decay=args.weight_decay,
    )
    return optimizer


def make_lr_scheduler(args, optimizer, batches_per_epoch):
    warmup_batches = batches_per_epoch * args.warmup_epochs
    total_batches = batches_per_epoch * args.num_epochs
    # TODO(zwx): These's no need that decay_batches minus warmup_batches
    decay_batches = total_batches - warmup_batches

    lr_scheduler = flow.optim.lr_scheduler.CosineDecayLR(
        optimizer, decay_steps=decay_batches
    )

    if args.warmup_epochs > 0:
        lr_scheduler = flow.optim.lr_scheduler.WarmUpLR(
            lr_scheduler,
            warmup_factor=0,
            warmup_iters=warmup_batches,
            warmup_method="linear",
        )
    return lr_scheduler


class TrainGraph(flow.nn.Graph):
    def __init__(self, model, cross_entropy, data_loader, optimizer, lr_scheduler=None,
                 use_fp16=True, return_pred_and_label=True):
        super().__init__()

        if use_fp16:
            self.config.enable_amp(True)
            self.set_grad_scaler(make_grad_scaler())

        self.config.allow_fuse_add_to_output(True)
        self.config.allow_fuse_model_update_ops(True)

        self.model = model
        self.cross_entropy = cross_entropy
        self.data_loader = data_loader
        self.add_optimizer(optimizer, lr_sch=lr_scheduler)
        self.return_pred_and_label = return_pred_and_label

    def build(self):
        image, label = self.data_loader()
        image = image.to(DEVICE)
        label = label.to(DEVICE)
        logits = self.model(image)
        loss = self.cross_entropy(logits, label)
        if self.return_pred_and_label:
            pred = logits.softmax()
        else:
            pred = None
            label = None
        loss.backward()
        return loss, pred, label


class EvalGraph(flow.nn.Graph):
    def __init__(self, model, data_loader, use_fp16=True):
        super().__init__()

        if use_fp16:
            self.config.enable_amp(True)

        self.config.allow_fuse_add_to_output(True)

        self.data_loader = data_loader
        self.model = model

    def build(self):
        image, label = self.data_loader()
        image = image.to(DEVICE)
        label = label.to(DEVICE)
        logits = self.model(image)
        pred = logits.softmax()
        return pred, label


def main(argv=()):
    parser = argparse.ArgumentParser("flags for train resnet")
    parser.add_argument("--num-epochs", type=int, default=3)
    parser.add_argument("--warmup-epochs", type=int, default=1)
    parser.add_argument("--lr", "--learning-rate", type=float, default=0.1,
                        dest="learning_rate")
    parser.add_argument("--momentum", type=float, default=0.875)
    parser.add_argument("--wd", "--weight-decay", type=float, default=1.0 / 32768,
                        dest="weight_decay")
    parser.add_argument("--grad-clipping", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--use-fp16", action="store_true", default=True)
    args = parser.parse_args(list(argv))

    flow.manual_seed(0)
    model = ResNet().to(DEVICE)
    cross_entropy = flow.nn.CrossEntropyLoss(reduction="mean").to(DEVICE)
    train_data_loader = SyntheticDataLoader(64, args.batch_size, seed=0)
    val_data_loader = SyntheticDataLoader(32, args.batch_size, seed=1)
    batches_per_epoch = len(train_data_loader)

    optimizer = make_optimizer(args, model)
    lr_scheduler = make_lr_scheduler(args, optimizer, batches_per_epoch)
    train_graph = TrainGraph(model, cross_entropy, train_data_loader, optimizer, lr_scheduler,
                             use_fp16=args.use_fp16)
    eval_graph = EvalGraph(model, val_data_loader, use_fp16=args.use_fp16)

    losses, lrs, accuracy = [], [], []
    for epoch in range(args.num_epochs):
        model.train()
        for i in range(batches_per_epoch):
            loss, pred, label = train_graph()
            losses.append(loss.numpy().item())
            lrs.append(optimizer.param_groups[0]["lr"])
            if i % 2 == 0:
                print(f"epoch {epoch} iter {i} loss {loss.numpy().item():.4f} "
                      f"lr {lrs[-1]:.5f}")

        model.eval()
        correct, total = 0, 0
        for _ in range(len(val_data_loader)):
            pred, label = eval_graph()
            clsidxs = pred.argmax(dim=-1)
            clsidxs = clsidxs.to(flow.int32)
            correct += (clsidxs == label).sum().numpy().item()
            total += label.shape[0]
        accuracy.append(correct / total)
        print(f"epoch {epoch} top1 {accuracy[-1]:.3f}")
    return {"losses": losses, "lr": lrs, "accuracy": accuracy,
            "scale": train_graph.grad_scaler.get_scale()}


if __name__ == "__main__":
    main()
