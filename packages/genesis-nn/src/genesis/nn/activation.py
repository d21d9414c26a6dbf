"""Activation modules: each holds its options and calls nn.functional."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


def _inplace_repr(inplace: bool, first: bool = True) -> str:
    return ("inplace=True" if first else ", inplace=True") if inplace else ""


class ReLU(Module):
    """max(x, 0) elementwise.

    Args:
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x.

    Args:
        negative_slope: the slope for negative inputs.
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_repr(self.inplace, first=False)}"


class GELU(Module):
    """GELU, x * Phi(x) with Phi the standard normal CDF.

    Args:
        approximate: ``"none"`` (exact, with erf) or ``"tanh"`` (the tanh approximation).

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """SiLU (swish), x * sigmoid(x).

    Args:
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class GLU(Module):
    """Gated linear unit: a * sigmoid(b), a and b the two halves of the input along ``dim``.

    Args:
        dim: the dim halved (its size must be even).

    Shape: input (*, 2n, *); output (*, n, *) along ``dim``.
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Mish(Module):
    """Mish, x * tanh(softplus(x)).

    Args:
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Tanh(Module):
    """The hyperbolic tangent elementwise.

    Shape: input (*), any shape; output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    """The logistic sigmoid 1 / (1 + exp(-x)) elementwise.

    Shape: input (*), any shape; output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold.

    Args:
        beta: the sharpness.
        threshold: above it the function is linear (for numerical stability).

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """exp(x) / sum(exp(x)) along ``dim``: each slice along dim sums to 1.

    Args:
        dim: the dimension to normalise.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``, computed stably (the input NLLLoss expects).

    Args:
        dim: the dimension to normalise.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module):
    """softmax(-x) along ``dim``: the smallest elements get the largest weights.

    Args:
        dim: the dimension to normalise.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """softmin of ``input`` along ``dim``."""
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels at each spatial location.

    Shape: input (N, C, H, W) or (C, H, W); output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """softmax of ``input`` along its channel dim (-3)."""
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class LogSigmoid(Module):
    """log(sigmoid(x)) elementwise, stable for large |x|.

    Shape: input (*), any shape; output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """logsigmoid of ``input``."""
        return F.logsigmoid(input)


class Softsign(Module):
    """x / (1 + |x|) elementwise.

    Shape: input (*), any shape; output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """softsign of ``input``."""
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x) elementwise.

    Shape: input (*), any shape; output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """tanhshrink of ``input``."""
        return F.tanhshrink(input)
