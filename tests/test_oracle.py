"""PyTorch as the oracle, driven by the op table: every sample of every op mapped below is run
in minigrad and in PyTorch (CPU) on the same inputs in float64, float32, float16, bfloat16
(ml_dtypes' and torch.bfloat16, exchanged through float32), int64, int32 and bool, comparing
raise-vs-raise, result dtypes, shapes and values of every output (NaN positions equal), the
inputs after the call (running statistics written in place) and the gradients of random
cotangents. A mismatch fails unless it is a row of ``DEVIATIONS`` (ops, input dtype, what
differs, why), each also listed in docs/migrating.md. Skips, saying so, without PyTorch (CI
installs the ``oracle`` extra). Every op of the table is mapped or listed in ``NOT_MAPPED``
with why (a test checks the two cover the table exactly)."""

import ml_dtypes
import numpy as np
import pytest

import minigrad as mg
from minigrad.testing.op_table import op_table

torch = pytest.importorskip("torch")
TF = torch.nn.functional

_DIM = {"axis": "dim", "keepdims": "keepdim", "ddof": "correction"}


def _reduction(fn, defaults=None):
    """A reduction called with PyTorch's keyword names (``dim``/``keepdim``); ``dim=None``
    is dropped where the PyTorch function has no such default."""
    def call(x, **kw):
        kw = {_DIM.get(k, k): v for k, v in {**(defaults or {}), **kw}.items()}
        if kw.get("dim", 0) is None:
            kw.pop("dim")
            kw.pop("keepdim", None)
        return fn(x, **kw)
    return call


def _max(fn):
    def call(x, axis=None, keepdims=False, return_indices=False):
        if axis is None:
            return fn(x)
        if return_indices:                       # torch.max(x, dim): (values, indices)
            return tuple(fn(x, dim=axis, keepdim=keepdims))
        return (torch.amax if fn is torch.max else torch.amin)(x, dim=axis, keepdim=keepdims)
    return call


def _prod(x, dim=None, keepdim=False):
    if dim is None:
        return torch.prod(x)
    for d in sorted((dim,) if isinstance(dim, int) else dim, key=lambda d: -(d % x.ndim)):
        x = torch.prod(x, dim=d, keepdim=keepdim)  # one axis at a time (PyTorch's prod)
    return x


def _topk(x, k, largest, kth_only, dim):
    values, indices = torch.topk(x, k, dim=dim, largest=largest)
    if kth_only:
        return values.select(dim, k - 1), indices.select(dim, k - 1)
    return values, indices


def _pad(x, pad_width, mode="constant", value=0.0, constant_value=None):
    """NumPy-style ``((before, after), ...)`` per axis as PyTorch's flat last-axis-first list;
    the non-constant modes pad only trailing axes of a (batch, channel, *spatial) input, so
    the unpadded leading axes are folded into one channel axis around the call."""
    value = value if constant_value is None else constant_value
    widths = [tuple(w) for w in pad_width]
    flat = [v for w in reversed(widths) for v in w]
    if mode == "constant":
        return TF.pad(x, flat, value=value)
    k = len(widths) - next((i for i, w in enumerate(widths) if any(w)), len(widths))
    lead, tail = x.shape[:x.ndim - k], x.shape[x.ndim - k:]
    y = TF.pad(x.reshape(1, -1, *tail), flat[:2 * k], mode=mode)
    return y.reshape(*lead, *y.shape[2:])


def _convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    n = x.ndim - 2
    per_axis = lambda v: list(v) if isinstance(v, (tuple, list)) else [v] * n  # noqa: E731
    return torch.convolution(x, w, b, per_axis(stride), per_axis(padding), per_axis(dilation),
                             transposed, per_axis(output_padding), groups)


def _resample(mode, align_corners=None):
    """``upsample_<mode>(x, size, scale_factor[, align_corners])`` as PyTorch's interpolate."""
    def call(x, size=None, scale_factor=None, align_corners=align_corners):
        return TF.interpolate(x, size, scale_factor, mode=mode, align_corners=align_corners)
    return call


def _cell(fn):
    """A recurrent cell as PyTorch's nn.RNNCell/LSTMCell/GRUCell call it: an unbatched (1-D)
    input runs as a batch of one (``torch.rnn_tanh_cell`` itself wants 2-D)."""
    def call(x, hx, *weights):
        state = list(hx) if isinstance(hx, tuple) else hx
        if x.ndim != 1:
            y = fn(x, state, *weights)
            return tuple(y) if isinstance(y, tuple) else y
        state = [s[None] for s in state] if isinstance(state, list) else state[None]
        y = fn(x[None], state, *weights)
        return tuple(t[0] for t in y) if isinstance(y, tuple) else y[0]
    return call


def _index_put(x, indices, values, accumulate=False):
    return torch.index_put(x, tuple(torch.as_tensor(i) for i in indices), values, accumulate)


def _mge_batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, *,
                    training=False, momentum=0.9, eps=1e-5, inplace=True):
    """MegEngine's F.nn.batch_norm: ``momentum`` keeps that share of the running statistics
    (PyTorch's is the share of the new one); ``inplace=False`` returns the updated statistics
    instead of writing them."""
    if not inplace:
        running_mean, running_var = running_mean.clone(), running_var.clone()
    y = TF.batch_norm(x, running_mean, running_var, weight, bias, training, 1 - momentum, eps)
    return y if inplace else (y, running_mean, running_var)


def _mge_cross_entropy(pred, label, axis=1, with_logits=True, label_smooth=0.0, **kw):
    if pred.ndim > 1:   # the class axis where PyTorch wants it (soft labels move with it)
        label = label.movedim(axis, 1) if label.shape == pred.shape else label
        pred = pred.movedim(axis, 1)
    if not with_logits:
        pred = pred.log()
    return TF.cross_entropy(pred, label, label_smoothing=kw.pop("label_smoothing", label_smooth),
                            **kw)


def _mge_normalize(x, ord=None, axis=None, eps=1e-12):
    """MegEngine's F.nn.normalize: the norm of all elements unless an axis is given."""
    if axis is None:
        return TF.normalize(x.reshape(-1), 2 if ord is None else ord, 0, eps).reshape(x.shape)
    return TF.normalize(x, 2 if ord is None else ord, axis, eps)


# minigrad op name -> the PyTorch callable taking the same positional arguments
ORACLE = {
    **{n: getattr(torch, n) for n in (
        "abs cos exp expm1 log log1p neg rsqrt sigmoid sign sin sqrt square tanh log2 log10 "
        "acos asin cosh sinh tan reciprocal erfinv add sub mul div maximum minimum pow atan2 "
        "logical_and logical_or logical_not isfinite isinf isnan").split()},
    "erf": torch.special.erf,
    "relu": torch.relu, "gelu": TF.gelu, "silu": TF.silu, "softplus": TF.softplus,
    "leaky_relu": TF.leaky_relu,
    "equal": torch.eq, "not_equal": torch.ne, "greater": torch.gt, "greater_equal": torch.ge,
    "less": torch.lt, "less_equal": torch.le,
    "sum": _reduction(torch.sum), "mean": _reduction(torch.mean),
    "prod": _reduction(_prod),
    "logsumexp": _reduction(lambda x, **kw: torch.logsumexp(
        x, dim=kw.get("dim", tuple(range(x.ndim))), keepdim=kw.get("keepdim", False))),
    "var": _reduction(torch.var, {"ddof": 0}), "std": _reduction(torch.std, {"ddof": 0}),
    "max": _max(torch.max), "min": _max(torch.min),
    # products, losses, normalization: the same positional arguments
    **{n: getattr(torch, n) for n in "matmul bmm dot mm mv addcmul addcdiv".split()},
    **{n: getattr(TF, n) for n in (
        "linear mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy "
        "binary_cross_entropy_with_logits kl_div soft_margin_loss margin_ranking_loss "
        "cross_entropy nll_loss layer_norm prelu").split()},
    "softmax": lambda x, axis=-1: torch.softmax(x, dim=axis),
    "log_softmax": lambda x, axis=-1: torch.log_softmax(x, dim=axis),
    "clip": lambda x, lower=None, upper=None: torch.clamp(x, lower, upper),
    "where": torch.where,
    # shape ops
    "reshape": torch.reshape, "squeeze": torch.squeeze, "flatten": torch.flatten,
    "broadcast_to": torch.broadcast_to, "swapaxes": torch.swapaxes, "tile": torch.tile,
    "expand_dims": torch.unsqueeze, "gather": torch.gather, "index_select": torch.index_select,
    "concat": lambda xs, axis=0: torch.cat(xs, dim=axis),
    "stack": lambda xs, axis=0: torch.stack(xs, dim=axis),
    "permute": lambda x, axes: x.permute(*axes),
    "transpose": lambda x, axes=None: x.permute(*(axes or reversed(range(x.ndim)))),
    "repeat": lambda x, repeats, axis=None: torch.repeat_interleave(x, repeats, dim=axis),
    "cumsum": lambda x, axis=None: torch.cumsum(x if axis is not None else x.flatten(),
                                                0 if axis is None else axis),
    # convolutions, pooling, normalization, embedding, distances, attention, BLAS
    **{n: getattr(TF, n) for n in (
        "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d max_pool2d "
        "avg_pool2d adaptive_avg_pool2d batch_norm group_norm embedding pdist bilinear "
        "scaled_dot_product_attention hinge_embedding_loss multilabel_margin_loss "
        "multi_margin_loss triplet_margin_loss cosine_embedding_loss poisson_nll_loss").split()},
    **{n: getattr(torch, n) for n in "dist cdist renorm einsum tensordot addmm addmv addr "
                                     "baddbmm addbmm".split()},
    "one_hot": lambda x, n: TF.one_hot(x, n),
    "vdot": torch.vdot, "scatter_add": torch.scatter_add, "interpolate": TF.interpolate,
    "multi_dot": torch.linalg.multi_dot, "linalg_multi_dot": torch.linalg.multi_dot,
    "chain_matmul": lambda *ms: torch.linalg.multi_dot(list(ms)) if len(ms) > 1 else ms[0].clone(),
    "norm": _reduction(lambda x, ord=2, **kw: torch.linalg.vector_norm(x, ord, **kw)),
    "cross": lambda a, b, dim=None: torch.cross(a, b, dim=dim),
    "vector_norm": torch.linalg.vector_norm, "matrix_norm": torch.linalg.matrix_norm,
    "argmax": _reduction(torch.argmax), "argmin": _reduction(torch.argmin),
    # sorting: F's spellings are MegEngine's (descending before dim, topk's largest first)
    "sort": lambda x, descending=False, dim=-1: tuple(torch.sort(
        x, dim=dim, descending=descending, stable=True)),
    "argsort": lambda x, descending=False, dim=-1: torch.argsort(
        x, dim=dim, descending=descending, stable=True),
    "topk": lambda x, k, descending=True, kth_only=False, dim=-1: _topk(x, k, descending,
                                                                         kth_only, dim),
    "kthvalue": lambda x, k, axis=-1, keepdims=False: tuple(torch.kthvalue(
        x, k, dim=axis, keepdim=keepdims)),
    "median": lambda x, axis=None, keepdims=False: torch.median(x) if axis is None else tuple(
        torch.median(x, dim=axis, keepdim=keepdims)),
    "mode": lambda x, axis=-1, keepdims=False: tuple(torch.mode(x, dim=axis, keepdim=keepdims)),
    "cosine_similarity": lambda a, b, axis=1: TF.cosine_similarity(a, b, dim=axis),
    "cumprod": lambda x, axis=None, dim=None: torch.cumprod(
        x if (axis if dim is None else dim) is not None else x.flatten(),
        0 if (axis if dim is None else dim) is None else (axis if dim is None else dim)),
    # issue 21: the policy table's names that had no op
    **{n: getattr(torch, n) for n in (
        "atan exp2 floor ceil trunc round copysign fmod remainder hypot lerp logical_xor "
        "roll").split()},
    **{n: getattr(TF, n) for n in (
        "elu celu selu relu6 hardtanh hardsigmoid hardswish mish logsigmoid normalize").split()},
    **{n: getattr(TF, n) for n in (
        "softsign tanhshrink softshrink hardshrink threshold glu rrelu").split()},
    **{n: getattr(TF, n) for n in (
        "pairwise_distance rms_norm dropout1d dropout2d dropout3d "
        "alpha_dropout feature_alpha_dropout").split()},
    **{n: getattr(TF, n) for n in (
        "max_pool3d avg_pool3d lp_pool1d lp_pool2d lp_pool3d adaptive_avg_pool1d "
        "adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool3d max_unpool1d max_unpool2d "
        "max_unpool3d").split()},
    **{n: getattr(TF, n) for n in (
        "gaussian_nll_loss multilabel_soft_margin_loss triplet_margin_with_distance_loss "
        "channel_shuffle").split()},
    "embedding_bag": TF.embedding_bag,
    "softmin": lambda x, axis=-1: TF.softmin(x, dim=axis),
    "flip": lambda x, axis=None: torch.flip(
        x, tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis),
    "take_along_axis": torch.take_along_dim, "index_add": torch.index_add,
    # PyTorch's pixel_unshuffle returns an empty input unchanged (its shape too): compared
    # with the shape it should have
    "pixel_unshuffle": lambda x, r: TF.pixel_unshuffle(x, r) if x.numel() else x.reshape(
        *x.shape[:-3], x.shape[-3] * r * r, x.shape[-2] // r, x.shape[-1] // r),
    "max_pool1d": TF.max_pool1d, "avg_pool1d": TF.avg_pool1d,
    "adaptive_max_pool2d": TF.adaptive_max_pool2d, "pixel_shuffle": TF.pixel_shuffle,
    "instance_norm": TF.instance_norm, "local_response_norm": TF.local_response_norm,
    "unfold": TF.unfold, "fold": TF.fold, "ctc_loss": TF.ctc_loss,
    "cummax": lambda x, axis=None, dim=None: tuple(torch.cummax(x, dim if axis is None else axis)),
    "cummin": lambda x, axis=None, dim=None: tuple(torch.cummin(x, dim if axis is None else axis)),
    "gru_cell": _cell(torch.gru_cell), "clone": torch.clone,
    # recurrent cells: PyTorch's take the same (input, hx, w_ih, w_hh, b_ih, b_hh)
    "lstm_cell": _cell(torch.lstm_cell), "rnn_tanh_cell": _cell(torch.rnn_tanh_cell),
    "rnn_relu_cell": _cell(torch.rnn_relu_cell),
    "convolution": _convolution, "grid_sample": TF.grid_sample, "index_put": _index_put,
    "upsample": TF.upsample, "upsample_nearest": TF.upsample_nearest,
    "upsample_bilinear": TF.upsample_bilinear, "upsample_linear": _resample("linear", False),
    "upsample_bicubic": _resample("bicubic", False),
    "upsample_trilinear": _resample("trilinear", False),
    # shape, cast and copy ops
    "getitem": lambda x, index: x[index], "pad": _pad, "nn.pad": _pad,
    "split": lambda x, sections, axis=0: torch.tensor_split(x, sections, dim=axis),
    "cast": lambda x, dtype: x.to(getattr(torch, dtype)), "detach": torch.detach,
    "to_device": lambda x, device: x.to(device),
    "dropout": lambda x, p=0.5, training=True: TF.dropout(x, p, training),
    # MegEngine's F.nn spellings
    "nn.avg_pool2d": lambda x, kernel_size, stride=None, padding=0,
    mode="average_count_exclude_padding": TF.avg_pool2d(
        x, kernel_size, stride, padding, count_include_pad=mode == "average"),
    "nn.batch_norm": _mge_batch_norm, "nn.cross_entropy": _mge_cross_entropy,
    "nn.binary_cross_entropy": lambda pred, label, with_logits=True, reduction="mean": (
        TF.binary_cross_entropy_with_logits if with_logits else TF.binary_cross_entropy)(
        pred, label, reduction=reduction),
    "nn.group_norm": lambda x, groups, affine=True, weight=None, bias=None, eps=1e-5:
        TF.group_norm(x, groups, weight if affine else None, bias if affine else None, eps),
    "nn.layer_norm": lambda x, shape, affine=True, weight=None, bias=None, eps=1e-5:
        TF.layer_norm(x, shape, weight if affine else None, bias if affine else None, eps),
    "nn.interpolate": lambda x, size=None, scale_factor=None, mode="bilinear",
    align_corners=None: TF.interpolate(x, size, scale_factor, mode.lower(), align_corners),
    "nn.logsoftmax": lambda x, axis=None: TF.log_softmax(x, axis),  # None: PyTorch's implicit
    "nn.normalize": _mge_normalize, "nn.square_loss": TF.mse_loss,
}
# Ops of the table with no PyTorch counterpart to compare with: op -> why.
NOT_MAPPED: dict = {}
# Samples whose values are random draws: only raise-vs-raise, shapes and dtypes are compared.
RANDOM = {(op, "p05"): "each call draws its own mask (minigrad's generator is not "
                       "PyTorch's)"
          for op in ("dropout dropout1d dropout2d dropout3d alpha_dropout "
                     "feature_alpha_dropout").split()}
_LOSSES = frozenset(
    "mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy kl_div soft_margin_loss "
    "binary_cross_entropy_with_logits margin_ranking_loss cross_entropy nll_loss "
    "poisson_nll_loss hinge_embedding_loss triplet_margin_loss cosine_embedding_loss "
    "multilabel_margin_loss multi_margin_loss nn.cross_entropy nn.binary_cross_entropy "
    "nn.square_loss gaussian_nll_loss multilabel_soft_margin_loss "
    "triplet_margin_with_distance_loss".split())
_RESAMPLING = frozenset("interpolate nn.interpolate upsample upsample_nearest upsample_linear "
                        "upsample_bilinear upsample_bicubic upsample_trilinear "
                        "grid_sample".split())
_FLOAT_ON_INTEGERS = frozenset(
    "mean gelu silu softplus prelu addcdiv huber_loss soft_margin_loss softmax log_softmax "
    "hinge_embedding_loss multilabel_margin_loss multi_margin_loss gaussian_nll_loss".split()
) | _RESAMPLING
_SCALED_PRODUCTS = frozenset("addcmul addmm addmv addr baddbmm addbmm hinge_embedding_loss "
                             "multilabel_margin_loss multi_margin_loss".split())
_INTEGERS = (np.int64, np.int32)
_NON_FLOAT = _INTEGERS + (np.bool_,)
_BF16 = np.dtype(ml_dtypes.bfloat16)
# The deliberate differences, narrow: (ops, input dtype, what differs, why). Values are still
# compared wherever both compute; each row is also in docs/migrating.md.
DEVIATIONS = [
    (_LOSSES, (np.float16, _BF16), "dtype", "a loss of float16 or bfloat16 input is float32 "
                                            "(computed and reduced in float32, as autocast "
                                            "runs losses); PyTorch's is float16 or bfloat16"),
    (_FLOAT_ON_INTEGERS, _NON_FLOAT, "raises", "integer or bool input is computed in float32 "
                                               "(the default float) where PyTorch refuses it"),
    (_SCALED_PRODUCTS, _INTEGERS, "dtype", "integer tensors with float scale factors (value, "
                                          "alpha, beta, margins) give float32, the exact "
                                          "result; PyTorch keeps int64"),
    (frozenset("softmax log_softmax nn.logsoftmax softmin adaptive_avg_pool1d "
               "adaptive_avg_pool2d batch_norm group_norm instance_norm local_response_norm "
               "scaled_dot_product_attention".split()), _NON_FLOAT, "refuses",
     "integer or bool input is refused as float-only (PyTorch computes these ops over empty "
     "tensors)"),
    ({"unfold", "fold"}, _INTEGERS, "raises", "integer input is copied (unfold) or summed "
     "(fold) exactly; PyTorch's CPU im2col/col2im refuse it"),
    ({"local_response_norm"}, (np.float16, _BF16), "raises", "float16 or bfloat16 input of 4 "
     "or more dimensions is computed (in float32); PyTorch's CPU kernel (avg_pool3d) refuses "
     "Half and BFloat16"),
    ({"avg_pool3d", "lp_pool3d"}, (np.float16, _BF16), "raises",
     "float16 and bfloat16 are computed (in float32); PyTorch's CPU avg_pool3d refuses them"),
    ({"pdist", "cdist", "multilabel_margin_loss", "ctc_loss"}, (np.float16, _BF16), "raises",
     "float16 and bfloat16 are computed (in float32); PyTorch's CPU kernels refuse them"),
    (_SCALED_PRODUCTS, _NON_FLOAT, "raises", "integer tensors with a float scale factor are "
                                             "computed in float32; PyTorch refuses some of them"),
    (frozenset("conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d "
               "convolution".split()),
     np.int32, "raises", "int32 convolutions are computed (in int32); PyTorch's CPU kernels "
                         "refuse some of them"),
    (frozenset("relu rnn_relu_cell max_pool2d argmax argmin addcmul dot vdot addbmm".split()),
     np.bool_,
     "raises", "bool input is computed (max, argmax, logical and/or; empty products) where "
               "PyTorch's CPU kernels refuse Bool"),
    ({"topk", "kthvalue", "median"}, np.bool_, "raises",
     "bool input is ordered (False < True) where PyTorch's CPU kernels refuse Bool"),
    ({"multilabel_margin_loss", "multi_margin_loss"}, np.bool_, "refuses",
     "bool input is refused (its margins subtract); PyTorch computes only the empty batch"),
    ({"multi_margin_loss"}, None, "raises", "the class weight gets a gradient; PyTorch refuses "
                                            "a weight that requires grad"),
    ({"cross"}, None, "raises", "operands of different ranks broadcast (PyTorch's linalg.cross "
                                "wants equal ranks)"),
    ({"grid_sample"}, _NON_FLOAT, "dtype", "integer or bool input gives float32 also for an "
                                           "empty batch or grid; PyTorch's empty result keeps "
                                           "the input dtype (it refuses non-empty ones)"),
    ({"pad", "nn.pad"}, np.bool_, "raises", "bool input is padded by reflection (a copy); "
                                            "PyTorch's CPU reflection_pad kernels refuse Bool"),
]


# Which of several equal entries PyTorch's topk/kthvalue/median report is unspecified (its
# selection kernels are not stable); minigrad reports the first in a stable order. On integer
# and bool inputs (where the table's samples have ties) only their values are compared.
_TIE_ORDER = frozenset({"topk", "kthvalue", "median"})


# Where PyTorch's answer is wrong, the exact one: (op, sample) -> value.
EXACT = {
    # the sum over an empty batch: PyTorch's CPU kernels return uninitialised memory
    ("multi_margin_loss", "empty"): 0.0, ("multilabel_margin_loss", "empty"): 0.0,
}
# Where PyTorch's backward raises on a valid call, why: (op, sample) -> reason. minigrad's
# gradient there is checked by the op table's gradcheck.
BROKEN_BACKWARD = {
    ("pixel_shuffle", "empty"): "PyTorch's backward of an empty input returns a gradient of "
                                "the output's shape and raises",
    ("max_unpool2d", "base"): "PyTorch's backward of a non-contiguous (transposed) input "
                              "views its gradient with view() and raises (\"view size is not "
                              "compatible\")",
}
# Where PyTorch's gradient is another function's, why: op -> reason (values still compared).
OTHER_GRADIENT = {
    "ctc_loss": "PyTorch's gradient is the one through a log_softmax over the classes "
                "(pytorch/pytorch#52241), not d loss / d log_probs; minigrad's exact one is "
                "gradchecked by the op table and agrees with PyTorch's through log_softmax "
                "(test_ctc_loss_gradient_through_log_softmax)",
}
# Where PyTorch's float64 gradient is rounded to float32 somewhere, the relative tolerance its
# gradient is compared with (minigrad's is the exact one): op -> rtol.
ROUNDED_GRADIENT = {
    "hardsigmoid": 1e-7,  # PyTorch's backward multiplies by 1/6 rounded to float32
}


def _deviation(op, dtype, what) -> bool:
    return any(op in ops and (d is None or dtype in (d if isinstance(d, tuple) else (d,)))
               and what == w for ops, d, w, _ in DEVIATIONS)


def _closer_to_exact(call, sample, dtype, mine, theirs, grads, out=0):
    """float16/bfloat16 only: where minigrad and PyTorch disagree, whether minigrad is at
    least as close as PyTorch to PyTorch's float64 result on the same (rounded) inputs;
    PyTorch's half-precision kernels are sometimes the odd one (group_norm's backward, seen
    here)."""
    low = _TORCH_DTYPE[np.dtype(dtype)]

    def rounded(a):
        if isinstance(a, (list, tuple)):
            return type(a)(rounded(e) for e in a)
        if isinstance(a, torch.Tensor) and a.dtype.is_floating_point:
            return a.detach().to(low).double().requires_grad_(a.requires_grad)
        return a

    args = rounded(_args(sample, np.float64, torch)[0])
    leaves = [a for a in _tensors(args) if a.requires_grad]
    ys = _outputs(call(*args, **sample.kwargs))
    if grads is None:
        exact = ys[out].detach().numpy()
    else:
        cots, k = grads
        sum((torch.tensor(c.astype(np.float64)) * y).sum() for c, y in zip(cots, ys)
            if c is not None).backward()
        exact = leaves[k].grad.numpy()
    err = lambda v: np.nanmax(np.abs(v.astype(np.float64) - exact)) if v.size else 0.0  # noqa
    return err(mine) <= err(theirs) + _TOL[np.dtype(dtype).name] * (1 if grads is None else 10)


_DTYPES = (np.float64, np.float32, np.int64, np.float16, np.int32, np.bool_, _BF16)
_TORCH_DTYPE = {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32,
                np.dtype(np.float16): torch.float16, _BF16: torch.bfloat16}
# value tolerances (absolute and relative) per result dtype, about two ulps of the low-precision
# dtypes (float16's 2**-10, bfloat16's 2**-7 relative); gradients get ten times these
_TOL = {"float64": 1e-10, "float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2}
_LOW = (np.float16, _BF16)


def _is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f" or np.dtype(dtype) == _BF16


def _cases():
    table = op_table()
    for name, fn in ORACLE.items():
        info = table[name]
        for s in info.samples:
            for dtype in _DTYPES:
                yield pytest.param(info, s, fn, dtype, id=f"{name}-{s.name}-{np.dtype(dtype)}")


def _args(sample, dtype, lib):
    """The sample's arguments in ``lib`` (minigrad or torch): float arrays as ``dtype``
    tensors requiring grad (unless listed const), a list or tuple of arrays (``concat``'s
    input, ``lstm_cell``'s ``(h, c)``, ``index_put``'s indices) as one of such tensors,
    everything else as is."""
    out, leaves = [], []
    for i, a in enumerate(sample.args):
        if isinstance(a, (list, tuple)) and a and all(isinstance(e, np.ndarray) for e in a):
            const = tuple(range(len(a))) if i in sample.const else ()   # as the table's bind
            items, sub = _args(type(sample)(tuple(a), const=const), dtype, lib)
            out.append(type(a)(items))
            leaves += sub
        elif isinstance(a, np.ndarray):
            arr = a.astype(dtype) if a.dtype.kind == "f" else a
            if np.dtype(dtype).kind == "i" and a.dtype.kind == "f":
                arr = np.round(a * 3).astype(dtype)   # integers of the same spread
            if np.dtype(dtype).kind == "b" and a.dtype.kind == "f":
                arr = a > 0
            grad = _is_float(dtype) and a.dtype.kind == "f" and i not in sample.const
            if lib is torch and arr.dtype == _BF16:  # PyTorch reads no ml_dtypes arrays
                t = torch.tensor(arr.astype(np.float32)).to(torch.bfloat16)
                t.requires_grad_(grad)
            elif lib is torch:
                t = torch.tensor(arr, requires_grad=grad)
            else:
                t = mg.tensor(arr, requires_grad=grad)
            out.append(t)
            if grad:
                leaves.append(t)
        else:
            out.append(a)
    return out, leaves


def _run(call, sample, dtype, lib):
    args, leaves = _args(sample, dtype, lib)
    try:
        y = call(*args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001 - compared: both must raise or neither
        return e, None, None, None
    return None, y, leaves, args


def _tensors(args):
    """The tensor arguments, nested lists and tuples flattened."""
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _tensors(a)
        elif isinstance(a, (torch.Tensor, mg.Tensor)):
            yield a


def _np(t):
    """A result as a NumPy array; bfloat16 as float32 (its values exactly)."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    a = t.numpy()
    return a.astype(np.float32) if a.dtype == _BF16 else a


def _outputs(y):
    """A result as a list of tensors: (values, indices), lstm_cell's (h, c), split's pieces."""
    return list(y) if isinstance(y, (tuple, list)) else [y]


def _dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "")


@pytest.mark.parametrize("info,sample,fn,dtype", list(_cases()))
def test_agrees_with_pytorch(info, sample, fn, dtype):
    e_mg, y_mg, l_mg, a_mg = _run(info.op, sample, dtype, mg)
    if (info.name, sample.name) in EXACT and _is_float(dtype):
        assert e_mg is None and float(y_mg.item()) == EXACT[info.name, sample.name]
        return
    e_pt, y_pt, l_pt, a_pt = _run(fn, sample, dtype, torch)
    if e_pt is not None and e_mg is None and _deviation(info.name, dtype, "raises"):
        return
    if e_mg is not None and e_pt is None and _deviation(info.name, dtype, "refuses"):
        return
    assert (e_mg is None) == (e_pt is None), (
        f"{info.name}: minigrad {'raised ' + repr(e_mg) if e_mg else 'computed'}, PyTorch "
        f"{'raised ' + repr(e_pt) if e_pt else 'computed'}")
    if e_mg is not None:
        return
    for k, (m, p) in enumerate(zip(_tensors(a_mg), _tensors(a_pt))):  # written in place:
        _compare(_np(m), _np(p), _TOL.get(_dtype_name(p), 0),   # batch_norm's statistics
                 f"{info.name} {sample.name} input {k} after the call", lambda: False)
    ys_mg, ys_pt = _outputs(y_mg), _outputs(y_pt)
    assert len(ys_mg) == len(ys_pt), f"{info.name}: {len(ys_mg)} outputs vs {len(ys_pt)}"
    # ties: which of several equal entries is reported is unspecified; compare the values only
    ties = info.name in _TIE_ORDER and np.dtype(dtype).kind in "iub"
    random = (info.name, sample.name) in RANDOM
    floats = []        # (k, minigrad's, PyTorch's, tolerance) of the differentiable outputs
    for k, (m, p) in enumerate(zip(ys_mg, ys_pt)):
        a, b = _np(m), _np(p)
        what = f"{info.name} {sample.name} output {k}"
        assert a.shape == b.shape, f"{what}: shape {a.shape} vs PyTorch {b.shape}"
        assert _dtype_name(m) == _dtype_name(p) or _deviation(info.name, dtype, "dtype"), (
            f"{what}: dtype {m.dtype} vs PyTorch {p.dtype}")
        if random or (ties and k) or a.dtype.kind != b.dtype.kind:
            continue  # a listed dtype row across categories (float vs int): PyTorch's
            #           integer arithmetic is not the value to match
        tol = max(_TOL.get(_dtype_name(p), 0), _TOL.get(_dtype_name(m), 0) if
                  _TOL.get(_dtype_name(p)) else 0)   # compared at the coarser of the two
        _compare(a, b, tol, f"{what} value",
                 lambda: dtype in _LOW and _closer_to_exact(fn, sample, dtype, a, b, None, k))
        if p.requires_grad and p.dtype.is_floating_point:
            floats.append((k, m, p, b, tol))
    if not l_mg or not floats or info.name in OTHER_GRADIENT:
        return
    rng = np.random.default_rng(0)
    cots = [None] * len(ys_pt)
    loss_mg = loss_pt = 0
    for k, m, p, b, _ in floats:
        cot = rng.standard_normal(b.shape).astype(b.dtype)
        if p.dtype == torch.bfloat16:   # a cotangent PyTorch and minigrad hold exactly
            cot = cot.astype(_BF16).astype(np.float32)
        cots[k] = cot
        loss_mg = loss_mg + ((mg.tensor(cot) * m).sum() if m.ndim else m * float(cot))
        loss_pt = loss_pt + (torch.tensor(cot) * p).sum()
    loss_mg.backward()
    try:
        loss_pt.backward()
    except NotImplementedError:  # a backward PyTorch lacks for this dtype (listed above)
        assert _deviation(info.name, dtype, "raises"), f"{info.name}: PyTorch has no backward"
        return
    except RuntimeError:  # a backward PyTorch gets wrong (listed): minigrad's is checked
        assert (info.name, sample.name) in BROKEN_BACKWARD, f"{info.name}: backward raised"
        return
    tol = max(f[-1] for f in floats)
    for k, (m, p) in enumerate(zip(l_mg, l_pt)):
        gm = np.zeros(m.shape) if m.grad is None else _np(m.grad)
        gp = np.zeros(tuple(p.shape)) if p.grad is None else _np(p.grad)
        gtol = max(tol * 10, ROUNDED_GRADIENT.get(info.name, 0) if tol else 0)
        _compare(gm, gp, gtol, f"{info.name} {sample.name} gradient {k}",
                 lambda: dtype in _LOW and _closer_to_exact(fn, sample, dtype, gm, gp,
                                                            (cots, k)))


def _compare(mine, theirs, tol, what, minigrad_is_closer):
    """Values (NaN positions equal) within ``tol``; a float16 or bfloat16 mismatch passes
    when minigrad is at least as close to the float64 result as PyTorch."""
    try:
        np.testing.assert_allclose(mine.astype(np.float64), theirs.astype(np.float64),
                                   rtol=tol, atol=tol, equal_nan=True, err_msg=what)
    except AssertionError:
        if not minigrad_is_closer():
            raise


def test_every_op_is_mapped_or_listed():
    """Every op of the table is compared with PyTorch or listed in NOT_MAPPED with why, never
    both; every RANDOM sample is a sample of a mapped op."""
    table = op_table()
    assert set(ORACLE) | set(NOT_MAPPED) == set(table)
    assert not set(ORACLE) & set(NOT_MAPPED)
    assert all(isinstance(why, str) and why for why in NOT_MAPPED.values())
    assert all(op in ORACLE and name in {s.name for s in table[op].samples}
               for op, name in RANDOM)


def test_ctc_loss_gradient_through_log_softmax():
    """PyTorch's ctc_loss gradient is right once a log_softmax is differentiated too: there
    minigrad's (exact d loss / d log_probs, chained through log_softmax) must agree."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 3, 5))
    targets = np.array([[1, 3, 3, 2], [2, 2, 4, 1], [3, 1, 2, 4]])
    lengths = ([12, 9, 7], [4, 3, 0])
    for reduction in ("mean", "sum"):
        xm = mg.tensor(x, requires_grad=True)
        mg.functional.ctc_loss(mg.functional.log_softmax(xm, -1), targets, *lengths,
                               reduction=reduction).backward()
        xt = torch.tensor(x, requires_grad=True)
        TF.ctc_loss(xt.log_softmax(-1), torch.tensor(targets), *lengths,
                    reduction=reduction).backward()
        np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
