"""scaled_dot_product_attention: the fused attention op (flash attention on cuda, torch's sdpa on cpu).

Forward keeps the output, the per-row logsumexp and the dropout stream's state; the plain backward is
one fused NDArray op that recomputes the weights from them. A backward that is itself recorded
(create_graph=True) is written with Tensor ops from the recomputed weights (without dropout: its mask
lives only inside the kernels).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ._util import Primitive, backward_recorded, check_output_version, plain, wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


class ScaledDotProductAttention(Primitive):
    @staticmethod
    def forward(ctx, q, k, v, mask, dropout_p, is_causal, scale):
        out, lse, rng = q.data.attention(k.data, v.data, plain(mask), dropout_p, is_causal, scale)
        if ctx.records:
            ctx.save_for_backward(q, k, v)
            ctx.mask, ctx.args, ctx.lse, ctx.rng = mask, (dropout_p, is_causal, scale), lse, rng
            ctx.out = out
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        dropout_p, is_causal, scale = ctx.args
        check_output_version(ctx)
        if backward_recorded(g):
            if dropout_p > 0.0:
                raise RuntimeError("scaled_dot_product_attention: double backward with dropout is not supported")
            return (*_composed_backward(q, k, v, g, ctx.mask, is_causal, scale), None, None, None, None)
        dq, dk, dv = g.data.attention_backward(
            q.data, k.data, v.data, ctx.out, ctx.lse, plain(ctx.mask), dropout_p, is_causal, scale, ctx.rng
        )
        return wrap(g, dq), wrap(g, dk), wrap(g, dv), None, None, None, None


def _composed_backward(q, k, v, g, mask, is_causal: bool, scale: float):
    """(dq, dk, dv) from Tensor ops: P recomputed, dS = P * (dP - rowsum(dP * P)); dk / dv summed per group."""
    b, hq, lq, d = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    group = hq // hkv

    def heads(t):  # (B, Hkv, L, D) -> (B, Hq, L, D), each kv head repeated for its group
        return t.unsqueeze(2).expand(b, hkv, group, t.shape[2], t.shape[3]).reshape(b, hq, t.shape[2], t.shape[3])

    kk, vv = (heads(k), heads(v)) if group > 1 else (k, v)
    s = q.matmul(kk.mT) * scale
    if is_causal:
        from ..factories import ones  # factories imports this package: imported at use

        allowed = ones(lq, lk, dtype="bool", device=q.device).tril(0)
        s = s.masked_fill(allowed.logical_not(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), float("-inf")) if mask.dtype.name == "bool" else s + mask
    dead = (s == float("-inf")).all(-1, keepdim=True)
    p = s.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
    dv = p.mT.matmul(g)
    dp = g.matmul(vv.mT)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq = ds.matmul(kk) * scale
    dk = ds.mT.matmul(q) * scale
    if group > 1:
        dk = dk.reshape(b, hkv, group, lk, d).sum(2)
        dv = dv.reshape(b, hkv, group, lk, d).sum(2)
    return dq, dk, dv


def fused_attention_supported(query: Tensor) -> bool:
    """Whether :func:`scaled_dot_product_attention` runs fused for a query of this dtype and head dim on
    its device (the backend's answer: on cuda, the flash kernels' dtypes and head dims)."""
    return query.data.attention_supported()


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """Fused softmax(Q K^T * scale + mask) V over (B, Hq, Lq, D) queries and (B, Hkv, Lk, D) keys / values
    (any strides; Hkv dividing Hq shares each kv head among Hq / Hkv query heads, without a copy).
    ``attn_mask``: bool (True = may attend) or additive float, broadcastable to (B, Hq, Lq, Lk), not itself
    differentiated. ``is_causal``: key j visible from query i when j <= i. Fully masked rows give zeros."""
    # Each shape read once, as a plain tuple (a Size's indexing is a Python call): every attention layer runs this.
    qs, ks, vs = tuple(query.shape), tuple(key.shape), tuple(value.shape)
    if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
        raise RuntimeError(
            f"scaled_dot_product_attention (fused): expected 4-D query, key and value, got shapes {qs}, {ks} and {vs}"
        )
    if ks != vs or ks[0] != qs[0] or ks[3] != qs[3]:
        raise RuntimeError(f"scaled_dot_product_attention (fused): query {qs}, key {ks} and value {vs} do not match")
    if qs[1] % ks[1]:
        raise RuntimeError(
            f"number of heads in key/value must divide the number of heads in query: query heads "
            f"{qs[1]}, key heads {ks[1]}"
        )
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else float(scale)
    if attn_mask is not None:
        attn_mask = attn_mask.detach()
    return ScaledDotProductAttention.apply(query, key, value, attn_mask, float(dropout_p), bool(is_causal), scale)
