"""Scans on CUDA: cumsum, cumprod (result dtypes as torch: integers and bool accumulate in int64)."""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import DType, int64
from ...shape import normalize_dim
from .common import View, dtype_of, reg, stream_of
from .memory import cast


def _scan(op: str, input: View, dim: int, dtype: DType | None) -> View:
    """cumsum / cumprod: integers and bool give int64 unless ``dtype`` says otherwise, as torch."""
    dim = normalize_dim(dim, len(input.shape))
    if dtype is not None and dtype is not dtype_of(input):
        input = cast(input, dtype)
    out_dtype = dtype_of(input) if dtype is not None or dtype_of(input).is_floating_point else int64
    out = gs.empty(input.shape, out_dtype.name, input.device)
    if math.prod(input.shape):
        getattr(gk, op)(input, out, dim, stream=stream_of(input))
    return out


reg("cumsum")(lambda input, dim, dtype: _scan("cumsum", input, dim, dtype))
reg("cumprod")(lambda input, dim, dtype: _scan("cumprod", input, dim, dtype))
