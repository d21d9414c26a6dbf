"""NDArray.attention / attention_backward (fused scaled dot-product attention) against torch's sdpa."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor

F32, BF16 = torch.float32, torch.bfloat16


def _torch(q, k, v, mask, causal, scale, dout):
    qq, kk, vv = (t.double().requires_grad_() for t in (q, k, v))
    m = mask if mask is None or mask.dtype == torch.bool else mask.double()
    out = torch.nn.functional.scaled_dot_product_attention(
        qq, kk, vv, attn_mask=m, is_causal=causal, scale=scale, enable_gqa=q.shape[1] != k.shape[1]
    )
    grads = torch.autograd.grad(out, (qq, kk, vv), dout.double())
    return out.detach(), grads


@pytest.mark.parametrize(
    "hq,hkv,lq,lk,causal,mask",
    [
        (2, 2, 5, 7, False, None),
        (4, 2, 6, 6, True, None),  # GQA + causal
        (2, 1, 5, 9, False, "bool"),  # MQA + a (Lq, Lk) bool mask broadcast over batch and heads
        (2, 2, 5, 9, False, "float"),
    ],
)
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_attention_and_backward_match_torch(device, dtype, hq, hkv, lq, lk, causal, mask):
    q = random_tensor((2, hq, lq, 16), dtype)
    k, v = random_tensor((2, hkv, lk, 16), dtype), random_tensor((2, hkv, lk, 16), dtype)
    m = None
    if mask == "bool":
        m = torch.rand(lq, lk) < 0.6
        m[:, 0] = True
    elif mask == "float":
        m = random_tensor((2, 1, lq, lk), dtype)
    dout = random_tensor((2, hq, lq, 16), dtype)
    ref, grads = _torch(q, k, v, m, causal, 0.3, dout)
    a = from_torch(q, device)
    out, lse, rng = a.attention(
        from_torch(k, device), from_torch(v, device), None if m is None else from_torch(m, device), 0.0, causal, 0.3
    )
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == F32 else dict(rtol=2e-2, atol=2e-2)
    assert_same(out, ref.to(dtype), **tol)
    got = from_torch(dout, device).attention_backward(
        a, from_torch(k, device), from_torch(v, device), out, lse, None if m is None else from_torch(m, device),
        0.0, causal, 0.3, rng,
    )  # fmt: skip
    for g, want in zip(got, grads):
        assert_same(g, want.to(dtype), **tol)


def test_attention_dropout_backward_replays_the_mask(device):
    # Linear in v: with the mask replayed, <dout, out> equals <dv, v> exactly (up to rounding).
    q, k, v = (random_tensor((1, 2, 6, 16)) for _ in range(3))
    dout = random_tensor((1, 2, 6, 16))
    a, kk, vv = from_torch(q, device), from_torch(k, device), from_torch(v, device)
    out, lse, rng = a.attention(kk, vv, None, 0.4, False, 0.25)
    _, _, dv = from_torch(dout, device).attention_backward(a, kk, vv, out, lse, None, 0.4, False, 0.25, rng)
    out_terms = out.to("cpu").native.double() * dout.double()
    dv_terms = dv.to("cpu").native.double() * v.double()
    # The sums cancel (signed terms), so fp32 rounding is bounded by the terms' magnitudes, not by the
    # sums; one mask element replayed differently would move them by ~1/72 of that magnitude.
    magnitude = out_terms.abs().sum() + dv_terms.abs().sum()
    assert (out_terms.sum() - dv_terms.sum()).abs() <= 1e-5 * magnitude
    dropped = (out.to("cpu").native - torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.25)).abs()
    assert dropped.max() > 1e-3  # dropout did act
