"""MindSpore's spellings: ``nn.Cell`` and its methods, ``nn.Dense``, the training cells, the
loss-scale managers and update cells, the O-levels (``amp.build_train_network``),
``mindspore.amp``'s functions and the ``minigrad.train`` namespace; the global switches
(``mg.set_context``, ``mg.set_seed``, ``@mg.jit``, ``minigrad.context``: ``context.py``), the
checkpoint functions (``mg.save_checkpoint``, ``mg.load_checkpoint``,
``mg.load_param_into_net``: ``checkpoint.py``) and ``Tensor.asnumpy()``."""

import sys

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
from . import checkpoint, context, train
from ...core.tensor import Tensor
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
attach_names(Tensor, asnumpy=Tensor.numpy)
attach_names(sys.modules["minigrad"], set_context=context.set_context,
             get_context=context.get_context, GRAPH_MODE=context.GRAPH_MODE,
             PYNATIVE_MODE=context.PYNATIVE_MODE, set_seed=context.set_seed,
             get_seed=context.get_seed, jit=context.jit,
             save_checkpoint=checkpoint.save_checkpoint,
             load_checkpoint=checkpoint.load_checkpoint,
             load_param_into_net=checkpoint.load_param_into_net)
attach_module("minigrad.context", context.namespace)

# mindspore.dataset (with .vision and .transforms) and the optimizers of mindspore.nn
from . import dataset, dataset_transforms, dataset_vision, optimizers  # noqa: E402

attach_names(nn, SGD=optimizers.SGD, Momentum=optimizers.Momentum, Adam=optimizers.Adam)
attach_module("minigrad.dataset", dataset)
for _path, _mod in (("vision", dataset_vision), ("transforms", dataset_transforms)):
    attach_module(f"minigrad.dataset.{_path}", _mod)
    for _old in ("c_transforms", "py_transforms", "transforms"):
        if not hasattr(_mod, _old):
            attach_module(f"minigrad.dataset.{_path}.{_old}", _mod)
attach_module("minigrad.dataset.config", dataset.config)
del _path, _mod, _old

# the training loop's names: nn.SequentialCell & co., mg.value_and_grad, mindspore.ops,
# mindspore.common (dtype, initializer), Model with its callbacks and metrics
from . import common, initializer, metrics, ops  # noqa: E402
from .grad import grad, value_and_grad  # noqa: E402
from .losses import SequentialCell, SoftmaxCrossEntropyWithLogits  # noqa: E402

attach_names(nn, SequentialCell=SequentialCell,
             SoftmaxCrossEntropyWithLogits=SoftmaxCrossEntropyWithLogits)
attach_module("minigrad.nn.metrics", metrics)
attach_names(sys.modules["minigrad"], value_and_grad=value_and_grad, grad=grad)
attach_module("minigrad.ops", ops)
attach_module("minigrad.common", common.common)
attach_module("minigrad.common.dtype", common.dtype)
attach_module("minigrad.common.initializer", initializer)
attach_module("minigrad.dtype", common.dtype)
attach_module("minigrad.train.callback", train.callback)
