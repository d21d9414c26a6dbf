"""The KV-cache write kernel (genesis_kernels.kv_cache_write) against torch references written here.

The reference is the sequential write: for each sequence, each new token in order, the clamped slot gets the
token's keys and values (so where the clamp sends several tokens to one slot, the last one is what stays).
Caches start from random values (a slot the kernel must not touch keeps them); new keys contiguous, new
values a transposed view of a (B, T, H, D) projection, as Llama's attention makes them. Tiny sizes: the
interpreter.
"""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, buf, make, sync

import genesis_kernels as gk


def reference(keys, values, k_new, v_new, positions) -> tuple[torch.Tensor, torch.Tensor]:
    """The caches after writing token by token (on the cpu, in the caches' dtype)."""
    keys, values = keys.cpu().clone(), values.cpu().clone()
    max_len = keys.shape[2]
    for b, p in enumerate(positions.cpu().tolist()):
        for t in range(k_new.shape[2]):
            slot = min(max(p + t, 0), max_len - 1)
            keys[b, :, slot] = k_new[b, :, t].cpu().to(keys.dtype)
            values[b, :, slot] = v_new[b, :, t].cpu().to(values.dtype)
    return keys, values


def projection_view(B: int, T: int, H: int, D: int, dtype: str, device: str) -> torch.Tensor:
    """(B, H, T, D) values laid out (B, T, H, D) in memory: ``v_proj(x).view(B, T, H, D).transpose(1, 2)``."""
    return make((B, T, H, D), dtype, device).transpose(1, 2)


@pytest.mark.parametrize(
    ("cache_dtype", "new_dtype"),
    [("float32", "float32"), ("bfloat16", "bfloat16"), ("float16", "float32"), ("float64", "float64")],
)
def test_kv_cache_write_prefill_and_decode(device: str, cache_dtype: str, new_dtype: str) -> None:
    B, H, M, D = 3, 2, 9, 8
    for T, positions in ((4, [0, 2, 5]), (1, [8, 0, 3])):  # a prefill, then single-token decode steps
        keys, values = make((B, H, M, D), cache_dtype, device), make((B, H, M, D), cache_dtype, device)
        k_new = make((B, H, T, D), new_dtype, device)
        v_new = projection_view(B, T, H, D, new_dtype, device)
        pos = torch.tensor(positions, dtype=torch.int64, device=device)
        want_k, want_v = reference(keys, values, k_new, v_new, pos)
        gk.kv_cache_write(buf(keys), buf(values), buf(k_new), buf(v_new), buf(pos))
        sync(device)
        torch.testing.assert_close(keys.cpu(), want_k, rtol=0, atol=0)
        torch.testing.assert_close(values.cpu(), want_v, rtol=0, atol=0)


def test_kv_cache_write_clamps_and_the_last_token_wins(device: str) -> None:
    # positions past the end (and one negative): several tokens clamp to one slot; int32 positions.
    B, H, M, D, T = 4, 3, 5, 6, 4
    keys, values = make((B, H, M, D), "float32", device), make((B, H, M, D), "float32", device)
    k_new, v_new = make((B, H, T, D), "float32", device), projection_view(B, T, H, D, "float32", device)
    pos = torch.tensor([3, -2, 7, -9], dtype=torch.int32, device=device)
    want_k, want_v = reference(keys, values, k_new, v_new, pos)
    gk.kv_cache_write(buf(keys), buf(values), buf(k_new), buf(v_new), buf(pos))
    sync(device)
    torch.testing.assert_close(keys.cpu(), want_k, rtol=0, atol=0)
    torch.testing.assert_close(values.cpu(), want_v, rtol=0, atol=0)


def test_kv_cache_write_odd_head_dim_strided_new_and_shared_positions(device: str) -> None:
    # head_dim 5 (a masked tail), new keys with a non-unit last stride, positions with stride 2
    B, H, M, D, T = 2, 3, 7, 5, 3
    keys, values = make((B, H, M, D), "bfloat16", device), make((B, H, M, D), "bfloat16", device)
    k_new = make((B, H, T, 2 * D), "float32", device)[..., ::2]
    v_new = projection_view(B, T, H, D, "bfloat16", device)
    pos = torch.tensor([4, 0, 1, 9], dtype=torch.int64, device=device)[::2]
    want_k, want_v = reference(keys, values, k_new, v_new, pos)
    gk.kv_cache_write(buf(keys), buf(values), buf(k_new), buf(v_new), buf(pos))
    sync(device)
    torch.testing.assert_close(keys.cpu(), want_k, rtol=0, atol=0)
    torch.testing.assert_close(values.cpu(), want_v, rtol=0, atol=0)


def test_kv_cache_write_rejects_bad_operands(device: str) -> None:
    def t(shape, dtype="float32"):
        return torch.zeros(shape, dtype=TORCH_DTYPES[dtype], device=device)

    keys, values, new, pos = t((2, 3, 4, 5)), t((2, 3, 4, 5)), t((2, 3, 1, 5)), t((2,), "int64")
    with pytest.raises(ValueError, match="one 4-D shape and dtype"):
        gk.kv_cache_write(buf(keys), buf(t((2, 3, 4, 5), "float16")), buf(new), buf(new), buf(pos))
    with pytest.raises(ValueError, match="the values cache must be contiguous"):
        gk.kv_cache_write(buf(keys), buf(t((2, 3, 5, 4)).transpose(2, 3)), buf(new), buf(new), buf(pos))
    with pytest.raises(ValueError, match=r"must be \(2, 3, T, 5\)"):
        gk.kv_cache_write(buf(keys), buf(values), buf(t((2, 2, 1, 5))), buf(t((2, 2, 1, 5))), buf(pos))
    with pytest.raises(ValueError, match="positions must be int32 / int64"):
        gk.kv_cache_write(buf(keys), buf(values), buf(new), buf(new), buf(t((2,))))
    with pytest.raises(TypeError, match="float buffer"):
        gk.kv_cache_write(buf(keys), buf(values), buf(t((2, 3, 1, 5), "int32")), buf(new), buf(pos))
