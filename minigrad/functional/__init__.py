"""``minigrad.functional`` (F): every differentiable op, one ``Function`` per primitive.

Families live one per file, each named for what it holds: ``elementwise`` (arithmetic, selection,
comparison), ``transcendental`` (exp/log, trigonometric, erf), ``activation``, ``matmul``
(products and contractions), ``reduction`` (with the norms), ``sorting`` (sort, topk,
median...), ``shape``, ``scan``, ``conv``,
``conv_nd``, ``pooling``, ``pooling_nd``, ``upsample``, ``sampling``, ``normalization``,
``dropout``, ``sparse``
(embedding), ``attention``, ``recurrent``, ``loss``, ``loss_margin``, ``distance``. Private
modules (``_utils``, ``_axes``, ``_composite``, ``_array_backward``, ``_conv_kernels``) are shared
helpers; families import each other at module top and never in a cycle.

This module re-exports the families' public functions and installs the Tensor's operators and
op methods (``_tensor_methods``), which are sugar over them. A ``Function`` class whose natural
name is a layer's (``nn.Conv2d``, ``nn.ReLU``) takes a ``Function`` suffix (``Conv2dFunction``,
``ReLUFunction``); its ``name`` (the op and its AMP policy row) is the op's own (``"conv2d"``).
"""

from ..core.cast import cast, clone, detach, to_device
from . import _tensor_methods
from .activation import *
from .attention import *
from .conv import *
from .conv_nd import *
from .distance import *
from .dropout import *
from .elementwise import *
from .loss import *
from .loss_margin import *
from .matmul import *
from .normalization import *
from .pooling import *
from .pooling_nd import *
from .recurrent import *
from .reduction import *
from .sampling import *
from .scan import *
from .shape import *
from .sorting import *
from .sparse import *
from .transcendental import *
from .upsample import *

_tensor_methods.install()
