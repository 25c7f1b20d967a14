"""OneFlow's spellings: ``nn.Graph`` (a training step declared once, run with AMP) and the
module path ``minigrad.env`` (``get_rank``, ``get_world_size``)."""

from ... import nn
from .._attach import attach_module, attach_names
from . import env
from .graph import Graph, GraphConfig

attach_names(nn, Graph=Graph)
attach_module("minigrad.env", env)

# oneflow.optim.lr_scheduler's own schedulers (oneflow.utils.data is compat.torch's
# minigrad.utils.data)
from ...optimizer import lr_scheduler as _lr_scheduler  # noqa: E402
from . import lr_scheduler  # noqa: E402

attach_names(_lr_scheduler, CosineDecayLR=lr_scheduler.CosineDecayLR,
             WarmUpLR=lr_scheduler.WarmUpLR, WarmupLR=lr_scheduler.WarmupLR)

__all__ = ["Graph", "GraphConfig"]
