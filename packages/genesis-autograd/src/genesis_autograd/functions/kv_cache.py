"""The KV-cache write: new keys and values of every sequence stored in place at its own position.

``kv_cache_write_(keys, values, k_new, v_new, positions)`` is what a static KV cache calls once per layer and
step. Where no gradient flows (inference: grad mode off, or nothing involved requires grad) it is one
NDArray.kv_cache_write_ (one kernel launch on cuda, positions read on the device) and a bump of both caches'
version counters, as any in-place write makes; that path costs a few dozen Python calls, where the general
advanced-index setitem costs hundreds.

Where a gradient would flow (grad mode on and k_new, v_new or a cache requiring grad), or a cache is a view
of another tensor, it takes the general path instead: two ``cache[b, h, slot] = new`` setitems, recorded in
the graph like any indexed write (a leaf cache that requires grad is refused there, as torch refuses it).
That path gives torch's semantics of the same assignment, so where the clamp sends several tokens to one slot
which of them lands is left unspecified there (the fast path writes the last one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from genesis_ndarray import arange, int64

from .. import grad_mode
from ._util import wrap

if TYPE_CHECKING:
    from ..tensor import Tensor


def kv_cache_write_(keys: Tensor, values: Tensor, k_new: Tensor, v_new: Tensor, positions: Tensor) -> None:
    """Write ``k_new`` / ``v_new`` (batch, heads, T, head_dim) into the caches ``keys`` / ``values`` (batch,
    heads, max_len, head_dim, contiguous, one dtype) at slots ``clamp(positions[b] + t, 0, max_len - 1)``,
    cast to the caches' dtype, in place. ``positions``: int32 / int64 (batch,) on the caches' device, read
    on the device (no host sync: a CUDA graph can capture the write). Where the clamp sends several tokens
    to one slot, the last of them is written. Gradients flow through the recorded setitem path (see the
    module's docstring)."""
    if (
        grad_mode._state.enabled
        and (keys.requires_grad or values.requires_grad or k_new.requires_grad or v_new.requires_grad)
    ) or keys._base is not None or values._base is not None:  # fmt: skip
        _write_recorded(keys, values, k_new, v_new, positions)
        return
    keys.data.kv_cache_write_(values.data, k_new.data, v_new.data, positions.data)
    keys._version[0] += 1  # an in-place write, as Tensor._inplace counts it: saved copies of the caches go stale
    values._version[0] += 1


def _write_recorded(keys: Tensor, values: Tensor, k_new: Tensor, v_new: Tensor, positions: Tensor) -> None:
    """The general path: ``cache[batch ids, head ids, clamped slots] = new`` for both caches, through setitem."""
    batch, heads, length = k_new.shape[0], k_new.shape[1], k_new.shape[2]
    max_len, device = keys.shape[2], keys.device
    if keys.shape != values.shape or k_new.shape != v_new.shape or tuple(keys.shape[:2]) != (batch, heads):
        raise RuntimeError(f"kv_cache_write_: expected caches of one shape and new keys and values (batch, heads, "
                           f"T, head_dim), got {list(keys.shape)}, {list(values.shape)}, {list(k_new.shape)} and "
                           f"{list(v_new.shape)}")  # fmt: skip
    tokens = wrap(keys, arange(length, dtype=int64, device=device))
    slots = (positions.view(batch, 1) + tokens).clamp(0, max_len - 1).view(batch, 1, length)
    batch_ids = wrap(keys, arange(batch, dtype=int64, device=device)).view(batch, 1, 1)
    head_ids = wrap(keys, arange(heads, dtype=int64, device=device)).view(1, heads, 1)
    index = (batch_ids, head_ids, slots)
    keys[index] = k_new.to(dtype=keys.dtype)
    values[index] = v_new.to(dtype=values.dtype)
