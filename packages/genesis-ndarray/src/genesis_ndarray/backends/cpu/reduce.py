"""CPU reductions: sum / mean / prod / amax / amin / all / any / logsumexp by name, max / min with indices,
argmax / argmin, var, vector_norm."""

from __future__ import annotations

import torch

from ...dtypes import DType
from .common import reg, resolver


@reg("reduce")
def reduce(op: str, input: torch.Tensor, dim, keepdim: bool, dtype: DType | None) -> torch.Tensor:
    fn = getattr(torch, op)
    kwargs = {} if dtype is None else {"dtype": dtype.torch}
    if dim is None:
        if op == "logsumexp":
            return torch.logsumexp(input, dim=tuple(range(input.ndim)), keepdim=keepdim)
        if keepdim:
            return fn(input, dim=tuple(range(input.ndim)), keepdim=True, **kwargs)
        return fn(input, **kwargs)
    if op == "prod" and not isinstance(dim, int):
        raise TypeError("prod reduces over one dim at a time, as torch.prod")
    return fn(input, dim=dim, keepdim=keepdim, **kwargs)


# Ops whose floating input gives a result of its own dtype (sum / prod of integers give int64, all / any bool).
_SAME_DTYPE = frozenset({"sum", "mean", "prod", "amax", "amin", "logsumexp"})


@resolver("reduce")
def resolve_reduce(op: str, dtype: DType):
    """``(fn(input, dim, keepdim) -> result, result dtype or None)`` for ``op`` with no dtype argument."""
    if op not in _SAME_DTYPE and op not in ("all", "any"):
        return None
    fn = getattr(torch, op)
    if op == "logsumexp" or op == "prod":  # the general function's special cases (all dims, one dim at a time)
        return None

    def run(input: torch.Tensor, dim, keepdim: bool) -> torch.Tensor:
        if dim is None and not keepdim:
            return fn(input)
        return reduce(op, input, dim, keepdim, None)

    return run, dtype if dtype.is_floating_point and op in _SAME_DTYPE else None


@reg("max_dim")
def max_dim(input: torch.Tensor, dim: int, keepdim: bool) -> tuple[torch.Tensor, torch.Tensor]:
    r = torch.max(input, dim=dim, keepdim=keepdim)
    return r.values, r.indices


@reg("min_dim")
def min_dim(input: torch.Tensor, dim: int, keepdim: bool) -> tuple[torch.Tensor, torch.Tensor]:
    r = torch.min(input, dim=dim, keepdim=keepdim)
    return r.values, r.indices


reg("argmax")(lambda input, dim, keepdim: torch.argmax(input, dim=dim, keepdim=keepdim))
reg("argmin")(lambda input, dim, keepdim: torch.argmin(input, dim=dim, keepdim=keepdim))
reg("var")(lambda input, dim, correction, keepdim: torch.var(input, dim=dim, correction=correction, keepdim=keepdim))
reg("vector_norm")(lambda input, ord, dim, keepdim: torch.linalg.vector_norm(input, ord=ord, dim=dim, keepdim=keepdim))
