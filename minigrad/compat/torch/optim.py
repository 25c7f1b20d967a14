"""``mg.optim``: PyTorch's spelling of :mod:`minigrad.optimizer` (the same classes).

Example:
    >>> import minigrad as mg
    >>> mg.optim.SGD is mg.optimizer.SGD
    True
"""

from ...optimizer import *  # noqa: F403 - the alias re-exports the whole package
from ...optimizer import __all__ as _names
from ...optimizer import lr_scheduler

__all__ = [*_names, "lr_scheduler"]
