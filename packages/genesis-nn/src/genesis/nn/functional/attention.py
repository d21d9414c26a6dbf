"""Attention: scaled_dot_product_attention, and multi_head_attention_forward (what nn.MultiheadAttention
computes).

scaled_dot_product_attention runs the fused op (genesis_autograd.scaled_dot_product_attention: flash
attention on cuda, torch's sdpa on cpu) whenever its inputs fit it: 3-D or 4-D query / key / value of one
dtype and device, equal batch sizes, key and value of one shape, a mask that needs no gradient; on cuda
float16 / bfloat16 / float32 (IEEE fp32 dots, no tf32) and head dims up to 256. Anything else (float64 on
cuda, a value head dim unlike the query's, broadcast batches, a mask that requires grad) takes the path
composed from matmul and softmax, with the same results. multi_head_attention_forward goes through
scaled_dot_product_attention when no weights are asked for (need_weights=False), as torch's does.

Mask conventions differ, as in torch: for scaled_dot_product_attention a boolean mask is True where
attention is ALLOWED; for multi-head attention (attn_mask, key_padding_mask) True marks what is
NOT allowed. Float masks are added to the scores in both.
"""

from __future__ import annotations

import math
import warnings

from genesis_autograd import Tensor, autocast_policy, cat, fused_attention_supported, ones, zeros
from genesis_autograd import scaled_dot_product_attention as fused_attention

from .dropout import dropout
from .linear import linear

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]


def _repeat_heads(t: Tensor, repeats: int) -> Tensor:
    """(..., H, S, E) -> (..., H * repeats, S, E), each head repeated in place (repeat_interleave on dim -3)."""
    *lead, h, s, e = t.shape
    return t.unsqueeze(-3).expand(*lead, h, repeats, s, e).reshape(*lead, h * repeats, s, e)


def _safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last dim, with rows that are all -inf (fully masked) giving zeros instead of NaN,
    as torch's math attention backend."""
    probs = scores.softmax(-1)
    dead = (scores == float("-inf")).all(-1, keepdim=True)
    return probs.masked_fill(dead, 0.0)


@autocast_policy("lower")
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(Q K^T * scale + mask) V over (..., L, E) queries and (..., S, E) keys. ``attn_mask``: bool
    (True = may attend) or additive float, broadcast to (..., L, S). ``is_causal``: a lower-triangular mask
    aligned at the top-left. ``enable_gqa``: key / value heads (dim -3) are shared by groups of query heads."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    # Each shape read once, as a plain tuple (a Size's indexing is a Python call): every attention layer runs this.
    qs, ks, vs = tuple(query.shape), tuple(key.shape), tuple(value.shape)
    if len(qs) < 2 or len(ks) < 2 or len(vs) < 2:
        raise RuntimeError("scaled_dot_product_attention: expected query, key and value of at least 2 dimensions")
    if enable_gqa and len(qs) >= 3 and ks[-3] != qs[-3]:
        hq, hk = qs[-3], ks[-3]
        if hq % hk or vs[-3] != hk:
            raise RuntimeError(
                f"number of heads in key/value must divide the number of heads in query: query heads "
                f"{hq}, key heads {hk}, value heads {vs[-3]}"
            )
    fused = _fused(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if fused is not None:
        return fused
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hk)
    length, source = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * scale
    if is_causal:
        allowed = ones(length, source, dtype="bool", device=query.device).tril(0)
        probs = scores.masked_fill(allowed.logical_not(), float("-inf")).softmax(-1)
    elif attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask.to(dtype=scores.dtype)
        probs = _safe_softmax(scores)
    else:
        probs = scores.softmax(-1)
    if dropout_p > 0.0:
        probs = dropout(probs, dropout_p)
    return probs.matmul(value.to(dtype=probs.dtype))


def _fused(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa) -> Tensor | None:
    """The fused op's result when the inputs fit it (see the module's docstring), else None."""
    qs, ks = tuple(query.shape), tuple(key.shape)
    nd = len(qs)
    if (nd != 3 and nd != 4) or len(ks) != nd or ks != tuple(value.shape):
        return None
    dtype = query.dtype
    if not (dtype == key.dtype == value.dtype) or not dtype.is_floating_point:
        return None
    if not (query.device == key.device == value.device) or qs[-1] != ks[-1]:
        return None
    if not fused_attention_supported(query):  # the device's own limits (dtypes, head dims)
        return None
    hq, hk = qs[-3], ks[-3]
    if qs[:-3] != ks[:-3] or (hq != hk and not (enable_gqa and hq % hk == 0)):
        return None
    mask = None
    if attn_mask is not None:
        if attn_mask.requires_grad or attn_mask.ndim > 4 or attn_mask.device != query.device:
            return None
        if attn_mask.dtype.name != "bool":
            attn_mask = attn_mask.to(dtype=dtype)
        # The fused op broadcasts the mask to (B, Hq, Lq, Lk) itself (a view, per launch); here only a
        # mask that does not broadcast is expanded, which raises torch's error. A decode step passes its
        # (B, 1, Lq, Lk) mask to every layer: no view ops per layer.
        ms = tuple(attn_mask.shape)
        padded = (1,) * (4 - len(ms)) + ms
        target = (qs[0] if nd == 4 else 1, hq, qs[-2], ks[-2])
        mask = attn_mask if len(ms) == 4 else attn_mask.reshape(padded)
        for m, t in zip(padded, target):
            if m != 1 and m != t:
                mask.expand(*target)  # raises
                break
    if nd == 3:  # (H, L, E): one batch
        query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
    out = fused_attention(query, key, value, mask, dropout_p, is_causal, scale)
    return out.squeeze(0) if nd == 3 else out


def float_mask(mask: Tensor | None, name: str, dtype) -> Tensor | None:
    """A multi-head-attention mask as an additive float mask (bool True -> -inf)."""
    if mask is None:
        return None
    if mask.dtype.name == "bool":
        return zeros(*mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask.to(dtype=dtype)


def _in_projection(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    in_proj_weight,
    in_proj_bias,
    use_separate: bool,
    q_proj_weight,
    k_proj_weight,
    v_proj_weight,
):
    if not use_separate:
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    else:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    if not use_separate and query is key and key is value:
        # Self-attention: one product with the packed weight, then split (as torch's fast path).
        return linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """torch's functional multi-head attention over sequence-first inputs: query (L, N, E) or unbatched
    (L, E), key / value (S, N, E_k / E_v). Returns (output (L, N, E), weights (N, L, S) averaged over heads,
    or (N, H, L, S), or None when not need_weights)."""
    batched = query.ndim == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask."
        )
    if (
        key_padding_mask is not None
        and attn_mask is not None
        and (key_padding_mask.dtype.name == "bool") != (attn_mask.dtype.name == "bool")
    ):
        warnings.warn(
            "Support for mismatched key_padding_mask and attn_mask is deprecated. Use same type for both instead.",
            stacklevel=2,
        )
    q, k, v = _in_projection(
        query,
        key,
        value,
        in_proj_weight,
        in_proj_bias,
        use_separate_proj_weight,
        q_proj_weight,
        k_proj_weight,
        v_proj_weight,
    )
    attn_mask = float_mask(attn_mask, "attn_mask", q.dtype)
    key_padding_mask = float_mask(key_padding_mask, "key_padding_mask", q.dtype)
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be {(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                    f"{(bsz * num_heads, tgt_len, src_len)}."
                )
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError(
                "bias cannot be added to static key."
                if static_k is not None
                else "bias cannot be added to static value."
            )
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    # (L, N, E) -> (N * H, L, head_dim): batch and heads together, as torch lays them out.
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        k = cat([k, zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros(bsz * num_heads, 1, head_dim, dtype=v.dtype, device=v.device)], 1)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(
                f"expecting key_padding_mask shape of {(bsz, src_len)}, but got {tuple(key_padding_mask.shape)}"
            )
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if not need_weights:  # as torch: the attention itself through scaled_dot_product_attention
        # the float mask is (1 or N * H, 1 or L, S): split batch and heads back apart
        if attn_mask is None or attn_mask.shape[0] == 1:
            mask4 = None if attn_mask is None else attn_mask.unsqueeze(0)
        else:
            mask4 = attn_mask.reshape(bsz, num_heads, *attn_mask.shape[1:])
        out = scaled_dot_product_attention(
            q.reshape(bsz, num_heads, tgt_len, head_dim),
            k.reshape(bsz, num_heads, src_len, head_dim),
            v.reshape(bsz, num_heads, src_len, head_dim),
            attn_mask=mask4,
            dropout_p=dropout_p,
        )
        out = out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        return (out if batched else out.squeeze(1)), None
    scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
    if attn_mask is not None:
        scores = scores + attn_mask.to(dtype=scores.dtype)
    # torch's weight-returning path gives NaN rows where everything is masked; its other path (attention
    # kernels) gives zeros there.
    weights = _safe_softmax(scores) if attn_mask is not None and not need_weights else scores.softmax(-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)  # the returned weights are the dropped-out ones, as torch's
    out = weights.matmul(v)  # (N * H, L, head_dim)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    if not batched:
        weights = weights.squeeze(0)
    return out, weights


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """A float mask with one more (allowed: 0) column, for an appended bias or zero key."""
    if mask is None:
        return None
    return cat([mask, zeros(*mask.shape[:-1], 1, dtype=mask.dtype, device=mask.device)], -1)
