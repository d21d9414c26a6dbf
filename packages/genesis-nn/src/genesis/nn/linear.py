"""Identity and Linear."""

from __future__ import annotations

import math

from genesis_autograd import Tensor, empty

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments, as torch's."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """y = x W^T + b, with torch.nn.Linear's initialisation (uniform in +-1/sqrt(in_features)).

    Args:
        in_features: the size of each input sample.
        out_features: the size of each output sample.
        bias: learn an additive bias.
        device, dtype: where and in which dtype the parameters are made.

    Shape: input (*, in_features); output (*, out_features).

    Attributes: ``weight`` (out_features, in_features), ``bias`` (out_features,) or None.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise the parameters as the constructor does."""
        # kaiming_uniform_ with a = sqrt(5): uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)), as torch.
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
