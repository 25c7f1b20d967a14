"""Normalisation layers: ``BatchNorm1d``/``2d``/``3d``, ``InstanceNorm1d``/``2d``/``3d``,
``LayerNorm``, ``GroupNorm``, ``RMSNorm`` and ``LocalResponseNorm``."""

from __future__ import annotations


from .. import functional as F
from .._backend.dtypes import float32, float64, get_default_dtype, int64, normalize_dtype
from ..core.creation import ones, zeros
from . import init
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "LocalResponseNorm", "RMSNorm"]


class _BatchNorm(Module):
    _dims = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None, dtype=None):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = init.ones_(init._empty_param((num_features,), device, dtype))
            self.bias = init.zeros_(init._empty_param((num_features,), device, dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            # Statistics stay float32 for low-precision layers: fp16 variances lose too much.
            # Without dtype= they follow the default dtype, as the parameters do (float64 after
            # mg.set_default_dtype(mg.float64), as in PyTorch).
            stat = normalize_dtype(dtype) or get_default_dtype()
            stat = float64 if stat == float64 else float32
            self.register_buffer("running_mean", zeros(num_features, dtype=stat, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=stat, device=device))
            self.register_buffer("num_batches_tracked", zeros((), dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, x):
        if x.ndim not in self._dims:
            dims = " or ".join(map(str, self._dims))
            raise ValueError(f"{type(self).__name__}: expected a {dims}"
                             f"-D input (N, C, ...), got shape {x.shape}")
        if x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: input has {x.shape[1]} channels (shape "
                             f"{x.shape}) but the layer was built for {self.num_features}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=self.training or self.running_mean is None,
                            momentum=momentum, eps=self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over ``(N, C)`` or ``(N, C, L)`` inputs, per channel C.

    Training normalises with the batch statistics and updates ``running_mean``/``running_var``
    (``new = (1 - momentum) * old + momentum * batch``, unbiased variance); evaluation uses the
    running statistics.
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over ``(N, C, H, W)`` inputs, per channel C (see BatchNorm1d)."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over ``(N, C, D, H, W)`` inputs, per channel C (see
    BatchNorm1d)."""

    _dims = (5,)


class _InstanceNorm(_BatchNorm):
    _spatial = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)

    def forward(self, x):
        name, n = type(self).__name__, self._spatial
        if x.ndim not in (n + 1, n + 2):
            raise ValueError(f"{name}: expected a {n + 1}-D (unbatched) or {n + 2}-D input, "
                             f"got shape {x.shape}")
        if x.ndim == n + 1:
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.shape[1] != self.num_features and (self.affine or self.track_running_stats):
            raise ValueError(f"{name}: input has {x.shape[1]} channels (shape {x.shape}) but "
                             f"the layer was built for {self.num_features}")
        # PyTorch's: the running statistics normalise only in evaluation with tracking on
        return F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                               use_input_stats=self.training or not self.track_running_stats,
                               momentum=0.0 if self.momentum is None else self.momentum,
                               eps=self.eps)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of ``(N, C, L)`` or ``(C, L)`` input: every sample's channel is
    normalised over its positions. ``affine`` (learned per-channel scale and shift) and
    ``track_running_stats`` (running statistics used in evaluation) default to False, as in
    PyTorch."""


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of ``(N, C, H, W)`` or ``(C, H, W)`` input (see
    InstanceNorm1d)."""

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (see
    InstanceNorm1d)."""

    _spatial = 3


def _trailing_affine(mod, normalized_shape, eps, elementwise_affine, bias, device, dtype):
    """LayerNorm's and RMSNorm's state: the trailing shape, eps, and a ``weight`` of ones (and,
    unless ``bias`` is None, as RMSNorm has none, a ``bias`` of zeros) when affine."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    mod.normalized_shape = tuple(normalized_shape)
    mod.eps = eps
    mod.elementwise_affine = elementwise_affine
    shape = mod.normalized_shape
    mod.register_parameter("weight", init.ones_(init._empty_param(shape, device, dtype))
                           if elementwise_affine else None)
    if bias is not None:
        mod.register_parameter("bias", init.zeros_(init._empty_param(shape, device, dtype))
                               if elementwise_affine and bias else None)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` axes, then scale and shift.

    Args:
        normalized_shape: an int or the tuple of trailing axes' sizes.
        eps: added to the variance.
        elementwise_affine: learn ``weight`` (ones) and ``bias`` (zeros).
        bias: learn the bias (with elementwise_affine).
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        _trailing_affine(self, normalized_shape, eps, elementwise_affine, bias, device, dtype)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Normalise ``(N, C, ...)`` over groups of ``C // num_groups`` channels, per sample.

    Args:
        num_groups: number of channel groups (must divide num_channels).
        num_channels: C.
        eps: added to the variance.
        affine: learn per-channel ``weight`` (ones) and ``bias`` (zeros).
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = init.ones_(init._empty_param((num_channels,), device, dtype))
            self.bias = init.zeros_(init._empty_param((num_channels,), device, dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` axes:
    ``x / sqrt(mean(x**2) + eps) * weight`` (computed in float32 for float16/bfloat16).

    Args:
        normalized_shape: an int or the tuple of trailing axes' sizes.
        eps: added to the mean square; None: the machine epsilon of the computation's dtype
            (float32's for float16/bfloat16 input, as PyTorch's kernel).
        elementwise_affine: learn ``weight`` (ones).
    """

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        _trailing_affine(self, normalized_shape, eps, elementwise_affine, None, device, dtype)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Local response normalisation across channels (AlexNet's, ``F.local_response_norm``):
    ``x / (k + alpha / size * sum of x**2 over size neighbouring channels) ** beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
