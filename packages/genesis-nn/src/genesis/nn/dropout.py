"""Dropout: active in training mode only."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class Dropout(Module):
    """In training mode, zero each element with probability ``p`` and scale the others by 1 / (1 - p);
    in eval mode, the identity.

    Args:
        p: the probability of zeroing an element.
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
