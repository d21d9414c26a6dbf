"""Rectifier modules with a learnt or random negative slope: PReLU and RReLU."""

from __future__ import annotations

from genesis_autograd import Tensor, empty

from . import functional as F
from . import init as nn_init
from .activation import _inplace_repr
from .module import Module
from .parameter import Parameter


class PReLU(Module):
    """x where x > 0, else a * x, with a learnt slope a (one for all channels, or one per channel).

    Args:
        num_parameters: 1, or the number of input channels (dim 1 of the input).
        init: the initial slope.
        device, dtype: where and in which dtype the weight is made.

    Shape: input (*) (for num_parameters = 1) or (N, C, *); output the same shape.

    Attributes: ``weight`` (num_parameters,).
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set every slope back to ``init``."""
        nn_init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        """prelu of ``input`` with the layer's slopes."""
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomised leaky ReLU: in training, each non-positive element gets a slope drawn from
    U(lower, upper); in eval mode the slope is (lower + upper) / 2.

    Args:
        lower, upper: the range of the random slopes.
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        """rrelu of ``input`` (random slopes while training)."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_repr(self.inplace, first=False)}"
