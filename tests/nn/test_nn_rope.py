"""Rotary embeddings on every floor above the kernel: NDArray.rope, the autograd Function (forward, fused
backward, double backward), F.apply_rotary_emb and nn.RotaryEmbedding (default / linear / dynamic / llama3
tables), against torch references written here: HF's rotate_half formula for half-split pairs, complex
multiplication for interleaved ones, float64, both devices, odd sizes, partial rotary, position offsets.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import genesis
import genesis.nn.functional as F
from genesis import nn


def g(t: torch.Tensor, device: str, requires_grad: bool = False) -> genesis.Tensor:
    return genesis.tensor(t.numpy(), device=device, requires_grad=requires_grad)


def t_(x: genesis.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.asarray(x.detach().cpu().numpy()))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, -1)
    return torch.cat((-x2, x1), -1)


def ref_rope(x, cos, sin, pos, seq_dim: int, interleaved: bool) -> torch.Tensor:
    """torch RoPE (differentiable): x (B, S, H, D) / (B, H, S, D); cos / sin (P, half); pos (B, S)."""
    half = cos.shape[1]
    c, s = cos[pos], sin[pos]
    c, s = (v.unsqueeze(2 if seq_dim == 1 else 1) for v in (c, s))
    rot, rest = x[..., : 2 * half], x[..., 2 * half :]
    if interleaved:
        z = torch.view_as_complex(rot.contiguous().reshape(*rot.shape[:-1], half, 2))
        out = torch.view_as_real(z * torch.complex(c, s)).flatten(-2)
    else:
        out = rot * torch.cat((c, c), -1) + rotate_half(rot) * torch.cat((s, s), -1)
    return torch.cat((out, rest), -1)


def tables(P: int, half: int) -> tuple[torch.Tensor, torch.Tensor]:
    theta = torch.rand(P, half, dtype=torch.float64) * 6.0 - 3.0
    return theta.cos(), theta.sin()


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("seq_dim", [1, 2])
def test_apply_rotary_emb_q_and_k_forward_and_gradients(device: str, interleaved: bool, seq_dim: int) -> None:
    B, S, Hq, Hk, D, half, P = 2, 5, 3, 1, 9, 3, 11  # odd head_dim, partial rotary, GQA keys
    shape = (lambda h: (B, S, h, D)) if seq_dim == 1 else (lambda h: (B, h, S, D))
    q, k = torch.randn(shape(Hq), dtype=torch.float64), torch.randn(shape(Hk), dtype=torch.float64)
    cos, sin = tables(P, half)
    pos = torch.randint(0, P, (B, S))
    gq, gk_ = g(q, device, True), g(k, device, True)
    oq, ok = F.apply_rotary_emb(gq, g(cos, device), g(sin, device), g(pos, device), interleaved, k=gk_,
                                seq_dim=seq_dim)  # fmt: skip
    tq, tk = q.clone().requires_grad_(), k.clone().requires_grad_()
    wq, wk = ref_rope(tq, cos, sin, pos, seq_dim, interleaved), ref_rope(tk, cos, sin, pos, seq_dim, interleaved)
    torch.testing.assert_close(t_(oq), wq.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(t_(ok), wk.detach(), rtol=1e-12, atol=1e-12)
    uq, uk = torch.randn_like(wq), torch.randn_like(wk)
    ((oq * g(uq, device)).sum() + (ok * g(uk, device)).sum()).backward()
    ((wq * uq).sum() + (wk * uk).sum()).backward()
    torch.testing.assert_close(t_(gq.grad), tq.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(t_(gk_.grad), tk.grad, rtol=1e-12, atol=1e-12)
    assert oq.grad_fn.name() == "RotaryBackward0" and ok.grad_fn is oq.grad_fn  # one node for q and k


def test_positions_default_offsets_shared_rows_and_strided_input(device: str) -> None:
    B, S, H, D = 2, 3, 2, 8
    cos, sin = tables(16, 4)
    qkv = torch.randn(B, S, 3 * H, D, dtype=torch.float64)
    x = g(qkv, device)[:, :, H : 2 * H]  # a strided view, read in place
    want0 = ref_rope(qkv[:, :, H : 2 * H], cos, sin, torch.arange(S).expand(B, S), 1, False)
    torch.testing.assert_close(t_(F.apply_rotary_emb(x, g(cos, device), g(sin, device))), want0)
    offset = torch.arange(S) + 9  # a decode step's positions, one row shared by the batch
    want = ref_rope(qkv[:, :, H : 2 * H], cos, sin, offset.expand(B, S), 1, False)
    got = F.apply_rotary_emb(x, g(cos, device), g(sin, device), g(offset.int(), device))
    torch.testing.assert_close(t_(got), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_low_precision_inputs_compute_in_float32(device: str, dtype: torch.dtype) -> None:
    q = torch.randn(1, 4, 3, 16).to(dtype)
    cos, sin = tables(8, 8)
    cos32, sin32 = cos.float(), sin.float()
    pos = torch.tensor([[7, 0, 3, 5]])
    got = F.apply_rotary_emb(g(q.float(), device).to(getattr(genesis, str(dtype)[6:])), g(cos32, device),
                             g(sin32, device), g(pos, device))  # fmt: skip
    assert got.dtype == getattr(genesis, str(dtype)[6:])
    want = ref_rope(q.double(), cos32.double(), sin32.double(), pos, 1, False).to(dtype)
    # bfloat16: the float32 result and the float64 one may round to neighbouring bf16 values (1 ulp: 2**-7
    # relative); the absolute term is float32's cancellation error in x * cos - y * sin
    rtol = 2**-7 if dtype == torch.bfloat16 else 1e-6
    torch.testing.assert_close(t_(got.float()), want.float(), rtol=rtol, atol=1e-6)


def test_double_backward(device: str) -> None:
    q = torch.randn(1, 3, 2, 6, dtype=torch.float64)
    cos, sin = tables(5, 3)
    gq = g(q, device, True)
    out = F.apply_rotary_emb(gq, g(cos, device), g(sin, device))
    (dq,) = genesis.autograd.grad((out * out).sum(), [gq], create_graph=True)
    (dq * dq).sum().backward()
    tq = q.clone().requires_grad_()
    w = ref_rope(tq, cos, sin, torch.arange(3).expand(1, 3), 1, False)
    (tdq,) = torch.autograd.grad((w * w).sum(), [tq], create_graph=True)
    (tdq * tdq).sum().backward()
    torch.testing.assert_close(t_(dq), tdq.detach())
    torch.testing.assert_close(t_(gq.grad), tq.grad)


def test_errors(device: str) -> None:
    cos, sin = (g(t, device) for t in tables(4, 2))
    x = g(torch.randn(1, 2, 1, 4, dtype=torch.float64), device)
    with pytest.raises(RuntimeError, match=r"q must be 4-D"):
        F.apply_rotary_emb(x[0], cos, sin)
    with pytest.raises(RuntimeError, match=r"rotary_dim <= head_dim 2"):
        F.apply_rotary_emb(x[..., :2], cos, sin)
    with pytest.raises(IndexError, match="int32 / int64"):
        F.apply_rotary_emb(x, cos, sin, g(torch.zeros(2), device))
    with pytest.raises(RuntimeError, match=r"positions must have shape \[2\] or \[1, 2\]"):
        F.apply_rotary_emb(x, cos, sin, g(torch.zeros(3, dtype=torch.int64), device))
    with pytest.raises(NotImplementedError, match="'int64'"):
        F.apply_rotary_emb(g(torch.ones(1, 2, 1, 4, dtype=torch.int64), device), cos, sin)
    with pytest.raises(IndexError, match="seq_dim must be 1 or 2"):
        F.apply_rotary_emb(x, cos, sin, seq_dim=3)
    with pytest.raises(RuntimeError, match="constant tables"):
        F.apply_rotary_emb(x, cos.detach().requires_grad_(), sin)


# ------------------------------------------------------------------ nn.RotaryEmbedding's tables
def ref_inv_freq(dim: int, base: float, scaling: dict | None) -> torch.Tensor:
    """HF's rope types, written out in float64 torch."""
    inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    kind = (scaling or {}).get("rope_type", "default")
    if kind == "linear":
        return inv / scaling["factor"]
    if kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        medium = (wavelen >= old / high) & (wavelen <= old / low)
        return torch.where(medium, (1 - smooth) * scaled / factor + smooth * scaled, scaled)
    return inv


LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 64}  # fmt: skip


@pytest.mark.parametrize("scaling", [None, {"rope_type": "linear", "factor": 4.0}, LLAMA3], ids=str)
@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary_embedding_module(device: str, scaling: dict | None, interleaved: bool) -> None:
    dim, head_dim, P = 16, 20, 128  # partial rotary: 4 features pass through
    rope = nn.RotaryEmbedding(dim, P, base=500.0, scaling=scaling, interleaved=interleaved, device=device,
                              dtype=genesis.float64, seq_dim=2)  # fmt: skip
    inv = ref_inv_freq(dim, 500.0, scaling)
    freqs = torch.arange(P, dtype=torch.float64)[:, None] * inv[None, :]
    torch.testing.assert_close(t_(rope.cos_cached), freqs.cos())
    torch.testing.assert_close(t_(rope.sin_cached), freqs.sin())
    q, k = torch.randn(2, 4, 3, head_dim, dtype=torch.float64), torch.randn(2, 2, 3, head_dim, dtype=torch.float64)
    pos = torch.tensor([[100, 101, 102], [5, 6, 7]])
    oq, ok = rope(g(q, device), g(k, device), g(pos, device))
    torch.testing.assert_close(t_(oq), ref_rope(q, freqs.cos(), freqs.sin(), pos, 2, interleaved))
    torch.testing.assert_close(t_(ok), ref_rope(k, freqs.cos(), freqs.sin(), pos, 2, interleaved))
    assert ("dim=16" in repr(rope) and rope.state_dict() == {}) or len(rope.state_dict()) == 0


def test_rotary_embedding_dynamic_ntk(device: str) -> None:
    dim, P, factor = 8, 16, 2.0
    rope = nn.RotaryEmbedding(dim, P, scaling={"rope_type": "dynamic", "factor": factor}, device=device,
                              dtype=genesis.float64)  # fmt: skip
    q = torch.randn(1, 3, 1, dim, dtype=torch.float64)
    # within the original context: the plain tables
    pos = torch.tensor([[0, 1, 2]])
    oq, _ = rope(g(q, device), g(q, device), g(pos, device))
    inv = ref_inv_freq(dim, 10000.0, None)
    f = torch.arange(P, dtype=torch.float64)[:, None] * inv
    torch.testing.assert_close(t_(oq), ref_rope(q, f.cos(), f.sin(), pos, 1, False))
    # past it: the base grows with seq_len = max position + 1 (HF's dynamic NTK)
    pos = torch.tensor([[20, 21, 23]])
    oq, _ = rope(g(q, device), g(q, device), g(pos, device))
    seq_len = 24
    base = 10000.0 * (factor * seq_len / P - (factor - 1)) ** (dim / (dim - 2))
    f = torch.arange(seq_len, dtype=torch.float64)[:, None] * ref_inv_freq(dim, base, None)
    torch.testing.assert_close(t_(oq), ref_rope(q, f.cos(), f.sin(), pos, 1, False))
    assert tuple(rope.cos_cached.shape) == (seq_len, dim // 2)
    # a short sequence again: back to the original tables
    rope(g(q, device), g(q, device), seq_len=3)
    assert tuple(rope.cos_cached.shape) == (P, dim // 2)


def test_rotary_embedding_errors() -> None:
    with pytest.raises(ValueError, match="positive even"):
        nn.RotaryEmbedding(7)
    with pytest.raises(ValueError, match="unknown rope_type 'yarn2'"):
        nn.RotaryEmbedding(8, scaling={"rope_type": "yarn2", "factor": 2.0})
    with pytest.raises(ValueError, match="needs"):
        nn.RotaryEmbedding(8, scaling={"rope_type": "llama3", "factor": 2.0})
