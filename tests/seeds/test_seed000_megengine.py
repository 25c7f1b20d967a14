"""Seed 000 (MegEngine AMP guide): ``test_guide_blocks_verbatim`` runs all five code samples in
order exactly as written, with ``megengine`` -> ``minigrad`` (resnet18 from minigrad's hub, at
the guide's (1, 3, 224, 224)). The other tests repeat each sample with resnet18 at a small input
(2, 3, 32, 32), over several steps, to assert the guide's claims in seconds.

The guide's claims asserted here: under autocast the network output is float16 (context
manager, decorator, and the ``amp.enabled`` switch); ``scaler.backward(gm, loss)`` trains
(the loss falls), a skipped step changes no parameter; the "manual" form (``gm.backward`` with
``dy=scale_factor``, ``unscale``, ``update``) is equivalent.

The training samples build resnet18 with ``small_input=True`` (the CIFAR stem): with the
ImageNet stem a 32x32 image reaches layer4 at 1x1, where BatchNorm over a batch of 2 amplifies
gradients ~2000x and every fp16 step overflows for real (not an AMP bug, just a bad test model).
"""

import numpy as np
import pytest

import minigrad as mge
from minigrad import amp
from minigrad.hub import load

SHAPE = (2, 3, 32, 32)


@pytest.fixture(scope="module")
def net():
    mge.manual_seed(0)
    return load("megengine/models", "resnet18", pretrained=False)


@pytest.fixture
def inp():
    return mge.tensor(np.random.default_rng(0).normal(size=SHAPE), dtype="float32")


def test_autocast_context_manager(net, inp):
    with amp.autocast():    # the autocast context
        oup = net(inp)
    print(oup.dtype)
    assert oup.dtype == mge.float16 and oup.shape == (2, 1000)
    assert np.all(np.isfinite(oup.numpy()))
    for p in net.parameters():   # parameters stay float32 (autocast casts per op)
        assert p.dtype == mge.float32


def test_autocast_decorator(net, inp):
    @amp.autocast()
    def train_func(inp):    # the autocast decorator
        oup = net(inp)
        return oup

    oup = train_func(inp)
    print(oup.dtype)
    assert oup.dtype == mge.float16
    assert net(inp).dtype == mge.float32   # only inside the decorated function


def test_global_switch(net, inp):
    amp.enabled = True
    try:
        oup = net(inp)
    finally:
        amp.enabled = False
    print(oup.dtype)
    assert oup.dtype == mge.float16
    assert net(inp).dtype == mge.float32


def _snapshot(net):
    return [p.numpy().copy() for p in net.parameters()]


def _check_step(net, before, skipped):
    after = _snapshot(net)
    changed = [not np.array_equal(a, b) for a, b in zip(before, after)]
    if skipped:
        assert not any(changed), "a skipped step must leave every parameter unchanged"
    else:
        assert any(changed)


def test_grad_scaler_training():
    import minigrad.functional as F
    from minigrad.autodiff import GradManager
    from minigrad.optimizer import SGD

    mge.manual_seed(1)
    net = load("megengine/models", "resnet18", pretrained=False, num_classes=10,
               small_input=True)
    gm = GradManager().attach(net.parameters())
    opt = SGD(net.parameters(), lr=0.01)
    scaler = amp.GradScaler()           # gradient scaling with GradScaler

    image = mge.tensor(np.random.default_rng(1).normal(size=SHAPE), dtype="float32")
    label = mge.tensor(np.zeros(2), dtype="int32")

    @amp.autocast()
    def train_step(image, label):
        with gm:
            logits = net(image)
            loss = F.nn.cross_entropy(logits, label)
            scaler.backward(gm, loss)   # GradScaler changes the backward behaviour
        opt.step().clear_grad()
        return loss

    losses = []
    for _ in range(3):
        before = _snapshot(net)
        loss = train_step(image, label)
        assert loss.dtype == mge.float32
        _check_step(net, before, scaler.last_step_skipped)
        if not scaler.last_step_skipped:
            losses.append(loss.item())
    assert len(losses) >= 2 and losses[-1] < losses[0]
    assert scaler.scale_factor == 2.0 ** 16 / 2 ** scaler.skipped_steps


def test_grad_scaler_manual_mode():
    import minigrad.functional as F
    from minigrad.autodiff import GradManager
    from minigrad.optimizer import SGD

    mge.manual_seed(2)
    net = load("megengine/models", "resnet18", pretrained=False, num_classes=10,
               small_input=True)
    gm = GradManager().attach(net.parameters())
    opt = SGD(net.parameters(), lr=0.01)
    scaler = amp.GradScaler(init_scale=2.0 ** 4)
    image = mge.tensor(np.random.default_rng(2).normal(size=SHAPE), dtype="float32")
    label = mge.tensor(np.zeros(2), dtype="int32")

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
    for _ in range(2):
        before = _snapshot(net)
        losses.append(train_step(image, label).item())
        _check_step(net, before, scaler.last_step_skipped)
    assert scaler.skipped_steps == 0 and losses[-1] < losses[0]


def test_guide_blocks_verbatim(capsys):
    """All five blocks of the guide in order, as written (``megengine`` -> ``minigrad``): the
    ImageNet resnet18 at (1, 3, 224, 224), one training step in each gradient-scaling form."""
    try:
        # ---------------------------------------------------------------- block 1
        import numpy as np
        import minigrad as mge
        from minigrad import amp
        from minigrad.hub import load
        net = load("megengine/models", "resnet18", pretrained=False)
        inp = mge.tensor(np.random.normal(size=(1, 3, 224, 224)), dtype="float32")

        with amp.autocast():    # 使用 autocast context 接口
            oup = net(inp)
        print(oup.dtype)

        # ---------------------------------------------------------------- block 2
        @amp.autocast()
        def train_func(inp):    # 使用 autocast 装饰器
            oup = net(inp)
            return oup

        oup = train_func(inp)
        print(oup.dtype)

        # ---------------------------------------------------------------- block 3
        amp.enabled = True
        oup = net(inp)
        amp.enabled = False
        print(oup.dtype)

        # ---------------------------------------------------------------- block 4
        import minigrad.functional as F
        from minigrad.autodiff import GradManager
        from minigrad.optimizer import SGD

        gm = GradManager().attach(net.parameters())
        opt = SGD(net.parameters(), lr=0.01)
        scaler = amp.GradScaler()           # 使用 GradScaler 进行梯度缩放

        image = mge.tensor(np.random.normal(size=(1, 3, 224, 224)), dtype="float32")
        label = mge.tensor(np.zeros(1), dtype="int32")

        @amp.autocast()
        def train_step(image, label):
            with gm:
                logits = net(image)
                loss = F.nn.cross_entropy(logits, label)
                scaler.backward(gm, loss)   # 通过 GradScaler 修改反传行为
            opt.step().clear_grad()
            return loss

        before = _snapshot(net)
        train_step(image, label)
        _check_step(net, before, scaler.last_step_skipped)

        # ---------------------------------------------------------------- block 5
        @amp.autocast()
        def train_step(image, label):
            with gm:
                logits = net(image)
                loss = F.nn.cross_entropy(logits, label)
                gm.backward(loss, dy=mge.tensor(scaler.scale_factor))   # 对应步骤一
            # 这里可以插入对梯度的自定义操作
            scaler.unscale(gm.attached_tensors())                       # 对应步骤二
            scaler.update()                                             # 对应步骤三
            opt.step().clear_grad()
            return loss

        before = _snapshot(net)
        train_step(image, label)
        _check_step(net, before, scaler.last_step_skipped)
    finally:
        amp.enabled = False
    assert capsys.readouterr().out.split() == ["float16"] * 3
    assert scaler.total_steps == 2 and oup.shape == (1, 1000)
