"""genesis_kernels.rope with ``k`` / ``k_out``: q and k rotated in one launch, against float64 torch references.

Llama's layout (both (B, H, S, D) views of (B, S, H, D) projections, fewer key heads), interleaved pairs,
partial rotary, clamped positions, the backward rotation, in-place keys, and operands that do not agree.
Outputs are poisoned with NaN, so an element the launch never writes fails. Tiny sizes: the interpreter.
"""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import buf, make, sync
from test_kernels_rope import close, reference, tables

import genesis_kernels as gk


def projection_view(B: int, S: int, H: int, D: int, dtype: str, device: str) -> torch.Tensor:
    """(B, H, S, D) values laid out (B, S, H, D) in memory: ``proj(x).view(B, S, H, D).transpose(1, 2)``."""
    return make((B, S, H, D), dtype, device).transpose(1, 2)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_q_and_k_in_one_launch(device: str, dtype: str, interleaved: bool) -> None:
    B, S, Hq, Hk, D, half, P = 2, 5, 6, 2, 10, 4, 13  # GQA keys; rotary_dim 8 of 10: 2 features passed through
    q, k = projection_view(B, S, Hq, D, dtype, device), projection_view(B, S, Hk, D, dtype, device)
    cos, sin = tables(P, half, torch.float32 if dtype != "float64" else torch.float64, device)
    pos = torch.randint(-2, P + 3, (B, S), dtype=torch.int64).to(device)  # some clamped at both ends
    clamped = pos.cpu().clamp(0, P - 1)
    for backward in (False, True):
        qo = torch.full((B, Hq, S, D), float("nan"), dtype=q.dtype, device=device)
        ko = torch.full((B, Hk, S, D), float("nan"), dtype=k.dtype, device=device)
        gk.rope(buf(q), buf(cos), buf(sin), buf(pos), buf(qo), seq_dim=2, interleaved=interleaved,
                backward=backward, k=buf(k), k_out=buf(ko))  # fmt: skip
        sync(device)
        close(qo, reference(q, cos, sin, clamped, 2, interleaved, inverse=backward), dtype)
        close(ko, reference(k, cos, sin, clamped, 2, interleaved, inverse=backward), dtype)


def test_tokens_first_layout_more_key_heads_and_in_place_keys(device: str) -> None:
    # seq_dim 1; k with more heads than q (any count works) rotated in place; positions shared (stride 0)
    B, S, Hq, Hk, D = 3, 4, 1, 5, 8
    q, k = make((B, S, Hq, D), "float32", device), make((B, S, Hk, D), "float32", device)
    cos, sin = tables(9, 4, torch.float32, device)
    pos = (torch.arange(S, dtype=torch.int32) + 3).to(device).expand(B, S)
    want_q, want_k = reference(q, cos, sin, pos, 1, False), reference(k, cos, sin, pos, 1, False)
    qo = torch.full_like(q, float("nan"))
    gk.rope(buf(q), buf(cos), buf(sin), buf(pos), buf(qo), k=buf(k), k_out=buf(k))
    sync(device)
    close(qo, want_q, "float32")
    close(k, want_k, "float32")


def test_q_and_k_must_agree(device: str) -> None:
    cos, sin = tables(4, 2, torch.float32, device)
    pos = torch.zeros(1, 3, dtype=torch.int64, device=device)
    q, k = make((1, 3, 2, 4), "float32", device), make((1, 3, 1, 4), "float32", device)
    with pytest.raises(ValueError, match="k needs k_out"):
        gk.rope(buf(q), buf(cos), buf(sin), buf(pos), buf(q), k=buf(k))
    short = make((1, 3, 1, 6), "float32", device)
    with pytest.raises(ValueError, match="must agree in batch, seq, head_dim and dtype"):
        gk.rope(buf(q), buf(cos), buf(sin), buf(pos), buf(q), k=buf(short), k_out=buf(short))
    half = make((1, 3, 1, 4), "bfloat16", device)
    with pytest.raises(ValueError, match="must agree in batch, seq, head_dim and dtype"):
        gk.rope(buf(q), buf(cos), buf(sin), buf(pos), buf(q), k=buf(half), k_out=buf(half))
