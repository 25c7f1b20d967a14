"""MegEngine's AMP guide ("使用混合精度加速训练"), as a training script, with ``megengine``
renamed ``minigrad``.

A small ``M.Module`` CNN on synthetic images (NumPy, fixed seed), trained the two ways the guide
shows: the ``@amp.autocast()`` train_step with ``scaler.backward(gm, loss)``, and the manual form
(``gm.backward(loss, dy=mge.tensor(scaler.scale_factor))``, ``scaler.unscale(...)``,
``scaler.update()``); plus the context-manager and ``amp.enabled`` forms for inference.
``main()`` returns the losses of both runs, the output dtypes and the final scale factors.
"""

import numpy as np

import minigrad as mge
import minigrad.functional as F
import minigrad.module as M
from minigrad import amp
from minigrad.autodiff import GradManager
from minigrad.optimizer import SGD


class SmallNet(M.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = M.Conv2d(3, 8, 3, padding=1)
        self.bn1 = M.BatchNorm2d(8)
        self.conv2 = M.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn2 = M.BatchNorm2d(16)
        self.fc = M.Linear(16, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.mean(x, axis=[2, 3])
        return self.fc(x)


def make_batches(n_batches, seed):
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(3).standard_normal((10, 3, 1, 1))
    out = []
    for _ in range(n_batches):
        label = rng.integers(0, 10, size=16)
        image = centers[label] + 0.5 * rng.standard_normal((16, 3, 16, 16))
        out.append((mge.tensor(image, dtype="float32"), mge.tensor(label, dtype="int32")))
    return out


def train_with_scaler(batches, epochs=3):
    net = SmallNet()
    gm = GradManager().attach(net.parameters())
    opt = SGD(net.parameters(), lr=0.05, momentum=0.9)
    scaler = amp.GradScaler()           # gradient scaling with GradScaler

    @amp.autocast()
    def train_step(image, label):
        with gm:
            logits = net(image)
            loss = F.nn.cross_entropy(logits, label)
            scaler.backward(gm, loss)   # GradScaler changes the backward behaviour
        opt.step().clear_grad()
        return loss, logits

    losses = []
    for epoch in range(epochs):
        for image, label in batches:
            loss, logits = train_step(image, label)
            losses.append(loss.item())
    return net, losses, logits.dtype, scaler.scale_factor


def train_manual(batches, epochs=3):
    net = SmallNet()
    gm = GradManager().attach(net.parameters())
    opt = SGD(net.parameters(), lr=0.05, momentum=0.9)
    scaler = amp.GradScaler()

    @amp.autocast()
    def train_step(image, label):
        with gm:
            logits = net(image)
            loss = F.nn.cross_entropy(logits, label)
            gm.backward(loss, dy=mge.tensor(scaler.scale_factor))   # step one
        # custom operations on the gradients can go here
        scaler.unscale(gm.attached_tensors())                       # step two
        scaler.update()                                             # step three
        opt.step().clear_grad()
        return loss

    losses = []
    for epoch in range(epochs):
        for image, label in batches:
            losses.append(train_step(image, label).item())
    return losses, scaler.scale_factor


def main():
    mge.random.seed(0)
    batches = make_batches(4, seed=0)
    net, losses, logits_dtype, scale = train_with_scaler(batches)

    inp = batches[0][0]
    net.eval()
    with amp.autocast():    # the autocast context
        oup = net(inp)
    ctx_dtype = oup.dtype

    amp.enabled = True      # the global switch
    try:
        oup = net(inp)
    finally:
        amp.enabled = False
    switch_dtype = oup.dtype
    plain_dtype = net(inp).dtype

    manual_losses, manual_scale = train_manual(batches)
    print(logits_dtype, ctx_dtype, switch_dtype, plain_dtype, scale, manual_scale)
    return {"losses": losses, "manual_losses": manual_losses,
            "dtypes": [str(d) for d in (logits_dtype, ctx_dtype, switch_dtype, plain_dtype)],
            "scale_factor": scale, "manual_scale_factor": manual_scale}


if __name__ == "__main__":
    main()
