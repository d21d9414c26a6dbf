"""CPU scans: cumsum, cumprod."""

from __future__ import annotations

import torch

from ...dtypes import DType
from .common import reg


@reg("cumsum")
def cumsum(input: torch.Tensor, dim: int, dtype: DType | None) -> torch.Tensor:
    return torch.cumsum(input, dim, dtype=None if dtype is None else dtype.torch)


@reg("cumprod")
def cumprod(input: torch.Tensor, dim: int, dtype: DType | None) -> torch.Tensor:
    return torch.cumprod(input, dim, dtype=None if dtype is None else dtype.torch)
