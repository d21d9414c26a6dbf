"""Bilinear: y = x1^T A x2 + b, with torch's parameters and initialisation."""

from __future__ import annotations

import math

from genesis_autograd import Tensor, empty

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


class Bilinear(Module):
    """y[..., o] = x1 A_o x2 + b_o, A and b initialised uniform in +-1/sqrt(in1_features), as torch.

    Args:
        in1_features, in2_features: the sizes of the two inputs' last dims.
        out_features: the size of the output's last dim.
        bias: learn an additive bias.
        device, dtype: where and in which dtype the parameters are made.

    Shape: inputs (*, in1_features) and (*, in2_features); output (*, out_features).

    Attributes: ``weight`` (out_features, in1_features, in2_features), ``bias`` (out_features,) or None.
    """

    def __init__(
        self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(empty(out_features, in1_features, in2_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise the parameters as the constructor does."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """bilinear of the two inputs with the layer's weight and bias."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
