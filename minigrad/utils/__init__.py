"""Utilities with PyTorch's spellings: ``minigrad.utils.checkpoint`` (activation checkpointing)."""

from . import checkpoint

__all__ = ["checkpoint"]
