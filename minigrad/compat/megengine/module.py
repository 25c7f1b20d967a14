"""MegEngine's ``megengine.module`` path: ``import minigrad.module as M`` (``M.Module``,
``M.Conv2d``, ``M.Linear``, ``M.BatchNorm2d``, ``M.ReLU``, ``M.MaxPool2d``, ``M.AvgPool2d``,
``M.Sequential``, ``M.Dropout(drop_prob=)``, ``M.init.msra_normal_``, ...).

The layers are minigrad's (``minigrad.nn``); where MegEngine's constructor means something else
the class here translates it:

* ``BatchNorm1d/2d(momentum=0.9)``: MegEngine's momentum weighs the *old* running statistic
  (``running = momentum * running + (1 - momentum) * batch``), PyTorch's the new batch; the layer
  stores PyTorch's ``1 - momentum``. ``freeze=True`` normalises with the running statistics and
  leaves them unchanged, also in training mode.
* ``AvgPool2d(mode="average_count_exclude_padding")`` (MegEngine's default) divides each window
  by its number of non-padding elements; ``"average"`` by the whole window (PyTorch's default).
* ``Dropout(drop_prob=0.0)``; ``Softmax(axis=None)``.
* ``Conv2d``'s ``conv_mode="cross_correlation"``, ``compute_mode`` and ``Linear``'s
  ``compute_mode`` are accepted (minigrad computes one way).

Parameters keep PyTorch's shapes and initialisation (MegEngine stores BatchNorm's as
``(1, C, 1, 1)``), so ``state_dict()`` keys and shapes are minigrad's.
"""

from __future__ import annotations

import types

from ... import functional as F
from ... import nn
from ...nn import init as _init

__all__ = ["AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv1d", "Conv2d", "Dropout", "Linear",
           "Softmax", "init", "namespace"]


def _check_compute(cls, compute_mode, conv_mode=None):
    if compute_mode not in ("default", "float32"):
        raise ValueError(f"{cls}: compute_mode must be 'default' or 'float32', got "
                         f"{compute_mode!r}")
    if conv_mode not in (None, "cross_correlation", "cross_correlation".upper()):
        raise ValueError(f"{cls}: conv_mode {conv_mode!r} is not supported; minigrad's "
                         "convolutions are cross-correlations (conv_mode='cross_correlation')")


class Conv2d(nn.Conv2d):
    """``M.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
    groups=1, bias=True, conv_mode="cross_correlation", compute_mode="default")``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, conv_mode="cross_correlation", compute_mode="default",
                 **kwargs):
        _check_compute("Conv2d", compute_mode, conv_mode)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, **kwargs)


class Conv1d(nn.Conv1d):
    """``M.Conv1d`` (see :class:`Conv2d`)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, conv_mode="cross_correlation", compute_mode="default",
                 **kwargs):
        _check_compute("Conv1d", compute_mode, conv_mode)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, **kwargs)


class Linear(nn.Linear):
    """``M.Linear(in_features, out_features, bias=True, compute_mode="default")``."""

    def __init__(self, in_features, out_features, bias=True, compute_mode="default", **kwargs):
        _check_compute("Linear", compute_mode)
        super().__init__(in_features, out_features, bias, **kwargs)


class _MegEngineBatchNorm:
    """MegEngine's momentum (weight of the old statistic) and ``freeze``."""

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True,
                 track_running_stats=True, freeze=False, **kwargs):
        if momentum is not None and not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{type(self).__name__}: momentum must be in [0, 1], got "
                             f"{momentum}")
        # PyTorch's momentum, rounded so that 0.9 gives 0.1 and not 0.09999999999999998
        torch_momentum = None if momentum is None else float(f"{1.0 - momentum:.15g}")
        super().__init__(num_features, eps, torch_momentum, affine, track_running_stats,
                         **kwargs)
        self.freeze = bool(freeze)

    def forward(self, x):
        if not (self.freeze and self.track_running_stats):
            return super().forward(x)
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=False, eps=self.eps)


class BatchNorm1d(_MegEngineBatchNorm, nn.BatchNorm1d):
    """``M.BatchNorm1d(num_features, eps=1e-5, momentum=0.9, affine=True,
    track_running_stats=True, freeze=False)`` (MegEngine's momentum: see the module doc)."""


class BatchNorm2d(_MegEngineBatchNorm, nn.BatchNorm2d):
    """``M.BatchNorm2d(num_features, eps=1e-5, momentum=0.9, affine=True,
    track_running_stats=True, freeze=False)`` (MegEngine's momentum: see the module doc)."""


class AvgPool2d(nn.AvgPool2d):
    """``M.AvgPool2d(kernel_size, stride=None, padding=0,
    mode="average_count_exclude_padding")``."""

    _MODES = ("average_count_exclude_padding", "average")

    def __init__(self, kernel_size, stride=None, padding=0,
                 mode="average_count_exclude_padding"):
        if mode not in self._MODES:
            raise ValueError(f"AvgPool2d: mode must be one of {self._MODES}, got {mode!r}")
        # MegEngine's default mode is PyTorch's count_include_pad=False
        super().__init__(kernel_size, stride, padding,
                         count_include_pad=mode == "average")
        self.mode = mode


class Dropout(nn.Dropout):
    """``M.Dropout(drop_prob=0.0)``."""

    def __init__(self, drop_prob: float = 0.0, **kwargs):
        super().__init__(drop_prob, **kwargs)

    @property
    def drop_prob(self) -> float:
        return self.p


class Softmax(nn.Softmax):
    """``M.Softmax(axis=None)``: along ``axis`` (the last one for None)."""

    def __init__(self, axis=None):
        super().__init__(axis=-1 if axis is None else axis)


def _msra(draw):
    def msra_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
        return draw(tensor, a, mode, nonlinearity)
    return msra_


def _fill_(tensor, val):
    """MegEngine's ``fill_(tensor, val)``: ``nn.init.constant_``."""
    return _init.constant_(tensor, val)


def _calculate_correct_fan(tensor, mode):
    """The fan of ``tensor`` for ``mode`` ("fan_in" or "fan_out")."""
    return _init._fan(tensor, mode)


def _calculate_fan_in_and_fan_out(tensor):
    """``(fan_in, fan_out)`` of a weight (dim 1 and dim 0 times the receptive field)."""
    return _init._calculate_fan_in_and_fan_out(tensor)


init = types.ModuleType(
    "minigrad.module.init",
    "MegEngine's ``megengine.module.init``: minigrad's ``nn.init`` with MegEngine's names "
    "(``msra_normal_``/``msra_uniform_`` are He/Kaiming init, ``fill_`` is ``constant_``).")
for _name in _init.__all__:
    setattr(init, _name, getattr(_init, _name))
init.msra_normal_ = _msra(_init.kaiming_normal_)
init.msra_normal_.__doc__ = ("``msra_normal_(tensor, a=0, mode='fan_in', "
                             "nonlinearity='leaky_relu')``: N(0, std^2) with std = gain / "
                             "sqrt(fan) (He et al.; ``nn.init.kaiming_normal_``).")
init.msra_uniform_ = _msra(_init.kaiming_uniform_)
init.msra_uniform_.__doc__ = ("``msra_uniform_(tensor, a=0, mode='fan_in', "
                              "nonlinearity='leaky_relu')``: U(-b, b) with b = gain * "
                              "sqrt(3 / fan) (``nn.init.kaiming_uniform_``).")
init.fill_ = _fill_
init.calculate_correct_fan = _calculate_correct_fan
init.calculate_fan_in_and_fan_out = _calculate_fan_in_and_fan_out
init.__all__ = sorted([*_init.__all__, "msra_normal_", "msra_uniform_", "fill_",
                       "calculate_correct_fan", "calculate_fan_in_and_fan_out"])


def _namespace() -> types.ModuleType:
    """The ``minigrad.module`` module object: minigrad's layers, with the classes above where
    MegEngine's constructors differ."""
    mod = types.ModuleType("minigrad.module", __doc__)
    for name in nn.__all__:
        obj = getattr(nn, name)
        if isinstance(obj, type) and issubclass(obj, nn.Module):
            setattr(mod, name, obj)
    for name in ("AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv1d", "Conv2d", "Dropout",
                 "Linear", "Softmax"):
        setattr(mod, name, globals()[name])
    mod.init = init
    mod.__all__ = sorted(n for n in vars(mod) if not n.startswith("_"))
    return mod


namespace = _namespace()
