"""``minigrad.functional`` (F): every differentiable op, one ``Function`` per primitive.

Families live one per file; this module re-exports their public functions and installs the
Tensor's operators and op methods (``_tensor_methods``), which are sugar over them.
"""

from ..core.cast import cast, clone, detach, to_device
from . import _tensor_methods
from .activation import *
from .attention import *
from .conv import *
from .elementwise import *
from .linalg import *
from .loss import *
from .normalization import *
from .pooling import *
from .recurrent import *
from .reduction import *
from .shape import *
from .sparse import *
from .transcendental import *
from .blas import *
from .scan import *
from .distance import *
from .loss_margin import *
from .upsample import *
from .sampling import *
from .conv_nd import *

_tensor_methods.install()
