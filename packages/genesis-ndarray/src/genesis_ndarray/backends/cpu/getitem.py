"""CPU indexing: x[index], x[index] = value, and index_put_ (accumulating over repeated indices)."""

from __future__ import annotations

import torch

from .common import reg

reg("getitem")(lambda input, index: input[index])


@reg("setitem")
def setitem(input: torch.Tensor, index, value) -> None:
    input[index] = value


@reg("index_put_")
def index_put_(input: torch.Tensor, indices, values, accumulate: bool) -> None:
    if not accumulate:
        input[indices] = values
        return
    # Any index (basic, advanced or mixed) selects a set of flat positions; index_add_
    # over those positions accumulates repeated ones, which input[index] += v does not.
    base = input if input.is_contiguous() else input.contiguous()
    positions = torch.arange(base.numel()).view(base.shape)[indices]
    values = torch.as_tensor(values, dtype=input.dtype).expand(positions.shape)
    base.view(-1).index_add_(0, positions.reshape(-1), values.reshape(-1))
    if base is not input:
        input.copy_(base)
