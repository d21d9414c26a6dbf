"""LocalResponseNorm: normalisation of each channel by the energy of its neighbouring channels."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class LocalResponseNorm(Module):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels) ** beta (F.local_response_norm).

    Args:
        size: the number of channels in each window.
        alpha: the multiplier of the mean square.
        beta: the exponent.
        k: the additive constant.

    Shape: (N, C, *) -> the same shape.
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        """F.local_response_norm of ``input`` with the layer's constants."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
