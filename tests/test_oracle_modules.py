"""Layers against PyTorch: the same weights (copied through state_dict), the same inputs, in
training and evaluation mode, in float32, float64 and float16; outputs (every one, LSTM's state
and MultiheadAttention's weights included), input and parameter gradients, buffers (BatchNorm's
running statistics) and parameters after the step (Embedding's max_norm) must agree. Skips
without PyTorch.

A case is the constructor's source, evaluated once with ``nn`` bound to ``minigrad.nn`` and once
to ``torch.nn`` (``T(...)`` makes a tensor on either side), and its inputs. float16 runs
minigrad in float16 against PyTorch in float32 on the same float16-rounded weights and inputs,
at float16's tolerance (PyTorch's CPU kernels lack some float16 ops, and float32 is the better
reference); float64 is compared at float64's tolerance, so a hidden float32 step shows.
"""

import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

torch = pytest.importorskip("torch")
TN = torch.nn


# ----------------------------------------------------------------------------- inputs
class In:
    """One input, made from the case's generator: floating values (``kind`` "f") follow the
    case's dtype; integer and bool inputs keep theirs. ``grad``: the input requires grad."""

    def __init__(self, make, kind="f", grad=False):
        self.make, self.kind, self.grad = make, kind, grad


def R(*shape, scale=1.0, grad=True):
    """Standard normal values (times ``scale``)."""
    return In(lambda g: scale * g.standard_normal(shape), grad=grad)


def U(*shape, lo=0.0, hi=1.0, grad=True):
    """Uniform values in ``[lo, hi)``."""
    return In(lambda g: g.uniform(lo, hi, shape), grad=grad)


def _log_softmax(a, axis):
    a = a - a.max(axis, keepdims=True)
    return a - np.log(np.exp(a).sum(axis, keepdims=True))


def LS(*shape, axis=-1, grad=True):
    """Log-probabilities along ``axis``."""
    return In(lambda g: _log_softmax(g.standard_normal(shape), axis), grad=grad)


def SM(*shape, axis=-1, grad=False):
    """Probabilities along ``axis``."""
    return In(lambda g: np.exp(_log_softmax(g.standard_normal(shape), axis)), grad=grad)


def PM(*shape):
    """Targets of +-1 (floating)."""
    return In(lambda g: g.choice([-1.0, 1.0], shape))


def Int(high, *shape, low=0):
    """int64 values in ``[low, high)``."""
    return In(lambda g: g.integers(low, high, shape), kind="i")


def K(values, grad=False):
    """Fixed values: floating ones follow the case's dtype, integer and bool keep theirs."""
    a = np.asarray(values)
    return In(lambda g: a.copy(), kind="f" if a.dtype.kind == "f" else a.dtype.kind, grad=grad)


class Same:
    """The very tensor of input ``index`` again (self-attention's ``query is key is value``)."""

    def __init__(self, index):
        self.index = index


class Tup:
    """A tuple of inputs passed as one argument (LSTM's ``(h0, c0)``)."""

    def __init__(self, *items):
        self.items = items


# ----------------------------------------------------------------------------- cases
# PyTorch before 2.15 divides an EmbeddingBag row's gradient by another row's count under
# scale_grad_by_freq (indices [[2, 2, 3], [2, 1, 3]]: row 3 gets 2/3, not 2/2); minigrad divides
# by the row's own count, as 2.15 does (test_embedding_bag_scales_by_each_rows_own_count).
OLD_BAG_FREQUENCIES = pytest.mark.skipif(
    tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) < (2, 15),
    reason="PyTorch < 2.15 miscounts EmbeddingBag's scale_grad_by_freq frequencies")


class Case:
    def __init__(self, src, *inputs, kw=None, id=None, modes=("train", "eval"),
                 dtypes=("float32", "float64", "float16"), tol=None, loss=False, prep=None,
                 marks=()):
        self.src, self.inputs, self.kw, self.marks = src, inputs, kw or {}, marks
        self.id = id or src.replace("nn.", "").replace(" ", "")
        self.modes, self.dtypes, self.loss, self.prep = modes, dtypes, loss, prep
        self.tol = tol or {}  # dtype: a factor on its tolerances, for a documented deviation


def L(src, *inputs, **kw):
    """A loss: its float16 result is float32 (minigrad's losses reduce in float32: a docs
    row)."""
    return Case(src, *inputs, loss=True, **kw)


EVAL = ("eval",)  # random in training mode: compared in evaluation mode only
BOOL_MASK = np.array([[0, 0, 1, 1], [0, 1, 0, 1], [0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 1, 0]],
                     dtype=bool)
KPM = np.array([[0, 0, 0, 1], [0, 1, 0, 0]], dtype=bool)
CAUSAL = np.triu(np.ones((5, 5), dtype=bool), 1)


def _unpool_indices(shape, kernel, stride=None, padding=0):
    """The indices of a PyTorch max pool of random input (MaxUnpool's second input)."""
    x = torch.tensor(np.random.default_rng(5).standard_normal(shape))
    pool = getattr(torch.nn.functional, f"max_pool{len(shape) - 2}d")
    return pool(x, kernel, stride, padding, return_indices=True)[1].numpy()


PADS = ("zeros", "reflect", "replicate", "circular")

CASES = [
    # linear and shape
    Case("nn.Linear(4, 3)", R(2, 5, 4)),
    Case("nn.Linear(4, 3, bias=False)", R(4)),
    Case("nn.Bilinear(3, 4, 5)", R(2, 3), R(2, 4)),
    Case("nn.Bilinear(3, 4, 2, bias=False)", R(2, 3, 3), R(2, 3, 4)),
    Case("nn.Identity(3, unused=1)", R(2, 3)),
    Case("nn.Flatten()", R(2, 3, 4)),
    Case("nn.Flatten(0, 1)", R(2, 3, 4)),
    Case("nn.Unflatten(1, (2, 3))", R(4, 6, 2)),
    Case("nn.Unflatten(-1, (2, -1))", R(4, 6)),
    Case("nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))", R(5, 4)),
    Case("nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), "
         "nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.0), nn.Linear(36, 3))",
         R(3, 2, 6, 6), id="small-CNN"),
    # convolutions
    Case("nn.Conv1d(2, 4, 3, groups=2)", R(3, 2, 8)),
    Case("nn.Conv1d(2, 3, 3, stride=2, padding=2, dilation=2, bias=False)", R(2, 2, 11)),
    Case("nn.Conv1d(2, 3, 4, padding='same', dilation=2)", R(2, 2, 9)),
    Case("nn.Conv1d(2, 3, 3, padding='valid')", R(2, 7)),
    *[Case(f"nn.Conv1d(2, 3, 3, padding=2, padding_mode='{m}')", R(2, 2, 7)) for m in PADS],
    Case("nn.Conv2d(2, 3, 3, stride=2, padding=1)", R(2, 2, 7, 6)),
    Case("nn.Conv2d(2, 3, 4, padding='same')", R(1, 2, 5, 5)),
    Case("nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)",
         R(2, 4, 8, 7)),
    *[Case(f"nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode='{m}')", R(1, 2, 5, 6))
      for m in PADS],
    Case("nn.Conv2d(2, 3, 3, stride=2, padding=1, padding_mode='reflect')", R(2, 6, 7)),
    Case("nn.Conv2d(2, 3, (3, 4), padding='same', padding_mode='circular')", R(1, 2, 5, 6)),
    Case("nn.Conv3d(2, 4, 3, padding=1, groups=2)", R(1, 2, 4, 5, 4)),
    Case("nn.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1), bias=False)",
         R(2, 2, 5, 6, 5)),
    Case("nn.Conv3d(2, 3, 2, padding='same')", R(1, 2, 3, 4, 3)),
    *[Case(f"nn.Conv3d(2, 3, 3, padding=1, padding_mode='{m}')", R(1, 2, 3, 4, 3))
      for m in PADS[1:]],
    Case("nn.ConvTranspose1d(2, 4, 3, stride=2, padding=1, output_padding=1, groups=2)",
         R(2, 2, 5)),
    Case("nn.ConvTranspose1d(2, 3, 3, stride=3, dilation=2, bias=False)", R(2, 4)),
    Case("nn.ConvTranspose1d(2, 3, 3, stride=2)", R(1, 2, 5), kw={"output_size": [12]}),
    Case("nn.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1)", R(1, 2, 4, 4)),
    Case("nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2, "
         "dilation=(1, 2))", R(2, 4, 3, 4)),
    Case("nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)", R(1, 2, 4, 4),
         kw={"output_size": (8, 7)}),
    Case("nn.ConvTranspose3d(2, 4, 3, stride=2, padding=1, output_padding=1, groups=2)",
         R(1, 2, 3, 3, 2)),
    Case("nn.ConvTranspose3d(2, 3, (2, 3, 2), stride=(2, 1, 1), dilation=(1, 2, 1), "
         "bias=False)", R(2, 3, 3, 2)),
    # pooling
    Case("nn.MaxPool1d(3, 2, 1)", R(2, 3, 9)),
    Case("nn.MaxPool1d(2, dilation=2, ceil_mode=True)", R(2, 3, 8)),
    Case("nn.MaxPool1d(3, return_indices=True)", R(3, 9)),
    Case("nn.MaxPool1d(4, 3, 2)", R(3, 10)),
    Case("nn.MaxPool2d(2)", R(1, 2, 6, 6)),
    Case("nn.MaxPool2d(3, 2, 1)", R(1, 2, 7, 7)),
    Case("nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2))",
         R(1, 2, 7, 7)),
    Case("nn.MaxPool2d(3, 2, ceil_mode=True)", R(2, 8, 8)),
    Case("nn.MaxPool2d(2, return_indices=True)", R(1, 2, 5, 6)),
    Case("nn.MaxPool3d(2)", R(1, 2, 4, 4, 4)),
    Case("nn.MaxPool3d(3, 2, 1, return_indices=True)", R(1, 2, 5, 4, 5)),
    Case("nn.MaxPool3d((2, 3, 2), stride=2, dilation=(1, 1, 2), ceil_mode=True)",
         R(2, 5, 6, 7)),
    Case("nn.AvgPool1d(3, 2, 1)", R(2, 3, 9)),
    Case("nn.AvgPool1d(3, 2, 1, count_include_pad=False)", R(2, 3, 9)),
    Case("nn.AvgPool1d(2, ceil_mode=True)", R(3, 9)),
    Case("nn.AvgPool2d(3, 2, 1)", R(1, 2, 7, 7)),
    Case("nn.AvgPool2d(2)", R(2, 5, 6)),
    Case("nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)", R(1, 2, 8, 7)),
    Case("nn.AvgPool2d(3, 2, 1, ceil_mode=True)", R(1, 2, 8, 7)),
    Case("nn.AvgPool2d(2, divisor_override=3)", R(1, 2, 4, 6)),
    Case("nn.AvgPool3d(2)", R(1, 2, 4, 4, 4)),
    Case("nn.AvgPool3d(3, 2, 1, count_include_pad=False)", R(1, 2, 5, 4, 5)),
    Case("nn.AvgPool3d((2, 3, 2), ceil_mode=True, divisor_override=5)", R(2, 5, 7, 5)),
    Case("nn.AdaptiveAvgPool1d(4)", R(2, 3, 10)),
    Case("nn.AdaptiveAvgPool2d(3)", R(1, 2, 7, 8)),
    Case("nn.AdaptiveAvgPool2d((3, None))", R(2, 7, 5)),
    Case("nn.AdaptiveAvgPool3d((2, 3, 2))", R(1, 2, 5, 7, 4)),
    Case("nn.AdaptiveAvgPool3d(1)", R(2, 3, 4, 5)),
    Case("nn.AdaptiveMaxPool1d(4)", R(2, 3, 10)),
    Case("nn.AdaptiveMaxPool1d(3, return_indices=True)", R(3, 7)),
    Case("nn.AdaptiveMaxPool2d((3, 2))", R(1, 2, 7, 5)),
    Case("nn.AdaptiveMaxPool2d(3, return_indices=True)", R(2, 5, 7)),
    Case("nn.AdaptiveMaxPool3d(2)", R(1, 2, 4, 5, 3)),
    Case("nn.AdaptiveMaxPool3d((2, 3, None), return_indices=True)", R(1, 2, 5, 7, 3)),
    Case("nn.LPPool1d(2, 3, stride=2)", R(2, 3, 9)),
    Case("nn.LPPool1d(3, 2)", U(2, 3, 8, lo=0.5, hi=2.0)),
    Case("nn.LPPool2d(2, 2)", R(1, 2, 6, 6)),
    Case("nn.LPPool2d(1.5, (3, 2), stride=(2, 1), ceil_mode=True)",
         U(1, 2, 8, 7, lo=0.5, hi=2.0)),
    Case("nn.LPPool3d(2, 2)", R(1, 2, 4, 4, 5)),
    Case("nn.MaxUnpool1d(2)", R(2, 3, 4), K(_unpool_indices((2, 3, 8), 2))),
    Case("nn.MaxUnpool2d(2, stride=2)", R(1, 2, 3, 3), K(_unpool_indices((1, 2, 7, 7), 2, 2)),
         kw={"output_size": (7, 7)}),
    Case("nn.MaxUnpool2d(3, 2, 1)", R(1, 2, 3, 4), K(_unpool_indices((1, 2, 6, 7), 3, 2, 1)),
         kw={"output_size": (1, 2, 6, 7)}),
    Case("nn.MaxUnpool3d(2)", R(1, 2, 2, 2, 2), K(_unpool_indices((1, 2, 4, 4, 4), 2))),
    # padding
    Case("nn.ZeroPad1d(2)", R(2, 3, 4)),
    Case("nn.ZeroPad1d((1, 3))", R(3, 4)),
    Case("nn.ZeroPad2d((1, 0, 2, 3))", R(1, 2, 3, 4)),
    Case("nn.ZeroPad2d((-1, 1, 0, -1))", R(1, 2, 3, 4)),
    Case("nn.ZeroPad3d(1)", R(1, 2, 2, 3, 2)),
    Case("nn.ConstantPad1d(2, 3.5)", R(2, 3, 4)),
    Case("nn.ConstantPad2d((1, 2, 0, 1), -1.0)", R(2, 3, 4)),
    Case("nn.ConstantPad3d((1, 0, 0, 2, 1, 1), 0.5)", R(1, 2, 2, 3, 2)),
    Case("nn.ReflectionPad1d(2)", R(2, 3, 5)),
    Case("nn.ReflectionPad1d((3, 1))", R(3, 5)),
    Case("nn.ReflectionPad2d((1, 2, 2, 0))", R(1, 2, 4, 5)),
    Case("nn.ReflectionPad3d(1)", R(1, 2, 3, 3, 3)),
    Case("nn.ReplicationPad1d((3, 1))", R(2, 3, 5)),
    Case("nn.ReplicationPad2d(2)", R(2, 4, 5)),
    Case("nn.ReplicationPad3d((1, 2, 0, 1, 2, 0))", R(1, 2, 3, 3, 3)),
    Case("nn.CircularPad1d(2)", R(2, 3, 5)),
    Case("nn.CircularPad2d((1, 2, 2, 0))", R(1, 2, 4, 5)),
    Case("nn.CircularPad3d(1)", R(2, 3, 3, 3)),
    # resampling and rearranging
    Case("nn.Upsample(scale_factor=2)", R(1, 2, 3, 4)),
    Case("nn.Upsample(size=(5, 7), mode='bilinear')", R(1, 2, 3, 4)),
    Case("nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)", R(1, 2, 3, 4)),
    Case("nn.Upsample(scale_factor=1.5, mode='bicubic')", R(1, 2, 4, 4)),
    Case("nn.Upsample(size=7, mode='linear')", R(2, 3, 4)),
    Case("nn.Upsample(scale_factor=2, mode='trilinear')", R(1, 2, 2, 3, 2)),
    Case("nn.Upsample(scale_factor=(2, 3), mode='nearest-exact')", R(1, 2, 3, 2)),
    Case("nn.Upsample(scale_factor=2)", R(1, 2, 3, 2, 2), id="Upsample-3d"),
    Case("nn.UpsamplingNearest2d(scale_factor=2)", R(1, 2, 3, 4)),
    Case("nn.UpsamplingBilinear2d(size=(5, 6))", R(1, 2, 3, 4)),
    Case("nn.PixelShuffle(2)", R(1, 8, 2, 3)),
    Case("nn.PixelUnshuffle(2)", R(1, 2, 4, 6)),
    Case("nn.ChannelShuffle(2)", R(1, 4, 2, 3)),
    Case("nn.Fold(output_size=(4, 5), kernel_size=2)", R(1, 8, 12)),
    Case("nn.Fold((5, 5), (2, 3), padding=1, stride=2)", R(2, 12, 9)),
    Case("nn.Unfold(kernel_size=2)", R(1, 2, 4, 5)),
    Case("nn.Unfold(3, dilation=2, padding=1, stride=2)", R(1, 2, 7, 6)),
    # normalisation
    Case("nn.BatchNorm1d(3)", R(6, 3)),
    Case("nn.BatchNorm1d(3, affine=False, momentum=None)", R(4, 3, 5)),
    Case("nn.BatchNorm2d(3)", R(4, 3, 5, 5)),
    Case("nn.BatchNorm2d(3, track_running_stats=False)", R(2, 3, 4, 4)),
    Case("nn.BatchNorm3d(3, eps=1e-3, momentum=0.3)", R(2, 3, 3, 4, 3)),
    Case("nn.InstanceNorm1d(3)", R(2, 3, 6)),
    Case("nn.InstanceNorm1d(3, affine=True, track_running_stats=True)", R(2, 3, 6)),
    Case("nn.InstanceNorm1d(3, affine=True)", R(3, 6), id="InstanceNorm1d-unbatched"),
    Case("nn.InstanceNorm2d(3, affine=True)", R(2, 3, 4, 5)),
    Case("nn.InstanceNorm2d(3, track_running_stats=True, momentum=0.2)", R(2, 3, 4, 5)),
    Case("nn.InstanceNorm3d(2, affine=True, track_running_stats=True)", R(2, 2, 3, 3, 3)),
    Case("nn.LayerNorm(5)", R(2, 3, 5)),
    Case("nn.LayerNorm((3, 5), elementwise_affine=False)", R(2, 3, 5)),
    Case("nn.LayerNorm(5, bias=False)", R(4, 5)),
    Case("nn.GroupNorm(2, 4)", R(2, 4, 3, 3)),
    Case("nn.GroupNorm(1, 3, affine=False)", R(2, 3, 5)),
    Case("nn.GroupNorm(3, 6, eps=1e-3)", R(2, 6)),
    Case("nn.GroupNorm(2, 4)", R(2, 4, 2, 3, 2), id="GroupNorm-5d"),
    Case("nn.LocalResponseNorm(3)", R(2, 5, 4, 4)),
    Case("nn.LocalResponseNorm(2, alpha=0.01, beta=0.5, k=2.0)", R(2, 4, 6)),
    Case("nn.LocalResponseNorm(4)", R(1, 5, 2, 3, 3)),
    Case("nn.RMSNorm(5)", R(2, 3, 5)),
    Case("nn.RMSNorm((3, 5), eps=1e-4)", R(2, 3, 5)),
    Case("nn.RMSNorm(5, elementwise_affine=False)", R(4, 5)),
    # embeddings
    Case("nn.Embedding(7, 3)", Int(7, 2, 5)),
    Case("nn.Embedding(7, 3, padding_idx=2)", K([[2, 0, 2, 5], [1, 2, 6, 6]])),
    Case("nn.Embedding(7, 3, padding_idx=-1)", K([[6, 0, 3], [6, 6, 1]])),
    Case("nn.Embedding(7, 3, max_norm=1.0)", K([[1, 4, 1], [0, 6, 4]])),
    Case("nn.Embedding(7, 3, max_norm=1.5, norm_type=1.0)", K([3, 1, 3, 5])),
    Case("nn.Embedding(7, 3, scale_grad_by_freq=True)", K([[1, 4, 1], [0, 1, 4]])),
    Case("nn.Embedding.from_pretrained(T([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]]), "
         "freeze=False, max_norm=2.0)", K([2, 0, 2, 1])),
    Case("nn.EmbeddingBag(7, 3, mode='sum', max_norm=1.0, scale_grad_by_freq=True)",
         K([1, 2, 1, 5, 1, 3]), K([0, 3]), marks=OLD_BAG_FREQUENCIES),
    Case("nn.EmbeddingBag(7, 3)", Int(7, 2, 4)),
    Case("nn.EmbeddingBag(7, 3, mode='sum')", K([1, 2, 4, 5, 4, 3, 2, 6]), K([0, 2, 2, 5])),
    Case("nn.EmbeddingBag(7, 3, mode='max')", K([1, 2, 4, 5, 4, 3, 2, 6]), K([0, 3, 5])),
    Case("nn.EmbeddingBag(7, 3, mode='sum')", K([1, 2, 4, 5, 4, 3]), K([0, 2, 3]),
         R(6), id="EmbeddingBag-per_sample_weights"),
    Case("nn.EmbeddingBag(7, 3, include_last_offset=True, padding_idx=2)",
         K([1, 2, 4, 2, 4, 3]), K([0, 2, 2, 6])),
    Case("nn.EmbeddingBag(7, 3, mode='max', padding_idx=0)", K([[1, 0, 4], [0, 3, 3]])),
    # activations
    # docs row: hardsigmoid's float64 gradient is exactly 1/6, PyTorch's 1/6 rounded to float32
    Case("nn.Hardsigmoid()", R(2, 3, 4), tol={"float64": 100.0}),
    *[Case(f"nn.{name}()", R(2, 3, 4)) for name in (
        "ELU SELU CELU ReLU ReLU6 LeakyReLU PReLU Hardswish Hardtanh Mish "
        "LogSigmoid Sigmoid Tanh SiLU GELU Softplus Softsign Softshrink Hardshrink Tanhshrink "
        "GLU").split()],
    Case("nn.ELU(0.5)", R(2, 3, 4)),
    Case("nn.CELU(2.0)", R(2, 3, 4)),
    Case("nn.Hardtanh(-0.5, 2.0)", R(2, 3, 4)),
    Case("nn.LeakyReLU(0.2)", R(2, 3, 4)),
    Case("nn.PReLU(3)", R(2, 3, 4)),
    Case("nn.PReLU(3, init=0.1)", R(2, 3, 2, 2)),
    Case("nn.Softmax(dim=0)", R(5)),
    Case("nn.GELU(approximate='tanh')", R(2, 3, 4)),
    Case("nn.Softplus(beta=2.0, threshold=1.0)", R(2, 3, 4)),
    Case("nn.Softshrink(0.3)", R(2, 3, 4)),
    Case("nn.Hardshrink(0.3)", R(2, 3, 4)),
    Case("nn.Threshold(0.1, -2.0)", R(2, 3, 4)),
    Case("nn.RReLU(0.1, 0.3)", R(2, 3, 4), modes=EVAL),
    Case("nn.Softmax(dim=1)", R(2, 3, 4)),
    Case("nn.Softmax(dim=-1)", R(2, 3, 4)),
    Case("nn.Softmin(dim=1)", R(2, 3, 4)),
    Case("nn.LogSoftmax(dim=2)", R(2, 3, 4)),
    Case("nn.LogSoftmax(dim=0)", R(2, 3, 4)),
    Case("nn.Softmax2d()", R(2, 3, 4, 5)),
    Case("nn.GLU(dim=1)", R(2, 4, 3)),
    # attention
    Case("nn.MultiheadAttention(8, 2)", R(5, 2, 8), R(4, 2, 8), R(4, 2, 8)),
    Case("nn.MultiheadAttention(8, 2, batch_first=True)", R(2, 5, 8), Same(0), Same(0)),
    Case("nn.MultiheadAttention(8, 2, batch_first=True)", R(2, 5, 8), R(2, 4, 8), R(2, 4, 8),
         kw={"need_weights": False}, id="MHA-need_weights=False"),
    Case("nn.MultiheadAttention(8, 4, batch_first=True)", R(2, 5, 8), R(2, 4, 8), R(2, 4, 8),
         kw={"average_attn_weights": False}, id="MHA-per-head"),
    Case("nn.MultiheadAttention(8, 2)", R(5, 2, 8), R(4, 2, 8), R(4, 2, 8),
         kw={"attn_mask": K(BOOL_MASK), "key_padding_mask": K(KPM)}, id="MHA-bool-masks"),
    Case("nn.MultiheadAttention(8, 2, batch_first=True)", R(2, 5, 8), R(2, 4, 8), R(2, 4, 8),
         kw={"attn_mask": R(5, 4, grad=False), "need_weights": False}, id="MHA-float-mask"),
    Case("nn.MultiheadAttention(8, 2, batch_first=True)", R(2, 5, 8), R(2, 4, 8), R(2, 4, 8),
         kw={"attn_mask": R(4, 5, 4, grad=False)}, id="MHA-3d-mask"),
    Case("nn.MultiheadAttention(8, 2, batch_first=True)", R(2, 5, 8), Same(0), Same(0),
         kw={"attn_mask": K(CAUSAL), "is_causal": True, "need_weights": False},
         id="MHA-causal"),
    Case("nn.MultiheadAttention(8, 2, bias=False)", R(5, 8), R(4, 8), R(4, 8),
         id="MHA-unbatched-nobias"),
    Case("nn.MultiheadAttention(8, 2, dropout=0.5)", R(5, 2, 8), Same(0), Same(0),
         modes=EVAL),
    Case("nn.MultiheadAttention(8, 2, kdim=3, vdim=5)", R(5, 2, 8), R(4, 2, 3), R(4, 2, 5)),
    Case("nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)",
         R(5, 2, 8), R(4, 2, 8), R(4, 2, 8), kw={"key_padding_mask": K(KPM)}),
    Case("nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)", R(2, 5, 8)),
    Case("nn.TransformerEncoderLayer(8, 2, 16, 0.1, activation='gelu', norm_first=True)",
         R(5, 2, 8), modes=EVAL),
    Case("nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2, "
         "enable_nested_tensor=False)", R(5, 2, 8)),
    Case("nn.TransformerDecoderLayer(8, 2, 16, 0.0, batch_first=True)", R(2, 5, 8),
         R(2, 4, 8)),
    Case("nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, 0.0, norm_first=True), 2)",
         R(5, 2, 8), R(4, 2, 8)),
    Case("nn.Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True)", R(2, 5, 8), R(2, 4, 8)),
    # recurrent
    Case("nn.LSTM(3, 4, num_layers=2, batch_first=True)", R(2, 5, 3)),
    Case("nn.LSTM(3, 4, bidirectional=True)", R(5, 2, 3), Tup(R(2, 2, 4), R(2, 2, 4))),
    Case("nn.LSTM(3, 4, num_layers=2, dropout=0.5)", R(5, 3), modes=EVAL),
    Case("nn.LSTM(3, 4, proj_size=2)", R(5, 2, 3)),
    Case("nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True, proj_size=3)",
         R(2, 5, 3), Tup(R(4, 2, 3), R(4, 2, 4))),
    Case("nn.GRU(3, 4, num_layers=2)", R(5, 3), R(2, 4), id="GRU-unbatched"),
    Case("nn.GRU(3, 4, bidirectional=True)", R(5, 2, 3)),
    Case("nn.GRU(3, 4, num_layers=2, bias=False)", R(5, 2, 3), R(2, 2, 4)),
    Case("nn.RNN(3, 4)", R(5, 2, 3)),
    Case("nn.RNN(3, 4, nonlinearity='relu', batch_first=True)", R(2, 5, 3), R(1, 2, 4)),
    Case("nn.RNNCell(3, 4)", R(2, 3)),
    Case("nn.RNNCell(3, 4, nonlinearity='relu')", R(2, 3), R(2, 4)),
    Case("nn.RNNCell(3, 4, bias=False)", R(3), R(4)),
    Case("nn.LSTMCell(3, 4)", R(2, 3)),
    Case("nn.LSTMCell(3, 4)", R(2, 3), Tup(R(2, 4), R(2, 4)), id="LSTMCell-state"),
    Case("nn.LSTMCell(3, 4, bias=False)", R(3), Tup(R(4), R(4))),
    Case("nn.GRUCell(3, 4)", R(2, 3), R(2, 4)),
    Case("nn.GRUCell(3, 4, bias=False)", R(3)),
    # distances
    Case("nn.CosineSimilarity()", R(3, 5), R(3, 5)),
    Case("nn.CosineSimilarity(dim=0, eps=1e-6)", R(3, 5), R(1, 5)),
    Case("nn.PairwiseDistance()", R(3, 5), R(3, 5)),
    Case("nn.PairwiseDistance(p=1.0, keepdim=True)", R(3, 5), R(3, 5)),
    Case("nn.PairwiseDistance(p=3.0, eps=1e-4)", R(5), R(3, 5)),
    # empty batches
    Case("nn.Linear(4, 3)", R(0, 4), id="Linear-empty"),
    Case("nn.Conv2d(2, 3, 3, padding=1)", R(0, 2, 5, 5), id="Conv2d-empty"),
    Case("nn.ConvTranspose1d(2, 3, 3)", R(0, 2, 5), id="ConvTranspose1d-empty"),
    Case("nn.MaxPool2d(2)", R(0, 2, 4, 4), id="MaxPool2d-empty"),
    Case("nn.AvgPool3d(2)", R(0, 2, 4, 4, 4), id="AvgPool3d-empty"),
    Case("nn.AdaptiveAvgPool2d(2)", R(0, 2, 4, 4), id="AdaptiveAvgPool2d-empty"),
    Case("nn.BatchNorm2d(2)", R(0, 2, 3, 3), modes=EVAL, id="BatchNorm2d-empty"),
    Case("nn.LayerNorm(5)", R(0, 5), id="LayerNorm-empty"),
    Case("nn.GroupNorm(2, 4)", R(0, 4, 3), id="GroupNorm-empty"),
    Case("nn.Embedding(7, 3)", K(np.zeros((0, 2), dtype=np.int64)), id="Embedding-empty"),
    Case("nn.LSTM(3, 4)", R(5, 0, 3), id="LSTM-empty"),
    Case("nn.MultiheadAttention(8, 2, batch_first=True)", R(0, 5, 8), Same(0), Same(0),
         id="MHA-empty"),
    L("nn.CrossEntropyLoss(reduction='sum')", R(0, 5), K(np.zeros(0, dtype=np.int64)),
      id="CrossEntropyLoss-empty"),
    L("nn.MSELoss(reduction='sum')", R(0, 3), R(0, 3), id="MSELoss-empty"),
    # dropout
    Case("nn.Dropout(0.5)", R(2, 3, 4), modes=EVAL),
    Case("nn.Dropout(0.0)", R(2, 3, 4)),
    Case("nn.Dropout(1.0)", R(2, 3, 4)),
    *[Case(f"nn.{name}(0.5)", R(*shape), modes=EVAL) for name, shape in (
        ("Dropout1d", (2, 3, 4)), ("Dropout2d", (2, 3, 4, 5)), ("Dropout3d", (3, 4, 5, 2)),
        ("AlphaDropout", (2, 3, 4)), ("FeatureAlphaDropout", (2, 3, 4, 5)))],
    # losses
    L("nn.L1Loss()", R(3, 4), R(3, 4)),
    L("nn.L1Loss(reduction='sum')", R(3, 4), R(3, 4)),
    L("nn.MSELoss()", R(3, 4), R(3, 4)),
    L("nn.MSELoss(reduction='none')", R(3, 4), R(3, 4, grad=False)),
    L("nn.SmoothL1Loss()", R(3, 4), R(3, 4)),
    L("nn.SmoothL1Loss(beta=0.5, reduction='sum')", R(3, 4), R(3, 4)),
    L("nn.HuberLoss()", R(3, 4, scale=2.0), R(3, 4)),
    L("nn.HuberLoss(delta=0.5, reduction='none')", R(3, 4), R(3, 4)),
    L("nn.CrossEntropyLoss()", R(4, 5), Int(5, 4)),
    L("nn.CrossEntropyLoss(weight=T([1.0, 2.0, 0.5, 1.0, 3.0]))", R(4, 5), Int(5, 4)),
    L("nn.CrossEntropyLoss(ignore_index=1)", R(5, 5), K([1, 0, 1, 4, 2])),
    L("nn.CrossEntropyLoss(label_smoothing=0.1)", R(4, 5), Int(5, 4)),
    L("nn.CrossEntropyLoss(weight=T([1.0, 2.0, 0.5, 1.0, 3.0]), ignore_index=3, "
      "label_smoothing=0.2)", R(5, 5), K([1, 3, 0, 4, 2])),
    L("nn.CrossEntropyLoss(reduction='none', ignore_index=0)", R(4, 5), K([0, 1, 2, 0])),
    L("nn.CrossEntropyLoss(weight=T([1.0, 2.0, 0.5]), reduction='sum')", R(2, 3, 4, 2),
      Int(3, 2, 4, 2)),
    L("nn.CrossEntropyLoss()", R(4, 5), SM(4, 5), id="CrossEntropyLoss-probabilities"),
    L("nn.CrossEntropyLoss(weight=T([1.0, 2.0, 0.5, 1.0, 3.0]), label_smoothing=0.3)",
      R(4, 5), SM(4, 5), id="CrossEntropyLoss-probabilities-weighted"),
    L("nn.CrossEntropyLoss()", R(5), K(2), id="CrossEntropyLoss-unbatched"),
    L("nn.CrossEntropyLoss(label_smoothing=0.2, reduction='none')", R(2, 3, 4),
      SM(2, 3, 4, axis=1), id="CrossEntropyLoss-probabilities-kdim"),
    L("nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)", R(2, 3, 4),
      K([[0, 1, 2, 2], [1, 0, 0, 2]]), id="CrossEntropyLoss-kdim-ignore"),
    L("nn.NLLLoss()", LS(5), K(3), id="NLLLoss-unbatched"),
    L("nn.NLLLoss()", LS(4, 5), Int(5, 4)),
    L("nn.NLLLoss(weight=T([1.0, 2.0, 0.5, 1.0, 3.0]), ignore_index=2)", LS(5, 5),
      K([2, 0, 1, 4, 2])),
    L("nn.NLLLoss(reduction='sum')", LS(2, 3, 4, axis=1), Int(3, 2, 4)),
    L("nn.NLLLoss(reduction='none', weight=T([1.0, 2.0, 0.5]))", LS(4, 3), Int(3, 4)),
    L("nn.BCELoss()", U(3, 4, lo=0.05, hi=0.95), U(3, 4, grad=False)),
    L("nn.BCELoss(weight=T([1.0, 2.0, 0.5, 3.0]), reduction='none')",
      U(3, 4, lo=0.05, hi=0.95), U(3, 4, grad=False)),
    L("nn.BCEWithLogitsLoss()", R(3, 4), U(3, 4, grad=False)),
    L("nn.BCEWithLogitsLoss(pos_weight=T([1.0, 2.0, 0.5, 3.0]))", R(3, 4), U(3, 4)),
    L("nn.BCEWithLogitsLoss(weight=T([1.0, 2.0, 0.5, 3.0]), pos_weight=T([2.0]), "
      "reduction='sum')", R(3, 4), U(3, 4, grad=False)),
    L("nn.KLDivLoss(reduction='batchmean')", LS(3, 4), SM(3, 4, grad=True)),
    L("nn.KLDivLoss(reduction='batchmean', log_target=True)", LS(3, 4), LS(3, 4)),
    L("nn.KLDivLoss()", LS(3, 4), SM(3, 4)),
    L("nn.KLDivLoss(reduction='none')", LS(3, 4), SM(3, 4, grad=True)),
    L("nn.CTCLoss()", R(6, 2, 4), K([[1, 2, 1], [3, 3, 0]]), K([6, 5]), K([3, 2]),
      prep="nn.LogSoftmax(2)"),
    L("nn.CTCLoss(blank=3, reduction='sum')", R(6, 2, 4), K([0, 1, 2, 1]), K([6, 6]),
      K([3, 1]), prep="nn.LogSoftmax(2)"),
    L("nn.CTCLoss(zero_infinity=True, reduction='none')", R(3, 2, 4), K([[1, 1, 1], [2, 3, 0]]),
      K([3, 3]), K([3, 2]), prep="nn.LogSoftmax(2)"),
    L("nn.PoissonNLLLoss()", R(3, 4), U(3, 4, hi=3.0, grad=False)),
    L("nn.PoissonNLLLoss(log_input=False, full=True)", U(3, 4, lo=0.5, hi=2.0),
      U(3, 4, hi=4.0, grad=False)),
    L("nn.GaussianNLLLoss()", R(3, 4), R(3, 4), U(3, 4, lo=0.5, hi=2.0)),
    L("nn.GaussianNLLLoss(full=True, reduction='sum')", R(3, 4), R(3, 4),
      U(3, 1, lo=0.5, hi=2.0)),
    L("nn.GaussianNLLLoss(reduction='none', eps=0.1)", R(3, 4), R(3, 4),
      U(3, lo=0.01, hi=2.0)),
    L("nn.MarginRankingLoss(margin=0.2)", R(5), R(5), PM(5)),
    L("nn.HingeEmbeddingLoss(margin=0.5)", R(3, 4), PM(3, 4)),
    L("nn.SoftMarginLoss()", R(3, 4), PM(3, 4)),
    L("nn.MultiLabelMarginLoss()", R(3, 4), K([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0]])),
    L("nn.MultiLabelSoftMarginLoss()", R(3, 4), K([[1.0, 0, 0, 1], [0, 1, 1, 1], [0, 0, 0, 1]])),
    L("nn.MultiLabelSoftMarginLoss(weight=T([1.0, 2.0, 0.5, 3.0]), reduction='none')",
      R(3, 4), U(3, 4, grad=False)),
    L("nn.MultiMarginLoss()", R(3, 4), Int(4, 3)),
    L("nn.MultiMarginLoss(p=2, margin=0.5, weight=T([1.0, 2.0, 0.5, 3.0]))", R(3, 4),
      Int(4, 3)),
    L("nn.CosineEmbeddingLoss(margin=0.1)", R(3, 5), R(3, 5), PM(3)),
    L("nn.TripletMarginLoss()", R(3, 5), R(3, 5), R(3, 5)),
    L("nn.TripletMarginLoss(margin=0.5, p=1, swap=True)", R(3, 5), R(3, 5), R(3, 5)),
    L("nn.TripletMarginWithDistanceLoss()", R(3, 5), R(3, 5), R(3, 5)),
    L("nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance(p=1.0), "
      "margin=0.3, swap=True)", R(3, 5), R(3, 5), R(3, 5)),
]
assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"

# ----------------------------------------------------------------------------- the check
# (rtol, atol) of values and of gradients; float16 tolerances scale with the largest value
TOL = {"float64": ((1e-9, 1e-11), (1e-8, 1e-10)), "float32": ((1e-5, 1e-5), (1e-4, 1e-5)),
       "float16": ((1e-2, 1e-2), (2e-2, 2e-2))}
TORCH_DTYPE = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float32}


def _build(case):
    ours = eval(case.src, {"nn": nn, "T": mg.tensor})
    ref = eval(case.src, {"nn": TN, "T": torch.tensor})
    prep = None if case.prep is None else (eval(case.prep, {"nn": nn}),
                                           eval(case.prep, {"nn": TN}))
    return ours, ref, prep


def _inputs(specs, dtype, rng):
    """(minigrad args, PyTorch args, [(ours, theirs) leaves that require grad])"""
    mine, theirs, leaves = [], [], []
    for spec in specs:
        if isinstance(spec, Same):
            mine.append(mine[spec.index])
            theirs.append(theirs[spec.index])
        elif isinstance(spec, Tup):
            m, t, g = _inputs(spec.items, dtype, rng)
            mine.append(tuple(m))
            theirs.append(tuple(t))
            leaves += g
        else:
            a = spec.make(rng)
            if spec.kind == "f":
                a = a.astype(dtype)
                m = mg.tensor(a, requires_grad=spec.grad)
                t = torch.tensor(a.astype(np.float32) if dtype == "float16" else a,
                                 requires_grad=spec.grad)
                if spec.grad:
                    leaves.append((m, t))
            else:
                m, t = mg.tensor(a), torch.tensor(a)
            mine.append(m)
            theirs.append(t)
    return mine, theirs, leaves


def _leaves(out):
    if out is None:
        return []
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    return [out]


def _close(ours, theirs, tol, what, dtype):
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    ours = ours.numpy() if isinstance(ours, mg.Tensor) else ours
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, PyTorch {theirs.shape}"
    rtol, atol = tol
    if dtype == "float16":
        atol *= max(1.0, float(np.abs(theirs).max(initial=0.0)))
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=rtol,
                               atol=atol, err_msg=what)


def _expected_dtype(t, case, dtype):
    if not t.dtype.is_floating_point:
        return str(t.dtype).replace("torch.", "")
    return "float32" if dtype == "float16" and case.loss else dtype


# float32 in every mode; float64 and float16 in the first (training, where it is compared)
PARAMS = [pytest.param(case, mode, dtype, id=f"{case.id}-{mode}-{dtype}", marks=case.marks)
          for case in CASES for dtype in case.dtypes
          for mode in (case.modes if dtype == "float32" else case.modes[:1])]


@pytest.mark.parametrize("case,mode,dtype", PARAMS)
def test_module_follows_pytorch(case, mode, dtype):
    mg.manual_seed(0)
    torch.manual_seed(0)
    ours, ref, prep = _build(case)
    ref.to(TORCH_DTYPE[dtype])
    ours.to(dtype)
    state = {k: v.detach().numpy() for k, v in ref.state_dict().items()}
    if dtype == "float16":  # both sides hold the float16-rounded weights
        state = {k: v.astype(np.float16) if v.dtype.kind == "f" else v for k, v in state.items()}
        ref.load_state_dict({k: torch.tensor(v.astype(np.float32) if v.dtype == np.float16
                                             else v) for k, v in state.items()})
    ours.load_state_dict(state)
    getattr(ours, mode)()
    getattr(ref, mode)()

    rng = np.random.default_rng(3)
    xm, xt, grad_leaves = _inputs(case.inputs, dtype, rng)
    kwm, kwt = {}, {}
    for k, spec in case.kw.items():   # plain Python values go to both sides as they are
        if isinstance(spec, In):
            (kwm[k],), (kwt[k],), _ = _inputs([spec], dtype, rng)
        else:
            kwm[k] = kwt[k] = spec
    if prep is not None:
        xm[0], xt[0] = prep[0](xm[0]), prep[1](xt[0])
    outs_m = _leaves(ours(*xm, **kwm))
    with warnings.catch_warnings():  # PyTorch's own advice (KLDivLoss's "mean", ...)
        warnings.simplefilter("ignore")
        outs_t = _leaves(ref(*xt, **kwt))
    assert len(outs_m) == len(outs_t), f"{len(outs_m)} outputs, PyTorch {len(outs_t)}"
    factor = case.tol.get(dtype, 1.0)
    tol, gtol = (tuple(factor * t for t in pair) for pair in TOL[dtype])
    cots = []
    for i, (ym, yt) in enumerate(zip(outs_m, outs_t)):
        assert str(ym.dtype) == _expected_dtype(yt, case, dtype), \
            f"output {i}: dtype {ym.dtype}, expected {_expected_dtype(yt, case, dtype)}"
        _close(ym, yt, tol, f"output {i}", dtype)
        assert ym.requires_grad == yt.requires_grad, f"output {i}: requires_grad"
        if yt.requires_grad:
            cot = rng.standard_normal(tuple(yt.shape)).astype(str(ym.dtype))
            cots.append((ym, yt, cot))
    if not cots:
        return
    sum((ym * mg.tensor(c)).sum() for ym, _, c in cots).backward()
    sum((yt * torch.tensor(c.astype(np.float32) if c.dtype == np.float16 else c)).sum()
        for _, yt, c in cots).backward()

    for i, (m, t) in enumerate(grad_leaves):
        _close(m.grad, t.grad, gtol, f"input {i} grad", dtype)
    theirs = dict(ref.named_parameters())
    for k, p in ours.named_parameters():
        if theirs[k].grad is None:
            assert p.grad is None or not p.grad.numpy().any(), f"{k}: PyTorch has no grad"
        else:
            assert p.grad is not None, f"{k}: no grad, PyTorch has one"
            _close(p.grad, theirs[k].grad, gtol, f"{k} grad", dtype)
    for k, v in ref.state_dict().items():  # running statistics, Embedding's max_norm rows
        if v.dtype.is_floating_point:
            _close(ours.state_dict()[k], v, tol, f"{k} after the step", dtype)
