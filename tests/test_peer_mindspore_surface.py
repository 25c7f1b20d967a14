"""MindSpore's everyday surface: ``set_context``/``get_context`` (and ``minigrad.context``),
``GRAPH_MODE``/``PYNATIVE_MODE``, ``set_seed``, ``@jit``, ``Tensor.asnumpy()`` and the checkpoint
functions (``save_checkpoint``, ``load_checkpoint``, ``load_param_into_net``) over minigrad's
safetensors checkpoints."""

import json

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


@pytest.fixture
def _restore_context():
    yield
    mg.set_context(mode=mg.PYNATIVE_MODE, device_target="CPU")
    mg.set_default_device("cpu")


def test_context(_restore_context):
    assert (mg.GRAPH_MODE, mg.PYNATIVE_MODE) == (0, 1)
    mg.set_context(mode=mg.GRAPH_MODE, device_target="CPU", save_graphs=False)
    assert mg.get_context("mode") == mg.GRAPH_MODE and mg.get_context("device_target") == "CPU"
    assert mg.get_context("save_graphs") is False and mg.get_default_device() == "cpu"
    from minigrad import context

    context.set_context(mode=context.PYNATIVE_MODE)
    assert context.get_context("mode") == mg.PYNATIVE_MODE
    with pytest.raises(ValueError, match="mode"):
        mg.set_context(mode=2)
    with pytest.raises(ValueError, match="Ascend"):
        mg.set_context(device_target="Ascend")
    with pytest.raises(ValueError, match="never set"):
        mg.get_context("nothing")
    if not mg.cuda.is_available():
        with pytest.raises(RuntimeError, match="no GPU"):
            mg.set_context(device_target="GPU")
        assert mg.get_context("device_target") == "CPU"
    else:
        mg.set_context(device_target="GPU", device_id=0)
        assert mg.zeros(2).device == "cuda:0"


def test_graph_mode_runs_eagerly_with_same_results(_restore_context):
    net = nn.Dense(4, 3) if hasattr(nn, "Dense") else nn.Linear(4, 3)
    x = mg.randn(2, 4)
    eager = net(x).numpy()
    mg.set_context(mode=mg.GRAPH_MODE)
    np.testing.assert_array_equal(net(x).numpy(), eager)


def test_set_seed():
    mg.set_seed(5)
    a = mg.randn(3)
    w = nn.Linear(3, 3).weight.numpy()
    mg.set_seed(5)
    assert mg.equal(a, mg.randn(3)) and np.array_equal(w, nn.Linear(3, 3).weight.numpy())
    assert mg.get_seed() == 5
    with pytest.raises(ValueError, match="seed"):
        mg.set_seed(-1)


def test_jit_runs_eagerly():
    @mg.jit
    def f(x):
        return x * 2 + 1

    @mg.jit(jit_config=None)
    def g(x):
        return x - 1

    x = mg.tensor([1.0, 2.0])
    assert f(x).tolist() == [3.0, 5.0] and g(x).tolist() == [0.0, 1.0]
    assert mg.jit(f) is f and mg.jit.script(f) is f and mg.jit.trace(f, (x,)) is f
    with pytest.raises(TypeError, match="function"):
        mg.jit(3)


def test_asnumpy():
    x = mg.tensor([[1.0, 2.0]])
    assert isinstance(x.asnumpy(), np.ndarray) and x.asnumpy().tolist() == [[1.0, 2.0]]
    assert mg.nn.Parameter(x).asnumpy().shape == (1, 2)


def _net():
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU(), nn.Linear(3, 2))


def test_checkpoint_round_trip(tmp_path):
    net = _net()
    net(mg.randn(8, 4))  # move the running statistics off their initial values
    path = tmp_path / "net"
    mg.save_checkpoint(net, str(path), append_dict={"epoch": 7, "lr": 0.01})
    assert (tmp_path / "net.ckpt").exists() and not path.exists()  # MindSpore adds .ckpt
    params = mg.load_checkpoint(str(tmp_path / "net.ckpt"))
    assert set(params) == set(net.state_dict()) | {"epoch", "lr"}
    assert all(isinstance(p, mg.nn.Parameter) for p in params.values())
    assert params["0.weight"].requires_grad and params["0.weight"].name == "0.weight"
    assert not params["1.running_mean"].requires_grad
    assert params["1.num_batches_tracked"].dtype == mg.int64
    assert int(params["epoch"].item()) == 7
    fresh = _net()
    not_loaded, unused = mg.load_param_into_net(fresh, params)
    assert not_loaded == [] and sorted(unused) == ["epoch", "lr"]
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k].numpy(), v.numpy())
    # the parameters stay the same objects (an optimizer built on them stays attached)
    assert fresh[0].weight is list(fresh.parameters())[0]


def test_checkpoint_options(tmp_path):
    net = _net()
    path = str(tmp_path / "n.ckpt")
    mg.save_checkpoint(net, path, choice_func=lambda name: not name.startswith("3."))
    assert "3.weight" not in mg.load_checkpoint(path)
    mg.save_checkpoint(net, path)
    assert set(mg.load_checkpoint(path, filter_prefix="1.")) == {"0.weight", "0.bias",
                                                                  "3.weight", "3.bias"}
    assert set(mg.load_checkpoint(path, filter_prefix=["1.", "3."])) == {"0.weight", "0.bias"}
    fresh = _net()
    mg.load_checkpoint(path, net=fresh)
    np.testing.assert_array_equal(fresh[3].weight.numpy(), net[3].weight.numpy())
    partial = mg.load_checkpoint(path, choice_func=lambda name: name.startswith("0."))
    other = _net()
    not_loaded, unused = mg.load_param_into_net(other, partial)
    assert "3.weight" in not_loaded and unused == []
    mg.save_checkpoint([{"name": "w", "data": mg.ones(2)}], str(tmp_path / "list"))
    assert mg.load_checkpoint(str(tmp_path / "list.ckpt"))["w"].tolist() == [1.0, 1.0]
    mg.save_checkpoint({"w": mg.zeros(1)}, str(tmp_path / "d"), format="safetensors")
    assert (tmp_path / "d.safetensors").exists()
    wrong = nn.Sequential(nn.Linear(4, 5))
    with pytest.raises(RuntimeError, match="shape"):
        mg.load_param_into_net(wrong, mg.load_checkpoint(path))
    with pytest.raises(NotImplementedError, match="encrypted"):
        mg.save_checkpoint(net, path, enc_key=b"0" * 16)
    with pytest.raises(TypeError, match="save_obj"):
        mg.save_checkpoint(3, path)


def test_checkpoint_file_is_safetensors_without_pickle(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    net = nn.Linear(3, 2)
    path = str(tmp_path / "n.ckpt")
    mg.save_checkpoint(net, path)
    raw = open(path, "rb").read()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert header["__metadata__"]["format"] == "minigrad"
    tensors = safetensors_numpy.load_file(path)
    np.testing.assert_array_equal(tensors["weight"], net.weight.numpy())
    assert b"\x80\x04" not in raw[:2]  # not a pickle stream
