"""MegEngine's spellings: ``F.nn`` (``minigrad.functional.nn``), the global AMP switch
(``amp.enabled``, ``amp.low_prec_dtype``, ``amp.high_prec_dtype``), ``amp.convert_*_format``,
and the module paths ``minigrad.module`` (``import minigrad.module as M``, with ``M.init``),
``minigrad.logger`` and ``minigrad.random`` (shared with PyTorch's ``torch.random``), the data
pipeline on ``minigrad.data`` (batch samplers, ``DataLoader(sampler=, transform=, collator=)``,
``ArrayDataset``, ``minigrad.data.transform``), ``optimizer.MultiStepLR`` and
``F.topk_accuracy``."""

from ... import amp, functional
from .._attach import attach_module, attach_names
from . import amp_switch, functional_nn, logger, module, random
from .metric import topk_accuracy
from .convert_format import convert_module_format, convert_tensor_format, tensor_format

attach_module("minigrad.functional.nn", functional_nn)
attach_names(functional, topk_accuracy=topk_accuracy)
attach_module("minigrad.module", module.namespace)
attach_module("minigrad.module.init", module.init)
attach_module("minigrad.logger", logger)
attach_module("minigrad.random", random)
attach_names(amp, convert_module_format=convert_module_format,
             convert_tensor_format=convert_tensor_format, tensor_format=tensor_format)
amp_switch.install(amp)

# megengine.data (samplers, DataLoader, ArrayDataset, data.transform) and the schedulers of
# megengine.optimizer
from ... import data as _data, optimizer as _optimizer  # noqa: E402
from . import data, lr_scheduler, transform  # noqa: E402

attach_names(_data, DataLoader=data.DataLoader, Sampler=data.MapSampler,
             MapSampler=data.MapSampler, RandomSampler=data.RandomSampler,
             SequentialSampler=data.SequentialSampler,
             ReplacementSampler=data.ReplacementSampler, Infinite=data.Infinite,
             ArrayDataset=data.ArrayDataset, Collator=data.Collator)
attach_names(_data.dataset, ArrayDataset=data.ArrayDataset)
attach_module("minigrad.data.transform", transform)
attach_names(_optimizer, LRScheduler=lr_scheduler.LRScheduler,
             MultiStepLR=lr_scheduler.MultiStepLR)

__all__ = ["amp_switch", "convert_format", "data", "functional_nn", "logger", "lr_scheduler",
           "module", "random", "transform"]
