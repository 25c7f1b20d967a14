"""The peers' official examples and tutorials, each written as that peer's user writes it with only
the framework name changed, run end to end (``tests/peers/scripts/<peer>_<example>.py``).

Every script has a ``main()`` that trains on small synthetic NumPy data from a fixed seed and
returns its per-step losses (and accuracies, scales, ...). The tests below run it with minigrad
and assert on what it returns (finite losses that fall, accuracies, dtypes, values). The PyTorch
scripts also run under PyTorch when it is installed: the script's text with ``minigrad`` replaced
by ``torch``, and the two loss sequences must agree within 1% (float32) or 2% (the float16
autocast example).

The scripts stay untouched; to make the two runs comparable the harness patches, during each
run and in both frameworks alike (``_comparable``):

* **Same initial weights.** PyTorch runs first. Each time an optimizer is built
  (``torch.optim.Optimizer.__init__``, wrapped) its parameters are recorded in parameter-group
  order; when minigrad builds its n-th optimizer (``minigrad.optimizer.Optimizer.__init__``,
  wrapped) the n-th record is copied into its parameters in the same order (shapes are checked, so
  an order mismatch fails loudly). A script without an optimizer (word_language_model updates
  ``p.data`` by hand) syncs instead at its first ``Module.train()`` call, by parameter name.
* **No dropout randomness.** ``nn.Dropout*.forward`` is the identity, ``F.dropout`` returns its
  input, and modules that keep a float ``dropout`` (LSTM/GRU/RNN between layers,
  MultiheadAttention) get ``dropout = 0.0`` after ``__init__``.
* **No shuffle-order randomness.** ``DataLoader(shuffle=True)`` is built with ``shuffle=False``
  and ``RandomSampler`` iterates ``0..n-1`` (PyTorch's and minigrad's).
* **Same random draws** (only where a script draws inside its loop, DCGAN's noise): calls of
  ``randn`` made *from the script file* draw from one NumPy generator with the same seed in both
  runs; framework-internal calls are left alone.

A script that cannot run yet because minigrad lacks a name (or behaves differently) is marked
``xfail(strict=True)`` with the exact reason, so it turns into an XPASS failure the day the name
lands and the mark can go.
"""

import contextlib
import functools
import math
import pathlib
import sys
import types

import numpy as np
import pytest

import minigrad

SCRIPTS = pathlib.Path(__file__).resolve().parent / "scripts"

# What keeps each script from running today (first error met, exact name); None: it runs.
BLOCKED = {
    "torch_mnist": None,
    "torch_imagenet": None,
    "torch_word_language_model": None,
    "torch_dcgan": None,
    "torch_quickstart": None,
    "torch_transformer_lm": None,
    "torch_amp_examples": None,
    "megengine_mnist": None,
    "megengine_classification_train": None,
    "megengine_amp": None,
    "mindspore_quickstart_amp": None,
    "mindspore_lenet_model": None,
    "mindspore_loss_scale_cells": None,
    "oneflow_quickstart_graph": None,
    "oneflow_resnet_graph": None,
}

# Scripts that run with minigrad but whose PyTorch comparison fails: the reason.
TORCH_MISMATCH = {}


def _marks(name, torch_compare=False):
    reason = BLOCKED[name] or (TORCH_MISMATCH.get(name) if torch_compare else None)
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


def _case(name, torch_compare=False):
    return pytest.param(name, id=name, marks=_marks(name, torch_compare))


# ----------------------------------------------------------------------------------- running
def _load(name, framework="minigrad"):
    """The script as a fresh module; for ``framework="torch"`` its text with minigrad -> torch."""
    path = SCRIPTS / f"{name}.py"
    text = path.read_text(encoding="utf-8")
    if framework != "minigrad":
        text = text.replace("minigrad", framework)
    module = types.ModuleType(f"peer_script_{name}_{framework}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module       # for classes defined in it (Enum, pickling)
    try:
        exec(compile(text, str(path), "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(module.__name__, None)
        raise
    return module


def run_script(name, framework="minigrad", **patches):
    """``main()`` of the script under ``framework``, inside the harness patches when given."""
    stack = contextlib.ExitStack()
    with stack:
        if patches:
            stack.enter_context(_comparable(framework, name, **patches))
        try:
            return _load(name, framework).main()
        finally:
            sys.modules.pop(f"peer_script_{name}_{framework}", None)


# ----------------------------------------------------------------------------------- patches
class _Patcher:
    def __init__(self):
        self.undo = []

    def set(self, obj, attr, value):
        had = attr in vars(obj) if isinstance(obj, type) else hasattr(obj, attr)
        old = getattr(obj, attr, None)
        setattr(obj, attr, value)
        self.undo.append((obj, attr, had, old))

    def restore(self):
        for obj, attr, had, old in reversed(self.undo):
            if had:
                setattr(obj, attr, old)
            else:
                delattr(obj, attr)


def _framework_parts(framework):
    """(nn, functional modules, DataLoader classes, RandomSampler classes, Optimizer base,
    Module base, to_numpy, from_numpy) of one framework."""
    if framework == "torch":
        import torch
        import torch.utils.data as tud

        return dict(
            nn=torch.nn, functionals=[torch.nn.functional], loaders=[tud.DataLoader],
            samplers=[tud.RandomSampler], optimizer=torch.optim.Optimizer,
            module=torch.nn.Module, root=torch,
            to_numpy=lambda p: p.detach().cpu().numpy().copy(),
            write=_torch_write)
    import minigrad.data.dataloader
    import minigrad.data.sampler
    import minigrad.functional

    loaders = [minigrad.data.dataloader.DataLoader]
    samplers = [minigrad.data.sampler.RandomSampler]
    utils_data = getattr(getattr(minigrad, "utils", None), "data", None)
    for cls in (getattr(utils_data, "DataLoader", None),):
        if isinstance(cls, type) and cls not in loaders:
            loaders.append(cls)
    for cls in (getattr(utils_data, "RandomSampler", None),):
        if isinstance(cls, type) and cls not in samplers:
            samplers.append(cls)
    functionals = [minigrad.functional]
    nn_functional = getattr(minigrad.nn, "functional", None)
    if nn_functional is not None and nn_functional is not minigrad.functional:
        functionals.append(nn_functional)
    return dict(
        nn=minigrad.nn, functionals=functionals, loaders=loaders, samplers=samplers,
        optimizer=minigrad.optimizer.Optimizer, module=minigrad.nn.Module, root=minigrad,
        to_numpy=lambda p: np.array(p.numpy(), copy=True), write=_minigrad_write)


def _torch_write(p, value):
    import torch

    with torch.no_grad():
        p.copy_(torch.from_numpy(value))


def _minigrad_write(p, value):
    if tuple(p.shape) != tuple(value.shape):
        raise AssertionError(f"harness: parameter shape {tuple(p.shape)} != recorded "
                             f"{tuple(value.shape)} (parameter order differs)")
    with minigrad.no_grad():
        p.copy_(minigrad.tensor(value.astype(np.float32)))


# Shared between the torch run (records) and the minigrad run (replays) of one comparison.
class _Record:
    def __init__(self):
        self.optimizers = []     # one list of arrays per optimizer, in construction order
        self.named = None        # {name: array} at the first Module.train()


@contextlib.contextmanager
def _comparable(framework, name, record, sync="optimizer", same_randn=False):
    parts = _framework_parts(framework)
    nn = parts["nn"]
    patch = _Patcher()
    script_file = str(SCRIPTS / f"{name}.py")
    try:
        # -- no dropout randomness
        identity = lambda self, input, *a, **k: input  # noqa: E731
        for cls_name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                         "FeatureAlphaDropout"):
            cls = getattr(nn, cls_name, None)
            if isinstance(cls, type):
                patch.set(cls, "forward", identity)
        for f in parts["functionals"]:
            if hasattr(f, "dropout"):
                patch.set(f, "dropout", lambda input, *a, **k: input)
        for cls_name in ("LSTM", "GRU", "RNN", "MultiheadAttention"):
            cls = getattr(nn, cls_name, None)
            if isinstance(cls, type):
                patch.set(cls, "__init__", _zero_dropout_after(cls.__init__))

        # -- no shuffle-order randomness
        for cls in parts["loaders"]:
            patch.set(cls, "__init__", _no_shuffle(cls.__init__))
        for cls in parts["samplers"]:
            patch.set(cls, "__iter__", lambda self: iter(range(len(self.data_source))))

        # -- same initial weights
        to_numpy, write = parts["to_numpy"], parts["write"]
        base_init = parts["optimizer"].__init__
        counter = [0]

        @functools.wraps(base_init)
        def optimizer_init(self, *args, **kwargs):
            base_init(self, *args, **kwargs)
            params = [p for g in self.param_groups for p in g["params"]]
            if framework == "torch":
                record.optimizers.append([to_numpy(p) for p in params])
            elif sync == "optimizer":
                k = counter[0]
                counter[0] += 1
                if k >= len(record.optimizers):
                    raise AssertionError("harness: minigrad built more optimizers than torch")
                recorded = record.optimizers[k]
                assert len(recorded) == len(params), (
                    f"harness: optimizer {k} has {len(params)} parameters in minigrad, "
                    f"{len(recorded)} in torch")
                for p, value in zip(params, recorded):
                    write(p, value)

        patch.set(parts["optimizer"], "__init__", optimizer_init)

        if sync == "train":
            module_train = parts["module"].train
            synced = [False]

            @functools.wraps(module_train)
            def train(self, mode=True):
                if not synced[0]:
                    synced[0] = True
                    named = dict(self.named_parameters())
                    if framework == "torch":
                        record.named = {k: to_numpy(p) for k, p in named.items()}
                    else:
                        assert set(named) == set(record.named), (
                            f"harness: parameter names differ: minigrad {sorted(named)}, "
                            f"torch {sorted(record.named)}")
                        for k, p in named.items():
                            write(p, record.named[k])
                return module_train(self, mode)

            patch.set(parts["module"], "train", train)

        # -- same random draws, for the script's own randn calls
        if same_randn:
            root = parts["root"]
            original = root.randn
            rng = np.random.default_rng(20240607)

            @functools.wraps(original)
            def randn(*size, **kwargs):
                if sys._getframe(1).f_code.co_filename != script_file:
                    return original(*size, **kwargs)
                shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) \
                    else size
                value = rng.standard_normal(shape).astype(np.float32)
                device = kwargs.get("device")
                out = (_torch_tensor(value) if framework == "torch"
                       else minigrad.tensor(value))
                return out.to(device) if device is not None else out

            patch.set(root, "randn", randn)
        yield
    finally:
        patch.restore()


def _torch_tensor(value):
    import torch

    return torch.from_numpy(value)


def _zero_dropout_after(init):
    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if isinstance(getattr(self, "dropout", None), float):
            self.dropout = 0.0
    return wrapper


def _no_shuffle(init):
    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        if kwargs.get("shuffle"):
            kwargs["shuffle"] = False
        if len(args) >= 3 and args[2] is True:      # DataLoader(dataset, batch_size, shuffle)
            args = args[:2] + (False,) + args[3:]
        init(self, *args, **kwargs)
    return wrapper


# ----------------------------------------------------------------------------------- checks
def _finite(values):
    values = [float(v) for v in values]
    assert values and all(math.isfinite(v) for v in values), values
    return values


def _falls(values, factor=1.0, head=2):
    """The mean of the last ``head`` values is below ``factor`` times the first ``head``'s."""
    values = _finite(values)
    first, last = np.mean(values[:head]), np.mean(values[-head:])
    assert last < factor * first, f"loss did not fall: {first:.4f} -> {last:.4f}"


# ----------------------------------------------------------------------------------- PyTorch
@pytest.mark.parametrize("name", [_case("torch_quickstart"), _case("torch_mnist")])
def test_torch_classifiers_train(name):
    out = run_script(name)
    _falls(out["losses"], 0.9)
    acc = out["accuracy"]
    assert acc[-1] > 0.3 and acc[-1] >= acc[0], acc


@pytest.mark.parametrize("name", [_case("torch_imagenet")])
def test_torch_imagenet(name):
    out = run_script(name)
    _falls(out["losses"], 0.9)
    for top1, top5 in out["accuracy"]:
        assert 0 <= top1 <= top5 <= 100
    assert out["best_acc1"] > 10


@pytest.mark.parametrize("name", [_case("torch_word_language_model")])
def test_torch_word_language_model(name):
    out = run_script(name)
    assert len(_finite(out["losses"])) == 3 * 6      # 3 epochs of 192 // 4 // 8 batches
    val = _finite(out["val_losses"])
    # at these sizes the 2-layer LSTM barely leaves uniform (PyTorch too): stays near log(12)
    assert all(v < math.log(12) + 0.3 for v in val), val


@pytest.mark.parametrize("name", [_case("torch_transformer_lm")])
def test_torch_transformer_lm(name):
    out = run_script(name)
    _falls(out["losses"], 0.9)
    val = _finite(out["val_losses"])
    assert val[-1] < val[0] and val[-1] < math.log(16)   # better than uniform over 16 tokens


@pytest.mark.parametrize("name", [_case("torch_dcgan")])
def test_torch_dcgan(name):
    out = run_script(name)
    _finite(out["loss_D"])
    _finite(out["loss_G"])
    assert all(0 < d < 1 for d in out["D_x"] + out["D_G_z1"])
    assert out["fake_shape"] == (8, 3, 16, 16)
    _falls(out["loss_D"], 1.0)                 # D learns to tell the blobs from G's output


@pytest.mark.parametrize("name", [_case("torch_amp_examples")])
def test_torch_amp_examples(name):
    out = run_script(name)
    for recipe in ("typical", "clipping", "accumulation"):
        _falls(out[recipe], 0.95)
    _finite(out["multiple"])     # two models pulled two ways: no monotone fall to assert


TORCH_SCRIPTS = {
    # name: (patch options, keys of main()'s result to compare, rtol)
    "torch_quickstart": (dict(), ("losses", "test_loss"), 0.01),
    "torch_mnist": (dict(), ("losses",), 0.01),
    "torch_imagenet": (dict(), ("losses",), 0.01),
    "torch_word_language_model": (dict(sync="train"), ("losses", "val_losses"), 0.01),
    "torch_dcgan": (dict(same_randn=True), ("loss_D", "loss_G"), 0.01),
    "torch_transformer_lm": (dict(), ("losses", "val_losses"), 0.01),
    "torch_amp_examples": (dict(), ("typical", "clipping", "accumulation", "multiple"), 0.02),
}


@pytest.mark.parametrize("name", [_case(n, torch_compare=True) for n in TORCH_SCRIPTS])
def test_torch_script_matches_pytorch(name):
    """The same script under PyTorch and minigrad (harness patches in the module docstring):
    the loss sequences agree within 1% (float32) / 2% (float16 autocast)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    options, keys, rtol = TORCH_SCRIPTS[name]
    record = _Record()
    expected = run_script(name, "torch", record=record, **options)
    assert record.optimizers or record.named, "harness: nothing recorded in the torch run"
    got = run_script(name, "minigrad", record=record, **options)
    for key in keys:
        e, g = np.asarray(_finite(expected[key])), np.asarray(_finite(got[key]))
        assert e.shape == g.shape, (key, e.shape, g.shape)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=1e-6, err_msg=f"{name}: {key}")


# ----------------------------------------------------------------------------------- MegEngine
@pytest.mark.parametrize("name", [_case("megengine_mnist")])
def test_megengine_mnist(name):
    out = run_script(name)
    _falls(out["losses"], 0.95, head=3)
    assert out["accuracy"][-1] >= 0.2 and out["train_acc"][-1] > out["train_acc"][0]


@pytest.mark.parametrize("name", [_case("megengine_classification_train")])
def test_megengine_classification_train(name):
    out = run_script(name)
    _falls(out["losses"], 0.9)
    lr = out["lr"]
    assert lr[0] == pytest.approx(0.05) and all(a > b for a, b in zip(lr, lr[1:]))
    assert all(0 <= a <= 1 for a in out["acc1"])
    assert out["valid_acc1"][-1] > 10           # percent, 10 classes


@pytest.mark.parametrize("name", [_case("megengine_amp")])
def test_megengine_amp(name):
    out = run_script(name)
    _falls(out["losses"], 0.8)
    _falls(out["manual_losses"], 0.8)
    train_dtype, ctx_dtype, switch_dtype, plain_dtype = out["dtypes"]
    assert train_dtype == ctx_dtype == switch_dtype == "float16" and plain_dtype == "float32"
    # MegEngine's GradScaler() starts at 2**4; minigrad's documented default is PyTorch's 2**16
    # (docs/migrating.md). No overflow here, no growth within 2000 steps: the scale stays put.
    assert out["scale_factor"] == out["manual_scale_factor"] == 2.0 ** 16


# ----------------------------------------------------------------------------------- MindSpore
@pytest.mark.parametrize("name", [_case("mindspore_quickstart_amp")])
def test_mindspore_quickstart_amp(name):
    out = run_script(name)
    _falls(out["losses"], 0.9)
    assert out["accuracy"][-1] > 0.3
    assert out["scale_value"] == 2.0 ** 16       # 12 steps: no growth (window 50), no overflow


@pytest.mark.parametrize("name", [_case("mindspore_lenet_model")])
def test_mindspore_lenet_model(name):
    out = run_script(name)
    assert len(out["losses"]) == 15 * 4            # 15 epochs of 128 // 32 steps
    _falls(out["losses"], 0.8, head=4)
    # the restored checkpoint classifies held-out digits far above chance (0.1)
    assert out["accuracy"] > 0.4 and out["n_checkpoints"] == 2


def _momentum_reference(out, steps):
    """MindSpore's Momentum on the examples' Net with MSELoss, in float64 NumPy."""
    w, x, y = out["weight0"].astype(np.float64), out["inputs"], out["label"]
    lr, mom = out["lr"], out["momentum"]
    v, losses = np.zeros_like(w), []
    for _ in range(steps):
        d = x @ w - y
        losses.append(float((d ** 2).mean()))
        g = 2 * x.T @ d / d.size
        v = mom * v + g
        w = w - lr * v
    return np.array(losses), w


@pytest.mark.parametrize("name", [_case("mindspore_loss_scale_cells")])
def test_mindspore_loss_scale_cells(name):
    out = run_script(name)
    runs = ("dynamic", "fixed", "tensor", "tensor_per_call", "plain")
    steps = len(out["plain"]["losses"])
    ref_losses, ref_w = _momentum_reference(out, steps)
    for run in runs:   # each scaled run divides the gradients back exactly once
        np.testing.assert_allclose(out[run]["losses"], ref_losses, rtol=1e-4, err_msg=run)
        np.testing.assert_allclose(out[run]["weight"], ref_w, rtol=1e-4, atol=1e-6,
                                   err_msg=run)
    for run in runs[:-1]:
        assert not any(out[run]["overflow"]), run
    assert out["dynamic"]["scale"] == [2.0 ** 12] * steps
    assert out["fixed"]["scale"] == [2.0 ** 12] * steps
    assert out["tensor"]["scale"] == [1024.0] * steps
    assert out["tensor_per_call"]["scale"] == [256.0] * steps


# ----------------------------------------------------------------------------------- OneFlow
@pytest.mark.parametrize("name", [_case("oneflow_quickstart_graph")])
def test_oneflow_quickstart_graph(name):
    out = run_script(name)
    _falls(out["eager_losses"], 0.99)
    _falls(out["graph_losses"], 0.95)
    assert out["graph_dtype"] == "float16"        # enable_amp: the model runs in float16
    assert out["accuracy"][-1] > out["accuracy"][0] and out["accuracy"][-1] > 0.5
    assert out["scale"] == 2.0 ** 12


@pytest.mark.parametrize("name", [_case("oneflow_resnet_graph")])
def test_oneflow_resnet_graph(name):
    module = _load(name)
    try:
        out = module.main()
        unclipped = module.main(["--grad-clipping", "0"])
    finally:
        sys.modules.pop(f"peer_script_{name}_minigrad", None)
    _falls(out["losses"], 0.95, head=4)
    lr = out["lr"]          # linear warm-up over the first epoch (4 steps), then cosine decay
    assert lr[0] < lr[3] and max(lr) <= 0.1 + 1e-9 and lr[-1] < max(lr)
    # the param group's clip_grad_max_norm takes effect: the trajectories differ
    assert not np.allclose(out["losses"], unclipped["losses"], rtol=1e-6, atol=0)
    assert all(0 <= a <= 1 for a in out["accuracy"])
    assert 1.0 <= out["scale"] <= 2.0 ** 16
