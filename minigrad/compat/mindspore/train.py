"""MindSpore's ``mindspore.train`` namespace, importable as ``minigrad.train``
(``from minigrad.train import amp``)."""

from ... import amp

__all__ = ["amp"]
