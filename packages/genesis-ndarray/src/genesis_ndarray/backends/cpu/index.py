"""CPU index ops: torch's own kernels, checks and messages.

gather, scatter_ / scatter_add_ / index_add_ / masked_fill_ (in place; NDArray composes the
out-of-place forms), index_select, masked_select, nonzero, embedding and its backward.
"""

from __future__ import annotations

import torch

from ...shape import normalize_dim
from .common import reg

reg("gather")(lambda input, dim, index: torch.gather(input, dim, index))
reg("scatter_")(lambda input, dim, index, src: input.scatter_(dim, index, src))
reg("scatter_add_")(lambda input, dim, index, src: input.scatter_add_(dim, index, src))
reg("index_add_")(lambda input, dim, index, source, alpha: input.index_add_(dim, index, source, alpha=alpha))
reg("masked_fill_")(lambda input, mask, value: input.masked_fill_(mask, value))
reg("masked_select")(lambda input, mask: torch.masked_select(input, mask))
reg("nonzero")(lambda input: torch.nonzero(input))


@reg("index_select")
def index_select(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    # torch's CPU kernel raises IndexError along dim 0 and RuntimeError along the others; the
    # CUDA backend raises IndexError everywhere, and so does this check, with the same message.
    if index.dtype in (torch.int64, torch.int32) and index.ndim <= 1 and index.numel():
        dim = normalize_dim(dim, input.ndim)
        size = input.shape[dim] if input.ndim else 1
        hi, lo = int(index.max()), int(index.min())
        if hi >= size or lo < 0:
            raise IndexError(f"index {hi if hi >= size else lo} is out of bounds for dimension {dim} with size {size}")
    return torch.index_select(input, dim, index)


@reg("embedding")
def embedding(weight: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.embedding(indices, weight)


@reg("embedding_backward")
def embedding_backward(
    grad_output: torch.Tensor, indices: torch.Tensor, num_weights: int, padding_idx: int | None
) -> torch.Tensor:
    # aten's dense backward (what F.embedding's autograd runs); -1 there means "no padding row".
    return torch.ops.aten.embedding_dense_backward(
        grad_output, indices, num_weights, -1 if padding_idx is None else padding_idx, False
    )
