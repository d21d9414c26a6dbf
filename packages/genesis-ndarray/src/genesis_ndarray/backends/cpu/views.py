"""CPU views: torch's own view ops, sharing the tensor's storage."""

from __future__ import annotations

import torch

from .common import reg

reg("reshape")(lambda input, shape: input.reshape(shape))
reg("view")(lambda input, shape: input.view(shape))
reg("permute")(lambda input, dims: input.permute(dims))
reg("transpose")(lambda input, dim0, dim1: input.transpose(dim0, dim1))
reg("expand")(lambda input, shape: input.expand(shape))
reg("squeeze")(lambda input, dim: input.squeeze() if dim is None else input.squeeze(dim))
reg("unsqueeze")(lambda input, dim: input.unsqueeze(dim))
reg("flatten")(lambda input, start_dim, end_dim: input.flatten(start_dim, end_dim))
reg("narrow")(lambda input, dim, start, length: input.narrow(dim, start, length))
reg("diagonal")(lambda input, offset, dim1, dim2: input.diagonal(offset, dim1, dim2))
reg("unfold")(lambda input, dimension, size, step: input.unfold(dimension, size, step))


@reg("as_strided")
def as_strided(input: torch.Tensor, size, stride, storage_offset) -> torch.Tensor:
    return input.as_strided(size, stride, input.storage_offset() if storage_offset is None else storage_offset)
