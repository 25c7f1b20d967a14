"""Model zoo and hub: output shapes, parameter counts and names, checkpoints via hub.load."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import hub, models, nn


def test_lenet5_shapes_and_names(device):
    net = models.lenet5().to(device)
    x = mg.tensor(np.random.default_rng(0).standard_normal((2, 1, 32, 32)).astype(np.float32),
                  device=device)
    out = net(x)
    assert out.shape == (2, 10)
    assert isinstance(net.fc3, nn.Linear) and net.fc3.out_features == 10
    assert [n for n, _ in net.named_children()][:2] == ["conv1", "conv2"]
    # 156 + 2416 + 48120 + 10164 + 850 parameters (classic LeNet-5)
    assert sum(p.size for p in net.parameters()) == 61706
    out.sum().backward()
    assert net.conv1.weight.grad.shape == (6, 1, 5, 5)
    with pytest.raises(ValueError, match="32"):
        net(mg.zeros(1, 1, 28, 28, device=device))
    assert models.lenet5(num_classes=3, in_channels=3)(mg.zeros(1, 3, 32, 32)).shape == (1, 3)


def test_mlp_layout():
    net = models.mlp(8, 3, 3)
    assert [type(m).__name__ for m in net] == ["Linear", "ReLU", "Linear", "ReLU", "Linear"]
    assert net[0].weight.shape == (8, 8) and net[4].weight.shape == (3, 8)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    h = x
    for lin in (net[0], net[2]):
        h = np.maximum(h @ lin.weight.numpy().T + lin.bias.numpy(), 0)
    ref = h @ net[4].weight.numpy().T + net[4].bias.numpy()
    np.testing.assert_allclose(net(mg.tensor(x)).numpy(), ref, rtol=1e-5, atol=1e-6)
    assert len(models.mlp(4, 2, 1)) == 1


def test_resnet18_parameter_count_and_names():
    net = models.resnet18()
    assert sum(p.size for p in net.parameters()) == 11_689_512
    names = [n for n, _ in net.named_parameters()]
    assert names[:3] == ["conv1.weight", "bn1.weight", "bn1.bias"]
    assert "layer2.0.downsample.0.weight" in names and "layer1.0.downsample.0.weight" not in names
    assert names[-2:] == ["fc.weight", "fc.bias"]
    sd = net.state_dict()
    assert "layer4.1.bn2.running_var" in sd and "layer4.1.bn2.num_batches_tracked" in sd
    assert len(sd) == 122  # torchvision's resnet18 state dict size


def test_resnet18_small_input_forward_backward():
    net = models.resnet18(num_classes=10, small_input=True)
    assert net.conv1.kernel_size == (3, 3) and isinstance(net.maxpool, nn.Identity)
    x = mg.tensor(np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32))
    out = net(x)
    assert out.shape == (2, 10) and np.isfinite(out.numpy()).all()
    out.sum().backward()
    assert net.layer4[1].conv2.weight.grad is not None
    assert int(net.bn1.num_batches_tracked.item()) == 1
    net.eval()
    small = x[:1, :, :8, :8]  # eval is deterministic (running statistics); keep it cheap
    np.testing.assert_array_equal(net(small).numpy(), net(small).numpy())
    assert int(net.bn1.num_batches_tracked.item()) == 1


def test_hub_load(tmp_path):
    net = hub.load("minigrad/models", "lenet5", num_classes=4)
    assert net.fc3.out_features == 4
    assert isinstance(hub.load("megengine/models:v1", "resnet18", num_classes=2), models.ResNet)
    assert "resnet18" in hub.list_models()
    with pytest.raises(ValueError, match="available: lenet5, mlp, resnet18"):
        hub.load("minigrad/models", "vgg16")
    with pytest.raises(ValueError, match="does not download"):
        hub.load("minigrad/models", "lenet5", pretrained=True)
    with pytest.raises(ValueError, match="unknown repo"):
        hub.load("someone/else", "lenet5")
    with pytest.raises(FileNotFoundError):
        hub.load("minigrad/models", "lenet5", pretrained=str(tmp_path / "nope.npz"))


def test_hub_pretrained_checkpoint(tmp_path):
    serialization = pytest.importorskip("minigrad.serialization")
    mg.manual_seed(3)
    src = models.mlp(4, 2, 2)
    path = str(tmp_path / "mlp.safetensors")
    serialization.save(src.state_dict(), path)
    mg.manual_seed(4)
    net = hub.load("minigrad/models", "mlp", pretrained=path, in_size=4, out_size=2,
                   num_layers=2)
    x = mg.ones(1, 4)
    np.testing.assert_array_equal(net(x).numpy(), src(x).numpy())

