"""The KV-cache write on CPU: torch's advanced-index assignment, in place, with the CUDA kernel's contract.

Slots ``clamp(positions[b] + t, 0, max_len - 1)``; where the clamp sends several tokens of a sequence to one
slot, only the last of them is written (as the kernel does, and as writing token by token would), so that
no slot is assigned twice in one index_put (whose order torch leaves unspecified).
"""

from __future__ import annotations

import torch

from .common import reg


@reg("kv_cache_write_")
def kv_cache_write_(
    keys: torch.Tensor, values: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
) -> None:
    if not (keys.is_contiguous() and values.is_contiguous()):
        raise RuntimeError(
            f"kv_cache_write_: the caches must be contiguous, got strides {keys.stride()} and {values.stride()}"
        )
    batch, max_len, length = keys.shape[0], keys.shape[2], k_new.shape[2]
    tokens = torch.arange(length)
    unclamped = positions.long().view(batch, 1) + tokens  # (batch, T)
    last = (tokens == length - 1) | ((unclamped >= 0) & (unclamped < max_len - 1))
    b, t = last.nonzero(as_tuple=True)
    slots = unclamped[b, t].clamp(0, max_len - 1)
    keys[b, :, slots] = k_new[b, :, t].to(keys.dtype)  # (rows, heads, head_dim) on both sides
    values[b, :, slots] = v_new[b, :, t].to(values.dtype)
