"""Sorting on CUDA: sort (stable, values and int64 indices), topk (always sorted)."""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import uint8
from ...shape import normalize_dim
from .common import View, reg, set_range, stream_of
from .memory import cast, clone, copy_, fill_


@reg("sort")
def sort(input: View, dim: int, descending: bool, stable: bool) -> tuple[View, View]:
    """Sorted values and their int64 indices along dim. The kernel is always stable, which
    ``stable=False`` allows too."""
    dim = normalize_dim(dim, len(input.shape))
    values = gs.empty(input.shape, input.dtype, input.device)
    indices = gs.empty(input.shape, "int64", input.device)
    if math.prod(input.shape):
        if input.dtype == "bool":  # sorted as uint8 (False < True), cast back
            wide = cast(input, uint8)
            sorted_wide = gs.empty(input.shape, "uint8", input.device)
            gk.sort(wide, sorted_wide, indices, dim, descending=descending, stream=stream_of(input))
            copy_(values, sorted_wide)
        else:
            gk.sort(input, values, indices, dim, descending=descending, stream=stream_of(input))
        # positions along dim: a scatter by them (a sampler's top-p) waits for no bounds check
        set_range(indices, 0, (input.shape[dim] if input.shape else 1) - 1, False)
    return values, indices


@reg("topk")
def topk(input: View, k: int, dim: int, largest: bool, sorted: bool) -> tuple[View, View]:
    """The k largest (smallest) along dim, always sorted (which ``sorted=False`` allows too)."""
    if input.dtype == "bool":
        raise RuntimeError("topk does not support bool dtypes")
    dim = normalize_dim(dim, len(input.shape))
    size = input.shape[dim] if input.shape else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if not input.shape:  # torch: a 0-d input comes back as it is, with index 0
        indices = gs.empty((), "int64", input.device)
        fill_(indices, 0)
        return clone(input), indices
    shape = input.shape[:dim] + (k,) + input.shape[dim + 1 :]
    values = gs.empty(shape, input.dtype, input.device)
    indices = gs.empty(shape, "int64", input.device)
    if math.prod(shape):
        gk.topk(input, k, values, indices, dim, largest=largest, stream=stream_of(input))
        set_range(indices, 0, size - 1, False)  # positions along dim (a sampler's scatter by them: no wait)
    return values, indices
