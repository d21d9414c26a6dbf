"""Indexing, selection and sorting on the CPU backend: torch's own kernels, checks and messages.

gather, scatter_ / scatter_add_ / index_add_ / masked_fill_ (in place; NDArray composes the
out-of-place forms), index_select, masked_select, nonzero, sort, topk. Imported by ``cpu``.
"""

from __future__ import annotations

import torch

from ..registry import register
from ..shape import normalize_dim


def _reg(name):
    return register(name, "cpu")


_reg("gather")(lambda t, dim, index: torch.gather(t, dim, index))
_reg("scatter_")(lambda t, dim, index, src: t.scatter_(dim, index, src))
_reg("scatter_add_")(lambda t, dim, index, src: t.scatter_add_(dim, index, src))
_reg("index_add_")(lambda t, dim, index, src, alpha: t.index_add_(dim, index, src, alpha=alpha))
_reg("masked_fill_")(lambda t, mask, value: t.masked_fill_(mask, value))
_reg("masked_select")(lambda t, mask: torch.masked_select(t, mask))
_reg("nonzero")(lambda t: torch.nonzero(t))


@_reg("index_select")
def index_select(t, dim, index):
    # torch's CPU kernel raises IndexError along dim 0 and RuntimeError along the others; the
    # CUDA backend raises IndexError everywhere, and so does this check, with the same message.
    if index.dtype in (torch.int64, torch.int32) and index.ndim <= 1 and index.numel():
        dim = normalize_dim(dim, t.ndim)
        size = t.shape[dim] if t.ndim else 1
        hi, lo = int(index.max()), int(index.min())
        if hi >= size or lo < 0:
            raise IndexError(f"index {hi if hi >= size else lo} is out of bounds for dimension {dim} with size {size}")
    return torch.index_select(t, dim, index)


@_reg("sort")
def sort(t, dim, descending, stable):
    values, indices = torch.sort(t, dim=dim, descending=descending, stable=stable)
    return values, indices


@_reg("topk")
def topk(t, k, dim, largest, sorted):
    values, indices = torch.topk(t, k, dim=dim, largest=largest, sorted=sorted)
    return values, indices
