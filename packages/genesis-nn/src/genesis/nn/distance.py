"""Distance modules: PairwiseDistance and CosineSimilarity, calls of nn.functional."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dim.

    Args:
        p: the norm degree.
        eps: added to the difference, so the norm is never taken at 0.
        keepdim: keep the reduced dim.

    Shape: inputs (N, D) or (D,); output (N,) or () (with keepdim, (N, 1) or (1,)).
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """pairwise_distance of ``x1`` and ``x2``."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """x1 . x2 / (max(||x1||, eps) * max(||x2||, eps)) along ``dim``.

    Args:
        dim: the dimension of the vectors.
        eps: the smallest norm divided by.

    Shape: inputs broadcasting together; output their shape without ``dim``.
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """cosine_similarity of ``x1`` and ``x2``."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
