"""Rotary position embeddings on CPU: torch's ops composed (torch has no fused rotary function); q and k
of ``rope_pair`` one after the other.

The same contract as the CUDA kernel: ``x`` (batch, seq, heads, head_dim) or (batch, heads, seq, head_dim)
by ``seq_dim``, tables (max_pos, rotary_dim / 2), positions (batch, seq) clamped into the tables, math in
float32 for 16-bit operands (float64 for float64), ``inverse`` the rotation by minus the angles.
"""

from __future__ import annotations

import torch

from .common import reg


@reg("rope")
def rope(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    positions: torch.Tensor,
    seq_dim: int,
    interleaved: bool,
    inverse: bool,
) -> torch.Tensor:
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    half = cos.shape[1]
    pos = positions.long().clamp(0, max(cos.shape[0] - 1, 0))
    c, s = cos[pos].to(compute), sin[pos].to(compute)  # (batch, seq, half)
    if inverse:
        s = -s
    c, s = c.unsqueeze(2 if seq_dim == 1 else 1), s.unsqueeze(2 if seq_dim == 1 else 1)  # broadcast over heads
    rot, rest = x[..., : 2 * half].to(compute), x[..., 2 * half :]
    if interleaved:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
        out = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), -1).flatten(-2)
    else:
        x1, x2 = rot[..., :half], rot[..., half:]
        out = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)
    return torch.cat((out.to(x.dtype), rest), -1).contiguous()


@reg("rope_pair")
def rope_pair(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    positions: torch.Tensor,
    seq_dim: int,
    interleaved: bool,
    inverse: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    return rope(q, cos, sin, positions, seq_dim, interleaved, inverse), rope(
        k, cos, sin, positions, seq_dim, interleaved, inverse
    )
