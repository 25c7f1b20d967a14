"""Optimizers (SGD, Adam, AdamW, Adagrad, Adadelta, RMSprop, Adamax, NAdam, RAdam), gradient
clipping and learning-rate schedulers.

Example:
    >>> import minigrad as mg
    >>> from minigrad.optimizer import SGD
    >>> w = mg.Parameter([1.0])
    >>> opt = SGD([w], lr=0.5, momentum=0.9)
    >>> w.grad = mg.tensor([2.0])
    >>> _ = opt.step().clear_grad()      # MegEngine idiom; opt.zero_grad() works too
    >>> float(w.item())
    0.0
"""

from . import lr_scheduler
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, RMSprop
from .clip import clip_grad_norm, clip_grad_value
from .momentum import Momentum
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "RMSprop", "Adamax",
           "NAdam", "RAdam", "Momentum", "clip_grad_norm", "clip_grad_value", "lr_scheduler"]
