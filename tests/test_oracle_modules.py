"""Layers against PyTorch: the same weights (copied through state_dict), the same input, in
training and evaluation mode; outputs, parameter gradients and buffers (BatchNorm's running
statistics) must agree. Skips without PyTorch."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

torch = pytest.importorskip("torch")
TN = torch.nn

# (name, minigrad factory, PyTorch factory, input shape, integer input's high or None)
MODULES = [
    ("Linear", lambda: nn.Linear(4, 3), lambda: TN.Linear(4, 3), (2, 5, 4), None),
    ("Conv2d", lambda: nn.Conv2d(2, 3, 3, stride=2, padding=1),
     lambda: TN.Conv2d(2, 3, 3, stride=2, padding=1), (2, 2, 7, 6), None),
    ("Conv2d-same", lambda: nn.Conv2d(2, 3, 4, padding="same"),
     lambda: TN.Conv2d(2, 3, 4, padding="same"), (1, 2, 5, 5), None),
    ("Conv1d", lambda: nn.Conv1d(2, 4, 3, groups=2), lambda: TN.Conv1d(2, 4, 3, groups=2),
     (3, 2, 8), None),
    ("ConvTranspose2d", lambda: nn.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1),
     lambda: TN.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1), (1, 2, 4, 4), None),
    ("BatchNorm1d", lambda: nn.BatchNorm1d(3), lambda: TN.BatchNorm1d(3), (6, 3), None),
    ("BatchNorm2d", lambda: nn.BatchNorm2d(3), lambda: TN.BatchNorm2d(3), (4, 3, 5, 5), None),
    ("LayerNorm", lambda: nn.LayerNorm(5), lambda: TN.LayerNorm(5), (2, 3, 5), None),
    ("GroupNorm", lambda: nn.GroupNorm(2, 4), lambda: TN.GroupNorm(2, 4), (2, 4, 3, 3), None),
    ("Embedding", lambda: nn.Embedding(7, 3), lambda: TN.Embedding(7, 3), (2, 5), 7),
    ("PReLU", lambda: nn.PReLU(3), lambda: TN.PReLU(3), (2, 3, 4), None),
    ("MaxPool2d", lambda: nn.MaxPool2d(2), lambda: TN.MaxPool2d(2), (1, 2, 6, 6), None),
    ("AvgPool2d", lambda: nn.AvgPool2d(3, 2, 1), lambda: TN.AvgPool2d(3, 2, 1), (1, 2, 7, 7),
     None),
    ("LSTM", lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True),
     lambda: TN.LSTM(3, 4, num_layers=2, batch_first=True), (2, 5, 3), None),
    ("GRU", lambda: nn.GRU(3, 4, bidirectional=True), lambda: TN.GRU(3, 4, bidirectional=True),
     (5, 2, 3), None),
    ("RNN", lambda: nn.RNN(3, 4), lambda: TN.RNN(3, 4), (5, 2, 3), None),
    *[(name, getattr(nn, name), getattr(TN, name), (2, 3, 4), None) for name in (
        "ELU SELU CELU ReLU6 Hardsigmoid Hardswish Hardtanh Mish LogSigmoid").split()],
    ("ELU-alpha", lambda: nn.ELU(0.5), lambda: TN.ELU(0.5), (2, 3, 4), None),
    ("CELU-alpha", lambda: nn.CELU(2.0), lambda: TN.CELU(2.0), (2, 3, 4), None),
    ("Hardtanh-bounds", lambda: nn.Hardtanh(-0.5, 2.0), lambda: TN.Hardtanh(-0.5, 2.0),
     (2, 3, 4), None),
    ("Softmin", lambda: nn.Softmin(dim=1), lambda: TN.Softmin(dim=1), (2, 3, 4), None),
]


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("name,make,make_ref,shape,high", MODULES, ids=[m[0] for m in MODULES])
def test_module_follows_pytorch(name, make, make_ref, shape, high, mode):
    mg.manual_seed(0)
    torch.manual_seed(0)
    ref = make_ref()
    ours = make()
    ours.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    getattr(ours, mode)()
    getattr(ref, mode)()
    rng = np.random.default_rng(3)
    x = (rng.integers(0, high, shape) if high else rng.standard_normal(shape).astype(np.float32))
    xm = mg.tensor(x, requires_grad=high is None)
    xt = torch.tensor(x, requires_grad=high is None)
    ym, yt = _first(ours(xm)), _first(ref(xt))
    np.testing.assert_allclose(ym.numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    cot = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    (ym * mg.tensor(cot)).sum().backward()
    (yt * torch.tensor(cot)).sum().backward()
    if high is None:
        np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    theirs = dict(ref.named_parameters())
    for k, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), theirs[k].grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=k)
    buffers = dict(ref.named_buffers())
    for k, v in ours.state_dict().items():   # running statistics after the step
        if k in buffers and buffers[k].dtype.is_floating_point:
            np.testing.assert_allclose(v.numpy(), buffers[k].numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=k)
