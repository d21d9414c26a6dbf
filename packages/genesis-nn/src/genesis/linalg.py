"""genesis.linalg: the torch.linalg functions genesis implements (vector norms and products)."""

from __future__ import annotations

from genesis_autograd import Tensor


def vector_norm(x: Tensor, ord: float = 2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``sum(|x|^ord)^(1/ord)`` over ``dim`` (every dim when None); inf / -inf: largest / smallest ``|x|``,
    0: the number of non-zeros."""
    return x.vector_norm(ord, dim, keepdim, dtype=dtype)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    return a.matmul(b)


__all__ = ["matmul", "vector_norm"]
