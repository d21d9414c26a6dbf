"""CPU chunk_cat / chunk_split (genesis_ndarray.chunk_cat): torch's copies, one array at a time."""

from __future__ import annotations

import torch

from ...chunk_cat import slot_sizes
from .common import reg


def _slots(arrays: list[torch.Tensor], num_chunks: int):
    """(array, its slot's elements per chunk, the slot's offset in a chunk) for each array."""
    at = 0
    for a, n in zip(arrays, slot_sizes([tuple(a.shape) for a in arrays], num_chunks, "chunk_cat")):
        yield a, n, at
        at += n


@reg("chunk_cat")
def chunk_cat(out: torch.Tensor, arrays: list[torch.Tensor], num_chunks: int) -> None:
    grid = out.reshape(num_chunks, -1) if out.is_contiguous() else torch.empty_like(out).reshape(num_chunks, -1)
    for a, n, at in _slots(arrays, num_chunks):
        if n == 0:
            continue
        padded = torch.zeros(num_chunks * n, dtype=out.dtype)
        padded[: a.numel()] = a.reshape(-1)
        grid[:, at : at + n] = padded.view(num_chunks, n)
    if not out.is_contiguous():
        out.copy_(grid.view(out.shape))


@reg("chunk_split")
def chunk_split(src: torch.Tensor, num_chunks: int, out: list[torch.Tensor]) -> None:
    grid = src.reshape(num_chunks, -1)
    for o, n, at in _slots(out, num_chunks):
        if n:
            o.copy_(grid[:, at : at + n].reshape(-1)[: o.numel()].view(o.shape))
