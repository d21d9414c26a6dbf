"""Scaled dot-product attention on CUDA: the flash-attention kernels of genesis_kernels.attention.

Inputs are (B, H, L, D) views with any strides (key / value heads may divide the query heads: GQA);
the mask is broadcast to (B, Hq, Lq, Lk) as a 0-stride view, never copied. The forward also returns
the per-row logsumexp (fp32) and the dropout stream's draw (seed, offset; under CUDA-graph capture a
device buffer holding them), which the backward reuses to regenerate the same dropout mask.
"""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...device import cuda_device
from .common import View, expand_to, reg, stream_of
from .philox import Draw, snapshot, take

_DTYPES = ("float32", "float16", "bfloat16")  # what the flash kernels compute in (float64: the composed path)


@reg("attention_supported")
def attention_supported(dtype: str, head_dim: int) -> bool:
    """Whether the flash kernels take a query of this dtype and head dim."""
    return dtype in _DTYPES and head_dim <= gk.ATTENTION_MAX_HEAD_DIM


def _check(q: View, k: View, v: View) -> None:
    if q.dtype not in _DTYPES:
        raise RuntimeError(f"scaled_dot_product_attention (cuda kernel): unsupported dtype {q.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise RuntimeError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: {q.dtype}, "
            f"key.dtype: {k.dtype} and value.dtype: {v.dtype} instead."
        )


def _empty_like_layout(t: View) -> View:
    """Fresh dense memory of ``t``'s shape and dtype whose dims lie in the order of
    ``t``'s strides, outermost first. q, k and v usually arrive as (B, L, H, D) memory viewed as
    (B, H, L, D) (a projection split into heads, then transposed); an output or gradient laid out the
    same way makes the layer's ``transpose(1, 2).contiguous()`` free in the forward, and the transpose
    and view back to (B, L, H * D) in the backward, where row-major buffers cost a copy each (torch's
    flash kernels do the same)."""
    shape, strides = t.shape, t.strides
    if t.is_contiguous():
        return gs.empty(tuple(shape), t.dtype, t.device)
    order = sorted(range(len(shape)), key=lambda d: -strides[d])  # stable: ties keep their order
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return gs.empty(tuple([shape[d] for d in order]), t.dtype, t.device).permuted(inverse)


def _mask(mask: View | None, q: View, k: View) -> View | None:
    return None if mask is None else expand_to(mask, (*q.shape[:3], k.shape[2]))


@reg("attention")
def attention(q: View, k: View, v: View, mask: View | None, dropout_p: float, is_causal: bool, scale: float):
    _check(q, k, v)
    out = _empty_like_layout(q)
    lse = gs.empty(tuple(q.shape[:3]), "float32", q.device)
    draw, own = Draw(0, 0), None
    if dropout_p > 0.0:
        # Under capture the draw's state gets a buffer of its own, which the backward reads too, even
        # when it is captured in another graph (make_graphed_callables) or runs eagerly.
        draw, own = snapshot(take(cuda_device(q.device), math.prod(q.shape[:3]) * k.shape[2]), q.device)
    gk.attention_forward(
        q, k, v, out, lse, mask=_mask(mask, q, k), causal=is_causal, scale=scale,
        dropout_p=dropout_p, seed=draw.seed, offset=draw.offset, rng_ptr=draw.rng_ptr, stream=stream_of(q),
    )  # fmt: skip
    return out, lse, (draw, own)


@reg("attention_backward")
def attention_backward(
    grad: View, q: View, k: View, v: View, out: View, lse: View, mask: View | None,
    dropout_p: float, is_causal: bool, scale: float, rng: tuple[Draw, View | None],
):  # fmt: skip
    _check(q, k, v)
    draw = rng[0]  # rng[1]: the buffer a captured draw reads, kept alive by this tuple
    dq, dk, dv = _empty_like_layout(q), _empty_like_layout(k), _empty_like_layout(v)
    if grad.dtype != q.dtype:
        raise RuntimeError(f"attention_backward: gradient of dtype {grad.dtype} for a {q.dtype} output")
    gk.attention_backward(
        q, k, v, out, grad, lse, dq, dk, dv, mask=_mask(mask, q, k), causal=is_causal, scale=scale,
        dropout_p=dropout_p, seed=draw.seed, offset=draw.offset, rng_ptr=draw.rng_ptr, stream=stream_of(q),
    )  # fmt: skip
    return dq, dk, dv
