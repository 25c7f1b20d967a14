"""``minigrad.functional`` (F): every differentiable op, one ``Function`` per primitive.

Families live one per file; this module re-exports their public functions. ``F.nn`` offers the
MegEngine spellings (``F.nn.cross_entropy``).
"""

from .cast import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
