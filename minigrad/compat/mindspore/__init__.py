"""MindSpore's spellings: ``nn.Cell``, the training cells, the loss-scale managers and update
cells, the O-levels (``amp.build_train_network``) and ``mindspore.amp``'s functions."""

from ... import amp, nn
from .._attach import attach_names
from .mixed_precision import (
    DynamicLossScaler, StaticLossScaler, all_finite, auto_mixed_precision, custom_mixed_precision,
    get_black_list, get_white_list,
)
from .cells import TrainOneStepCell, TrainOneStepWithLossScaleCell, WithLossCell
from .loss_scale import (
    DynamicLossScaleManager, DynamicLossScaleUpdateCell, FixedLossScaleManager,
    FixedLossScaleUpdateCell, LossScaleManager,
)
from .o_levels import build_train_network

attach_names(nn, Cell=nn.Module, TrainOneStepCell=TrainOneStepCell,
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
