"""OneFlow's spellings: ``nn.Graph`` (a training step declared once, run with AMP)."""

from ... import nn
from .._attach import attach_names
from .graph import Graph, GraphConfig

attach_names(nn, Graph=Graph)

__all__ = ["Graph", "GraphConfig"]
