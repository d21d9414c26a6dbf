"""Creation on CUDA: empty / full / arange / linspace / eye factories, and the triangles tril / triu.

Each factory is one allocation and at most one launch (eye and linspace included: one
genesis_kernels launch each, where composing them from arange and elementwise ops took three
or four).
"""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...device import Device
from ...dtypes import DType
from .common import View, new, reg, set_range, stream_of


@reg("empty")
def empty(shape, dtype: DType, device: Device) -> View:
    return new(shape, dtype, device)


@reg("full")
def full(shape, value, dtype: DType, device: Device) -> View:
    out = new(shape, dtype, device)
    if math.prod(out.shape):
        gk.fill(out, value, stream=stream_of(out))
    return out


@reg("arange")
def arange(start, end, step, dtype: DType, device: Device) -> View:
    n = max(0, math.ceil((end - start) / step))
    out = new((n,), dtype, device)
    if n:
        gk.arange(out, start, step, stream=stream_of(out))
        if type(start) is int and type(step) is int:  # exact integers: the values are start + i * step
            ends = (start, start + (n - 1) * step)
            set_range(out, min(ends), max(ends), True)
    return out


@reg("linspace")
def linspace(start, end, steps: int, dtype: DType, device: Device) -> View:
    out = new((steps,), dtype, device)
    if steps:
        if not dtype.is_floating_point:  # torch converts the ends to the integer dtype first (truncating)
            start, end = int(start), int(end)
        gk.linspace(out, start, end, stream=stream_of(out))
    return out


@reg("eye")
def eye(n: int, m: int, dtype: DType, device: Device) -> View:
    out = new((n, m), dtype, device)
    if n and m:
        gk.eye(out, stream=stream_of(out))
    return out


def _tri(mode: str, input: View, diagonal: int) -> View:
    if len(input.shape) < 2:
        raise RuntimeError(f"{mode}: input tensor must have at least 2 dimensions")
    out = gs.empty(input.shape, input.dtype, input.device)
    if math.prod(input.shape):
        getattr(gk, mode)(input, out, int(diagonal), stream=stream_of(input))
    return out


reg("tril")(lambda input, diagonal: _tri("tril", input, diagonal))
reg("triu")(lambda input, diagonal: _tri("triu", input, diagonal))
