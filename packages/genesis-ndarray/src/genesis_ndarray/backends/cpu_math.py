"""CPU backend, math ops: more unary/binary names, lerp/addcmul/addcdiv, scans, triangles.

torch's own functions and semantics, registered under the op names NDArray dispatches on.
Imported by cpu.py after its tables exist.
"""

from __future__ import annotations

import functools

import torch

from ..dtypes import DType
from .cpu import _BINARY, _UNARY, _reg

# Unary ops that torch has under nn.functional only, and binary ops cpu.py does not list.
_UNARY.update({
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": functools.partial(torch.nn.functional.gelu, approximate="tanh"),
})
_BINARY["fmod"] = torch.fmod


_reg("lerp")(lambda a, b, w: torch.lerp(a, b, w))
_reg("addcmul")(lambda x, t1, t2, value: torch.addcmul(x, t1, t2, value=value))
_reg("addcdiv")(lambda x, t1, t2, value: torch.addcdiv(x, t1, t2, value=value))


@_reg("cumsum")
def cumsum(t, dim: int, dtype: DType | None):
    return torch.cumsum(t, dim, dtype=None if dtype is None else dtype.torch)


@_reg("cumprod")
def cumprod(t, dim: int, dtype: DType | None):
    return torch.cumprod(t, dim, dtype=None if dtype is None else dtype.torch)


_reg("tril")(lambda t, diagonal: torch.tril(t, diagonal))
_reg("triu")(lambda t, diagonal: torch.triu(t, diagonal))
