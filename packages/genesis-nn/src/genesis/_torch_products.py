"""torch.X products and reductions of issue #30: addbmm, addmv (and addmv_), addr, vdot, inner, tensordot,
cross; count_nonzero, aminmax, std_mean, var_mean and torch.norm.

Each is its Tensor method (genesis_autograd's functions/products.py and reduce_more.py, which check the
arguments as torch does and carry the gradients) called as a function; std_mean / var_mean pair two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genesis_autograd import DType, Tensor

Number = int | float
Dims = int | Sequence[int] | None


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    return input.addbmm(batch1, batch2, beta=beta, alpha=alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return input.addmv(mat, vec, beta=beta, alpha=alpha)


def addmv_(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """In-place version of :func:`addmv`."""
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return input.addr(vec1, vec2, beta=beta, alpha=alpha)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """dot with the first operand conjugated: dot itself for real dtypes."""
    return input.vdot(other)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The sum of products over the last dims of both (a 0-d operand multiplies)."""
    return input.inner(other)


def tensordot(a: Tensor, b: Tensor, dims: int | Sequence[Any] = 2) -> Tensor:
    """Contract ``dims``: a count (a's last and b's first dims) or two lists of dims."""
    return a.tensordot(b, dims)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The 3-D cross product along ``dim`` (by default the first dim of size 3, with torch's warning)."""
    return input.cross(other, dim)


def count_nonzero(input: Tensor, dim: Dims = None) -> Tensor:
    """The number of nonzero elements over ``dim`` (all by default), an int64 tensor."""
    return input.count_nonzero(dim)


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """(min, max) over ``dim`` (all elements by default), a named tuple."""
    return input.aminmax(dim=dim, keepdim=keepdim)


def var_mean(
    input: Tensor,
    dim: Dims = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: int | None = None,
) -> tuple[Tensor, Tensor]:
    """(var, mean) over ``dim`` with the same arguments as ``var`` (``correction`` 1 by default)."""
    return input.var(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim)


def std_mean(
    input: Tensor,
    dim: Dims = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: int | None = None,
) -> tuple[Tensor, Tensor]:
    """(std, mean) over ``dim`` with the same arguments as ``std`` (``correction`` 1 by default)."""
    return input.std(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim)


def norm(
    input: Tensor,
    p: float | str | None = "fro",
    dim: Dims = None,
    keepdim: bool = False,
    out: None = None,
    dtype: DType | None = None,
) -> Tensor:
    """torch.norm: the vector ``p``-norm over ``dim`` (all elements by default); p may be inf / -inf (max / min
    of |x|), 0 (the count of nonzeros) or "fro" (the 2-norm). The matrix norms ("nuc") are refused."""
    if out is not None:
        raise NotImplementedError("norm(): out= is not supported by genesis")
    return input.norm("fro" if p is None else p, dim, keepdim, dtype=dtype)


__all__ = [
    "addbmm",
    "addmv",
    "addmv_",
    "addr",
    "vdot",
    "inner",
    "tensordot",
    "cross",
    "count_nonzero",
    "aminmax",
    "var_mean",
    "std_mean",
    "norm",
]
