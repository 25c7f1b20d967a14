"""``minigrad.functional`` (F): every differentiable op, one ``Function`` per primitive.

Families live one per file; this module re-exports their public functions. ``F.nn`` offers the
MegEngine spellings (``F.nn.cross_entropy``).
"""

from .cast import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .recurrent import *  # noqa: F401,F403
from . import nn  # noqa: F401
