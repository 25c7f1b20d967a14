"""The peers' spellings: one package per peer, each a thin layer of names over minigrad's own
mechanism (invariant 12), and the only place that attaches peer names and module paths.

* ``torch``: ``mg.optim``, ``mg.autograd``, ``mg.cuda`` (with ``cuda.amp``), ``mg.nn.functional``
  and the top-level autocast functions; ``minigrad.utils.data`` (OneFlow's ``utils.data`` too)
  and ``minigrad.optim.lr_scheduler``.
* ``megengine``: ``F.nn``, ``amp.enabled``/``low_prec_dtype``/``high_prec_dtype``,
  ``amp.convert_*_format``; the batch samplers, ``DataLoader(sampler=, transform=, collator=)``
  and ``minigrad.data.transform`` on ``minigrad.data``; ``optimizer.MultiStepLR``.
* ``mindspore``: ``nn.Cell``, the training cells, the loss-scale managers, the O-levels
  (``amp.build_train_network``) and ``mindspore.amp``'s functions; ``minigrad.dataset`` (with
  ``.vision`` and ``.transforms``) and ``nn.SGD``/``nn.Momentum``/``nn.Adam``.
* ``oneflow``: ``nn.Graph``; ``lr_scheduler.CosineDecayLR``/``WarmUpLR``.

Importing ``minigrad`` imports this package, so every spelling is in place before user code runs.
"""

from . import megengine, mindspore, oneflow, torch

__all__ = ["megengine", "mindspore", "oneflow", "torch"]
