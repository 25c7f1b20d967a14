"""MindSpore's spellings: ``nn.Cell`` and its methods, ``nn.Dense``, the training cells, the
loss-scale managers and update cells, the O-levels (``amp.build_train_network``),
``mindspore.amp``'s functions and the ``minigrad.train`` namespace."""

from ... import amp, nn
from .._attach import attach_module, attach_names
from .mixed_precision import (
    DynamicLossScaler, StaticLossScaler, all_finite, auto_mixed_precision, custom_mixed_precision,
    get_black_list, get_white_list,
)
from .cell import CELL_METHODS, Cell, Dense
from .cells import TrainOneStepCell, TrainOneStepWithLossScaleCell, WithLossCell
from .loss_scale import (
    DynamicLossScaleManager, DynamicLossScaleUpdateCell, FixedLossScaleManager,
    FixedLossScaleUpdateCell, LossScaleManager,
)
from . import train
from .o_levels import build_train_network

attach_names(nn.Module, **CELL_METHODS)
attach_names(nn, Cell=Cell, Dense=Dense, TrainOneStepCell=TrainOneStepCell,
             TrainOneStepWithLossScaleCell=TrainOneStepWithLossScaleCell,
             WithLossCell=WithLossCell, DynamicLossScaleUpdateCell=DynamicLossScaleUpdateCell,
             FixedLossScaleUpdateCell=FixedLossScaleUpdateCell)
attach_names(amp, DynamicLossScaleManager=DynamicLossScaleManager,
             FixedLossScaleManager=FixedLossScaleManager, LossScaleManager=LossScaleManager,
             build_train_network=build_train_network, DynamicLossScaler=DynamicLossScaler,
             StaticLossScaler=StaticLossScaler, all_finite=all_finite,
             auto_mixed_precision=auto_mixed_precision,
             custom_mixed_precision=custom_mixed_precision, get_black_list=get_black_list,
             get_white_list=get_white_list)
attach_module("minigrad.train", train)
