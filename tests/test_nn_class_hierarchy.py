"""The layer classes are related as PyTorch's are: ``isinstance(m, nn.Dropout)`` (an init or
freeze loop's test) is true for exactly the classes it is true for in PyTorch. A Dropout2d that
counted as a Dropout, or a ReflectionPad2d as a ZeroPad1d, would silently change such loops."""

import inspect

import pytest

from minigrad import nn

torch = pytest.importorskip("torch")


def _public_relations(lib_nn, other_nn):
    """(class, public base) pairs of ``lib_nn`` whose names both exist in ``other_nn``."""
    pairs = set()
    for name, cls in vars(lib_nn).items():
        if not inspect.isclass(cls) or not inspect.isclass(getattr(other_nn, name, None)):
            continue
        for base in cls.__mro__[1:]:
            b = base.__name__
            if (not b.startswith("_") and b != "Module" and getattr(lib_nn, b, None) is base
                    and inspect.isclass(getattr(other_nn, b, None))):
                pairs.add((name, b))
    return pairs


def test_layer_subclass_relations_are_pytorchs():
    assert _public_relations(nn, torch.nn) == _public_relations(torch.nn, nn)
