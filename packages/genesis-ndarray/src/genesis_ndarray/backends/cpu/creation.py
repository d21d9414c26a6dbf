"""CPU creation ops: empty / full / arange / linspace / eye factories, and the triangles tril / triu."""

from __future__ import annotations

import torch

from ...device import Device
from ...dtypes import DType
from .common import reg


@reg("empty")
def empty(shape, dtype: DType, device: Device) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype.torch)


@reg("full")
def full(shape, value, dtype: DType, device: Device) -> torch.Tensor:
    return torch.full(shape, value, dtype=dtype.torch)


@reg("arange")
def arange(start, end, step, dtype: DType, device: Device) -> torch.Tensor:
    return torch.arange(start, end, step, dtype=dtype.torch)


@reg("linspace")
def linspace(start, end, steps: int, dtype: DType, device: Device) -> torch.Tensor:
    return torch.linspace(start, end, steps, dtype=dtype.torch)


@reg("eye")
def eye(n: int, m: int, dtype: DType, device: Device) -> torch.Tensor:
    return torch.eye(n, m, dtype=dtype.torch)


reg("tril")(lambda input, diagonal: torch.tril(input, diagonal))
reg("triu")(lambda input, diagonal: torch.triu(input, diagonal))
