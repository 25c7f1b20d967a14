"""MindSpore's training-loop spellings (compat.mindspore): nn.Cell and Dense, value_and_grad,
ops primitives, SoftmaxCrossEntropyWithLogits, Model with callbacks and metrics; values checked
against hand-computed results (and PyTorch where it has the same function)."""

import os

import numpy as np
import pytest

import minigrad as ms
from minigrad import Parameter, Tensor, nn, ops
from minigrad import dtype as mstype
from minigrad.common.initializer import Normal, initializer
from minigrad.nn.metrics import Accuracy, Loss
from minigrad.train import Model
from minigrad.train.callback import (
    Callback, CheckpointConfig, LossMonitor, ModelCheckpoint, TimeMonitor,
)


def test_every_layer_is_a_cell_and_construct_is_the_forward():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(2, 1, weight_init="ones", bias_init="zeros")

        def construct(self, x):
            return self.fc(x) * 2

    net = Net()
    assert isinstance(nn.ReLU(), nn.Cell) and isinstance(net, nn.Cell)
    assert not isinstance(nn.ReLU(), Net)
    np.testing.assert_allclose(net(ms.tensor([[1.0, 2.0]])).numpy(), [[6.0]])
    assert [n for n, _ in net.cells_and_names()] == ["", "fc"]


def test_dense_mindspore_arguments():
    ms.manual_seed(0)
    d = nn.Dense(3, 2, weight_init=Normal(0.02), has_bias=False, activation="relu")
    assert isinstance(d, nn.Linear) and d.bias is None
    assert abs(float(d.weight.numpy().std()) - 0.02) < 0.02
    w = np.array([[1.0, -1.0, 0.0], [0.5, 0.5, 0.5]], np.float32)
    d = nn.Dense(3, 2, weight_init=Tensor(w), bias_init=1.0, activation=nn.Tanh())
    np.testing.assert_allclose(d(ms.tensor([[1.0, 2.0, 3.0]])).numpy(),
                               np.tanh([[0.0, 4.0]]), rtol=1e-6)
    with pytest.raises(ValueError, match="unknown initializer 'gaussian'"):
        nn.Dense(3, 2, weight_init="gaussian")
    with pytest.raises(ValueError, match="shape"):
        nn.Dense(3, 2, weight_init=np.ones((3, 2)))
    with pytest.raises(ValueError, match="activation"):
        nn.Dense(3, 2, activation="swishy")
    assert initializer("ones", (2, 2), mstype.float16).dtype == ms.float16


def test_parameter_name_and_asnumpy():
    p = Parameter(Tensor(np.ones(2, np.float32)), name="weight")
    assert p.name == "weight" and p.requires_grad
    np.testing.assert_array_equal(p.asnumpy(), [1.0, 1.0])


def test_value_and_grad_positions_weights_and_aux():
    w = Parameter(ms.tensor([2.0, -1.0]), name="w")

    def fn(x, y):
        out = (x * w).sum() + (y * y).sum()
        return out, out * 10

    f = ms.value_and_grad(fn, grad_position=(0, 1), weights=[w], has_aux=True)
    x, y = ms.tensor([3.0, 4.0]), ms.tensor([1.0, 5.0])
    (value, aux), ((dx, dy), (dw,)) = f(x, y)
    assert float(value) == 2 + 26 and float(aux) == 280
    np.testing.assert_allclose(dx.numpy(), [2.0, -1.0])
    np.testing.assert_allclose(dy.numpy(), [2.0, 10.0])
    np.testing.assert_allclose(dw.numpy(), [3.0, 4.0])
    assert x.grad is None and w.grad is None  # returned, not accumulated
    value, grads = ms.value_and_grad(lambda a: (a * w).sum(), None, [w])(x)
    assert isinstance(grads, tuple) and len(grads) == 1
    unused = Parameter(ms.tensor([1.0]))
    _, (g_unused,) = ms.value_and_grad(lambda a: a.sum(), None, [unused])(x)
    np.testing.assert_array_equal(g_unused.numpy(), [0.0])  # MindSpore: zeros, not None
    np.testing.assert_allclose(ms.grad(lambda a: (a ** 2).sum())(x).numpy(), [6.0, 8.0])
    with pytest.raises(ValueError, match="both be None"):
        ms.value_and_grad(fn, None, None)


def test_softmax_cross_entropy_with_logits_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 5)).astype(np.float32)
    labels = np.array([0, 3, 4, 1])
    per_sample = nn.SoftmaxCrossEntropyWithLogits(sparse=True)(Tensor(logits), Tensor(labels))
    want = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(labels),
                                             reduction="none").numpy()
    np.testing.assert_allclose(per_sample.numpy(), want, rtol=1e-6)  # default: "none"
    onehot = np.eye(5, dtype=np.float32)[labels]
    mean = nn.SoftmaxCrossEntropyWithLogits(reduction="mean")(Tensor(logits), Tensor(onehot))
    np.testing.assert_allclose(float(mean), want.mean(), rtol=1e-6)
    with pytest.raises(ValueError, match="sparse=True"):
        nn.SoftmaxCrossEntropyWithLogits()(Tensor(logits), Tensor(labels))


def test_ops_primitives():
    a = ms.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_allclose(ops.MatMul(transpose_b=True)(a, a).numpy(),
                               a.numpy() @ a.numpy().T)
    np.testing.assert_allclose(ops.ReduceMean(keep_dims=True)(a, 1).numpy(), [[1.0], [4.0]])
    np.testing.assert_allclose(ops.ReduceSum()(a).numpy(), 15.0)
    assert ops.Cast()(a, mstype.float16).dtype == ms.float16
    assert ops.Transpose()(a, (1, 0)).shape == (3, 2)
    assert ops.Concat(1)((a, a)).shape == (2, 6)


def _data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    return [(Tensor(x[i:i + 16]), Tensor(y[i:i + 16])) for i in range(0, n, 16)]


def test_model_train_eval_callbacks_and_checkpoints(tmp_path, capsys):
    ms.manual_seed(0)
    net = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 2)])
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    model = Model(net, loss, opt, metrics={"acc": Accuracy(), "loss": Loss()})

    class Record(Callback):
        def __init__(self):
            self.seen = []

        def step_end(self, run_context):
            cb = run_context.original_args()
            self.seen.append((cb.cur_epoch_num, cb.cur_step_num, float(cb.net_outputs)))
            if cb.cur_step_num == 14:
                run_context.request_stop()

    rec = Record()
    ckpt = ModelCheckpoint("net", str(tmp_path), CheckpointConfig(save_checkpoint_steps=4,
                                                                  keep_checkpoint_max=2))
    model.train(5, _data(), callbacks=[rec, ckpt, LossMonitor(4), TimeMonitor()])
    assert [s[:2] for s in rec.seen][:5] == [(1, 1), (1, 2), (1, 3), (1, 4), (2, 5)]
    assert rec.seen[-1][1] == 14  # request_stop ends training after that step
    assert sorted(os.listdir(tmp_path)) == ["net-2_4.ckpt", "net-3_4.ckpt"]
    out = capsys.readouterr().out
    assert "epoch: 1 step: 4, loss is" in out and "per step time" in out
    result = model.eval(_data(64, seed=1))
    assert result["acc"] > 0.7 and result["loss"] < rec.seen[0][2]
    restored = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 2)])
    ms.load_param_into_net(restored, ms.load_checkpoint(str(tmp_path / "net-3_4.ckpt")))
    x = _data()[0][0]
    assert Model(restored, loss, metrics={"acc": Accuracy()}).predict(x).shape == (16, 2)


def test_loss_monitor_stops_on_nan():
    import types

    from minigrad.train import RunContext

    cb = types.SimpleNamespace(cur_epoch_num=1, cur_step_num=3, batch_num=4,
                               net_outputs=ms.tensor(float("nan")))
    with pytest.raises(ValueError, match="epoch: 1 step: 3. Invalid loss nan"):
        LossMonitor().step_end(RunContext(cb))


def test_model_refuses_what_it_would_ignore():
    net = nn.Dense(4, 2)
    with pytest.raises(NotImplementedError, match="eval_network"):
        Model(net, eval_network=net)
    with pytest.raises(TypeError, match="unsupported"):
        Model(net, amp_levle="O2")
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True),
                  nn.Momentum(net.trainable_params(), 0.1, 0.9))
    with pytest.raises(NotImplementedError, match="sink_size"):
        model.train(1, _data(), sink_size=2)
    with pytest.raises(NotImplementedError, match="enc_key"):
        CheckpointConfig(enc_key=b"k")
