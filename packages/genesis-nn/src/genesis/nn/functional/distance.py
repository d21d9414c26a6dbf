"""Distances and similarities between vectors: cosine_similarity, pairwise_distance and pdist.

All three compose differentiable ops (norms, products, index_select), so they run on every device
and their gradients come from those ops.
"""

from __future__ import annotations

from genesis_autograd import Tensor, promote_types, tensor

from ._util import torch_type_name

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> list[int]:
    """The common shape of two broadcasting shapes, with torch's error where they do not broadcast."""
    ndim = max(len(a), len(b))
    a, b = (1,) * (ndim - len(a)) + tuple(a), (1,) * (ndim - len(b)) + tuple(b)
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y and 1 not in (x, y):
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {k}"
            )
    return [y if x == 1 else x for x, y in zip(a, b)]


def _norm_at_least(x: Tensor, dim: int, eps: float) -> Tensor:
    """The 2-norm along ``dim`` (kept), its value raised to ``eps``, its gradient the unclamped norm's,
    as torch's cosine_similarity (which clamps a clone of the norm in place under no_grad)."""
    norm = x.vector_norm(2, dim, keepdim=True)
    return norm + (norm.detach().clamp_min(eps) - norm.detach())


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """x1 . x2 / (max(||x1||, eps) * max(||x2||, eps)) along ``dim``: each input is divided by its
    own norm first, which keeps the result within [-1, 1].

    Args:
        x1, x2: tensors that broadcast together, of a floating common dtype.
        dim: the dimension of the vectors (removed from the result).
        eps: the smallest norm divided by.
    """
    dtype = promote_types(x1.dtype, x2.dtype)
    if not dtype.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {torch_type_name(dtype)}")
    shape = _broadcast_shape(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = x1.to(dtype=dtype).expand(*shape), x2.to(dtype=dtype).expand(*shape)
    return ((x1 / _norm_at_least(x1, dim, eps)) * (x2 / _norm_at_least(x2, dim, eps))).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dim of their broadcast shape.

    Args:
        x1, x2: (N, D) or (D,) and anything that broadcasts with them.
        p: the norm degree (0, inf and any positive value).
        eps: added to the difference, so the norm is never taken at 0.
        keepdim: keep the reduced dim (as size 1).
    """
    diff = x1 - x2 + eps
    if not diff.dtype.is_floating_point:
        diff = diff.float()
    return diff.vector_norm(p, -1, keepdim=keepdim)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between the rows of an (N, M) input, for every pair i < j in row-major
    order: the upper triangle of the distance matrix, N (N - 1) / 2 values.

    Args:
        input: (N, M), floating dtype.
        p: the norm degree (non-negative).
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    rows = tensor([i for i, _ in pairs], dtype="int64", device=input.device)
    cols = tensor([j for _, j in pairs], dtype="int64", device=input.device)
    return (input.index_select(0, rows) - input.index_select(0, cols)).vector_norm(p, 1)
