"""MegEngine's everyday surface: ``import minigrad.module as M`` (the layers, MegEngine's
BatchNorm momentum, ``freeze``, AvgPool2d's padding modes, ``Dropout(drop_prob=)``,
``M.init.msra_*``), ``minigrad.logger``, ``minigrad.random`` and ``F.matmul(transpose_b=)``;
values are compared with PyTorch (CPU) where it has the same operation."""

import logging

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F
from minigrad import nn

torch = pytest.importorskip("torch")


def test_module_path_and_layers():
    import minigrad.module as M
    from minigrad.module import init

    assert M is mg.module and init is M.init
    assert M.Module is nn.Module and M.Sequential is nn.Sequential and M.ReLU is nn.ReLU
    assert M.MaxPool2d is nn.MaxPool2d
    net = M.Sequential(M.Conv2d(1, 4, 3, padding=1), M.BatchNorm2d(4), M.ReLU(),
                       M.MaxPool2d(2), M.AvgPool2d(2), M.Dropout(drop_prob=0.5))
    assert isinstance(net[0], nn.Conv2d) and isinstance(net[1], nn.BatchNorm2d)
    assert net(mg.randn(2, 1, 8, 8)).shape == (2, 4, 2, 2)
    assert M.Linear(3, 2, bias=False, compute_mode="default").bias is None
    assert M.Dropout().drop_prob == 0.0 and M.Dropout(0.3).p == 0.3
    x = mg.randn(2, 5)
    np.testing.assert_allclose(M.Softmax(axis=0)(x).numpy(), F.softmax(x, 0).numpy())
    np.testing.assert_allclose(M.Softmax()(x).numpy(), F.softmax(x, -1).numpy())
    with pytest.raises(ValueError, match="conv_mode"):
        M.Conv2d(1, 1, 3, conv_mode="convolution")
    with pytest.raises(ValueError, match="compute_mode"):
        M.Linear(1, 1, compute_mode="fast")


def test_batchnorm_takes_megengine_momentum():
    import minigrad.module as M

    bn = M.BatchNorm2d(3, momentum=0.9)
    ref = torch.nn.BatchNorm2d(3, momentum=0.1)  # PyTorch weighs the new batch
    assert bn.momentum == 0.1
    a = np.random.default_rng(0).standard_normal((4, 3, 5, 5)).astype(np.float32)
    for _ in range(2):
        out, tout = bn(mg.tensor(a)), ref(torch.tensor(a))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), ref.running_mean.numpy(), atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), ref.running_var.numpy(), atol=1e-6)
    # running = 0.9 * old + 0.1 * batch, MegEngine's formula, after one step from zeros
    fresh = M.BatchNorm1d(3)
    b = np.random.default_rng(1).standard_normal((8, 3)).astype(np.float32)
    fresh(mg.tensor(b))
    np.testing.assert_allclose(fresh.running_mean.numpy(), 0.1 * b.mean(0), atol=1e-6)


def test_batchnorm_freeze_uses_running_stats_in_training():
    import minigrad.module as M

    bn = M.BatchNorm2d(2, freeze=True).train()
    x = mg.randn(3, 2, 4, 4) * 3 + 1
    out = bn(x)
    assert np.all(bn.running_mean.numpy() == 0) and np.all(bn.running_var.numpy() == 1)
    np.testing.assert_allclose(out.numpy(), x.numpy() / np.sqrt(1 + 1e-5), rtol=1e-5)


@pytest.mark.parametrize("padding", [0, 1])
def test_avgpool_modes(padding):
    import minigrad.module as M

    a = np.random.default_rng(2).standard_normal((2, 3, 6, 6)).astype(np.float32)
    x = mg.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    exclude = M.AvgPool2d(3, 2, padding)(x)
    texclude = torch.nn.AvgPool2d(3, 2, padding, count_include_pad=False)(tx)
    np.testing.assert_allclose(exclude.numpy(), texclude.detach().numpy(), atol=1e-6)
    exclude.sum().backward()
    texclude.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-6)
    include = M.AvgPool2d(3, 2, padding, mode="average")(x)
    np.testing.assert_allclose(include.detach().numpy(), torch.nn.AvgPool2d(3, 2, padding)(
        tx).detach().numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="mode"):
        M.AvgPool2d(2, mode="max")


def test_init_functions():
    from minigrad.module import init

    w = mg.nn.Parameter(mg.zeros(256, 128))
    mg.manual_seed(4)
    init.msra_normal_(w)
    got = w.numpy().copy()
    mg.manual_seed(4)
    nn.init.kaiming_normal_(w)
    np.testing.assert_array_equal(got, w.numpy())
    assert abs(got.std() - np.sqrt(2.0 / 128)) < 0.005
    init.msra_uniform_(w, a=0, mode="fan_out", nonlinearity="relu")
    bound = np.sqrt(2.0) * np.sqrt(3.0 / 256)
    assert np.abs(w.numpy()).max() <= bound and np.abs(w.numpy()).max() > 0.9 * bound
    init.fill_(w, 0.5)
    assert np.all(w.numpy() == 0.5)
    assert init.calculate_fan_in_and_fan_out(mg.zeros(4, 3, 2, 2)) == (12, 16)
    assert init.calculate_correct_fan(mg.zeros(4, 3), "fan_out") == 4
    for name in ("xavier_uniform_", "normal_", "uniform_", "zeros_", "ones_", "calculate_gain"):
        assert getattr(init, name) is getattr(nn.init, name)


def test_logger(capsys):
    log = mg.logger.get_logger("minigrad.test_peer")
    assert log is mg.logger.get_logger("minigrad.test_peer") and not log.propagate
    assert len(log.handlers) == 1 and log.level == logging.INFO
    log.info("hello %d", 7)
    log.debug("hidden")
    err = capsys.readouterr().err
    assert "hello 7" in err and "INFO" in err and "hidden" not in err
    try:
        mg.logger.set_log_level("DEBUG")
        assert log.level == logging.DEBUG
        mg.logger.enable_debug_log()
        assert log.level == logging.DEBUG
    finally:
        mg.logger.set_log_level(logging.INFO)
    with pytest.raises(ValueError, match="unknown level"):
        mg.logger.set_log_level("LOUD")


def test_random_module():
    import minigrad.random as random

    assert random is mg.random
    random.seed(11)
    a = random.normal(1.0, 2.0, size=(3, 4))
    u = random.uniform(-1, 1, size=(5,))
    random.seed(11)
    assert mg.equal(a, random.normal(1.0, 2.0, size=(3, 4)))
    assert mg.equal(u, random.uniform(-1, 1, size=(5,)))
    assert a.dtype == mg.float32 and random.initial_seed() == 11
    assert random.normal().shape == ()
    s = random.seed()  # PyTorch's: a fresh seed, returned
    assert isinstance(s, int) and random.initial_seed() == s
    p = random.permutation(6)
    assert p.dtype == mg.int32 and sorted(p.tolist()) == list(range(6))
    x = mg.arange(10.0).reshape(5, 2)
    rows = random.permutation(x)
    assert sorted(rows[:, 0].tolist()) == x[:, 0].tolist()
    random.shuffle(x)
    assert sorted(x[:, 0].tolist()) == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert (x[:, 1] - x[:, 0]).tolist() == [1.0] * 5  # rows moved whole
    state = random.get_rng_state()
    b = mg.randn(3)
    random.set_rng_state(state)
    assert mg.equal(b, mg.randn(3))


@pytest.mark.parametrize("ta, tb", [(False, True), (True, False), (True, True)])
def test_matmul_transpose_flags(ta, tb):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 4, 3) if ta else (2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 4) if tb else (4, 5)).astype(np.float32)
    x, y = mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)
    out = F.matmul(x, y, transpose_a=ta, transpose_b=tb, compute_mode="default")
    ref = (np.swapaxes(a, -1, -2) if ta else a) @ (b.T if tb else b)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tout = (tx.transpose(-1, -2) if ta else tx) @ (ty.T if tb else ty)
    (out * out).sum().backward()
    (tout * tout).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="unexpected"):
        F.matmul(x, y, transpose=True)
