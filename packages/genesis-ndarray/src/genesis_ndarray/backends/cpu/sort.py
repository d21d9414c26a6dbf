"""CPU sorting: sort (values and int64 indices), topk."""

from __future__ import annotations

import torch

from .common import reg


@reg("sort")
def sort(input: torch.Tensor, dim: int, descending: bool, stable: bool) -> tuple[torch.Tensor, torch.Tensor]:
    values, indices = torch.sort(input, dim=dim, descending=descending, stable=stable)
    return values, indices


@reg("topk")
def topk(input: torch.Tensor, k: int, dim: int, largest: bool, sorted: bool) -> tuple[torch.Tensor, torch.Tensor]:
    values, indices = torch.topk(input, k, dim=dim, largest=largest, sorted=sorted)
    return values, indices
