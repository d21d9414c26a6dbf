"""Rotary position embeddings (RoPE) of attention's queries and keys: one fused op each way.

A Genesis extension, as in flash-attn (``flash_attn.layers.rotary.apply_rotary_emb``): torch has no
rotary function; HF transformers composes ``q * cos + rotate_half(q) * sin``, which this computes in one
kernel per tensor (genesis_autograd.functions.rope). nn.RotaryEmbedding builds the tables.
"""

from __future__ import annotations

import genesis_autograd
from genesis_autograd import Tensor

__all__ = ["apply_rotary_emb"]


def apply_rotary_emb(
    x: Tensor,
    cos: Tensor,
    sin: Tensor,
    positions: Tensor | None = None,
    interleaved: bool = False,
    *,
    k: Tensor | None = None,
    seq_dim: int = 1,
) -> Tensor | tuple[Tensor, Tensor]:
    """Rotate the first ``rotary_dim`` features of every head of ``x`` (and ``k``) by each token's angles.

    Args:
        x: (batch, seq, heads, head_dim) (``seq_dim=1``, flash-attn's layout) or (batch, heads, seq,
            head_dim) (``seq_dim=2``, HF's), any strides; float.
        cos, sin: (max_positions, rotary_dim / 2) tables of the angles (nn.RotaryEmbedding's ``cos_cached``
            / ``sin_cached``); ``rotary_dim <= head_dim``, the features past it pass through. Constants.
        positions: int32 / int64 (seq,) or (batch, seq) on x's device, read on the device (no host sync, so
            a CUDA-graph decode step can advance them); None: 0 .. seq - 1. Out-of-table positions clamp.
        interleaved: pairs (2i, 2i + 1) (GPT-J, Meta's Llama) instead of (i, i + rotary_dim / 2) (GPT-NeoX,
            HF Llama's ``rotate_half``).
        k: keys rotated in the same node (may have fewer heads, GQA); then ``(x, k)`` is returned.
        seq_dim: 1 or 2 (or -3 / -2): where the sequence dim sits.

    Fused forward and backward (the gradient is the rotation by minus the angles); 16-bit inputs compute
    in float32. Returns the rotated x, or (x, k).
    """
    return genesis_autograd.apply_rotary_emb(x, cos, sin, positions, interleaved, k=k, seq_dim=seq_dim)
