"""The multilayer perceptron of the AMP benchmark seed."""

from __future__ import annotations

from ..nn import Linear, ReLU, Sequential

__all__ = ["mlp"]


def mlp(in_size: int, out_size: int, num_layers: int) -> Sequential:
    """``(num_layers - 1) x [Linear(in, in), ReLU]`` then ``Linear(in, out)``, as a Sequential.

    Args:
        in_size: width of the input and of every hidden layer.
        out_size: width of the output.
        num_layers: number of Linear layers (>= 1).
    """
    if num_layers < 1:
        raise ValueError(f"mlp: num_layers must be >= 1, got {num_layers}")
    layers = []
    for _ in range(num_layers - 1):
        layers += [Linear(in_size, in_size), ReLU()]
    layers.append(Linear(in_size, out_size))
    return Sequential(*layers)
