"""CPU scaled dot-product attention: torch.nn.functional.scaled_dot_product_attention.

The backward re-runs the forward under torch's autograd (torch's CPU kernels keep no state for it).
With dropout the forward is spelled out (torch's sdpa draws its dropout mask from torch's global
generator, which the backward could not replay): the mask comes from a private generator seeded by a
draw from this backend's generator, and the seed travels to the backward in place of CUDA's
(seed, offset).
"""

from __future__ import annotations

import torch

from ... import registry
from ...dtypes import int64
from .common import reg


def _forward(q, k, v, mask, dropout_p: float, is_causal: bool, scale: float, seed: int | None) -> torch.Tensor:
    gqa = q.shape[-3] != k.shape[-3]
    if not dropout_p:
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale, enable_gqa=gqa
        )
    group = q.shape[-3] // k.shape[-3]
    if gqa:
        k, v = k.repeat_interleave(group, -3), v.repeat_interleave(group, -3)
    s = q @ k.transpose(-2, -1) * scale
    if is_causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    dead = (s == float("-inf")).all(-1, keepdim=True)  # fully masked rows give zeros, as torch's sdpa
    w = torch.softmax(s.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)
    assert seed is not None  # drawn by the caller whenever dropout_p > 0
    gen = torch.Generator().manual_seed(seed)
    keep = torch.rand(w.shape, generator=gen, dtype=torch.float32) >= dropout_p
    return (w * keep / (1.0 - dropout_p)).to(v.dtype) @ v


@reg("attention_supported")
def attention_supported(dtype: str, head_dim: int) -> bool:
    """torch's sdpa takes every floating dtype and head dim."""
    return True


@reg("attention")
def attention(q, k, v, mask, dropout_p: float, is_causal: bool, scale: float):
    seed = None
    if dropout_p > 0.0:
        seed = int(registry.table("cpu")["randint"](0, 2**62, (), int64, None))
    with torch.no_grad():
        out = _forward(q, k, v, mask, dropout_p, is_causal, scale, seed)
    return out, None, seed


@reg("attention_backward")
def attention_backward(grad, q, k, v, out, lse, mask, dropout_p: float, is_causal: bool, scale: float, rng):
    with torch.enable_grad():
        qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
        o = _forward(qq, kk, vv, mask, dropout_p, is_causal, scale, rng)
        return torch.autograd.grad(o, (qq, kk, vv), grad)
