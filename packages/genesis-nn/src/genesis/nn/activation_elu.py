"""The exponential linear unit modules: ELU, CELU and SELU, each a call of nn.functional."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .activation import _inplace_repr
from .module import Module


class ELU(Module):
    """x for x > 0, alpha * (exp(x) - 1) otherwise, elementwise.

    Args:
        alpha: the value approached for large negative x is -alpha.
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        """elu of ``input``."""
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_repr(self.inplace, first=False)}"


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), elementwise.

    Args:
        alpha: the scale of the negative part (not 0).
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        """celu of ``input``."""
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_repr(self.inplace, first=False)}"


class SELU(Module):
    """scale * elu(x, alpha) with the self-normalising constants alpha = 1.6733, scale = 1.0507.

    Args:
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """selu of ``input``."""
        return F.selu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)
