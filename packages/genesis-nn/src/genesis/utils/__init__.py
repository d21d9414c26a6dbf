"""genesis.utils: data loading and activation checkpointing."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
