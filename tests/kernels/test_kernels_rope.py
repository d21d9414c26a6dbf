"""The rotary-embedding kernel (genesis_kernels.rope) against float64 torch references written here.

Half-split pairs (i, i + d/2) against HF's rotate_half formula, interleaved pairs (2i, 2i+1) against
complex multiplication; both token layouts, strided views, partial rotary, odd sizes, per-row positions
(stride-0 rows too), the backward (rotation by -theta) and in-place use. Outputs are poisoned with NaN,
so an element the kernel never writes fails. Tiny sizes: the interpreter.
"""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import buf, make, sync

import genesis_kernels as gk

TOL = {"float32": 1e-6, "float64": 1e-13, "bfloat16": 1e-2, "float16": 2e-3}


def tables(max_pos: int, half: int, dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """cos / sin tables of random angles (not a frequency ladder: any table must work)."""
    theta = torch.rand(max_pos, half, dtype=torch.float64) * 6.0 - 3.0
    return theta.cos().to(dtype).to(device), theta.sin().to(dtype).to(device)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, -1)
    return torch.cat((-x2, x1), -1)


def reference(x, cos, sin, pos, seq_dim: int, interleaved: bool, inverse: bool = False) -> torch.Tensor:
    """float64 RoPE of x (B, S, H, D) or (B, H, S, D); cos / sin (P, half); pos (B, S)."""
    x, cos, sin = x.double().cpu(), cos.double().cpu(), sin.double().cpu()
    pos = pos.long().cpu()
    half = cos.shape[1]
    c, s = cos[pos], sin[pos] * (-1.0 if inverse else 1.0)  # (B, S, half)
    c, s = (t.unsqueeze(2 if seq_dim == 1 else 1) for t in (c, s))
    rot, rest = x[..., : 2 * half], x[..., 2 * half :]
    if interleaved:
        z = torch.view_as_complex(rot.reshape(*rot.shape[:-1], half, 2).contiguous())
        out = torch.view_as_real(z * torch.complex(c, s)).flatten(-2)
    else:
        out = rot * torch.cat((c, c), -1) + rotate_half(rot) * torch.cat((s, s), -1)
    return torch.cat((out, rest), -1)


def close(got: torch.Tensor, want: torch.Tensor, dtype: str) -> None:
    got = got.double().cpu()
    assert not got.isnan().any(), "an output element was not written"
    err = (got - want).abs().max() / want.abs().max().clamp_min(1e-30)
    assert err <= TOL[dtype], f"relative error {err:.3e} > {TOL[dtype]}"


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("seq_dim", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_rope_forward_and_backward(device: str, interleaved: bool, seq_dim: int, dtype: str) -> None:
    B, S, H, D, half, P = 2, 3, 5, 10, 3, 9  # rotary_dim 6 of head_dim 10: 4 features passed through
    shape = (B, S, H, D) if seq_dim == 1 else (B, H, S, D)
    x = make(shape, dtype, device)
    cos, sin = tables(P, half, torch.float32 if dtype != "float64" else torch.float64, device)
    pos = torch.randint(0, P, (B, S), dtype=torch.int32).to(device)
    for backward in (False, True):
        out = torch.full_like(x, float("nan"))
        gk.rope(buf(x), buf(cos), buf(sin), buf(pos), buf(out), seq_dim=seq_dim, interleaved=interleaved,
                backward=backward)  # fmt: skip
        sync(device)
        close(out, reference(x, cos, sin, pos, seq_dim, interleaved, inverse=backward), dtype)


def test_rope_backward_undoes_forward(device: str) -> None:
    x = make((1, 4, 3, 8), "float64", device)
    theta = torch.rand(6, 4, dtype=torch.float64) * 6.0  # a true rotation: cos^2 + sin^2 = 1
    cos, sin = theta.cos().to(device), theta.sin().to(device)
    pos = torch.tensor([[5, 0, 2, 3]], dtype=torch.int64, device=device)
    y, z = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    gk.rope(buf(x), buf(cos), buf(sin), buf(pos), buf(y), interleaved=True)
    gk.rope(buf(y), buf(cos), buf(sin), buf(pos), buf(z), interleaved=True, backward=True)
    sync(device)
    close(z, x.double().cpu(), "float64")


def test_rope_strided_views_shared_positions_and_in_place(device: str) -> None:
    # x: the q part of a fused qkv projection (B, S, 3 * H, D) seen as (B, S, H, D); positions one row
    # shared by the batch (stride 0), offset by a decode step; cos / sin columns of a wider table.
    B, S, H, D = 3, 2, 3, 7  # odd head_dim: rotary_dim 6, one feature passed through
    qkv = make((B, S, 3 * H, D), "float32", device)
    x = qkv[:, :, H : 2 * H]
    wide_c, wide_s = tables(12, 5, torch.float32, device)
    cos, sin = wide_c[:, 1:4], wide_s[:, 1:4]
    pos = (torch.arange(S, dtype=torch.int64) + 7).to(device).expand(B, S)
    want = reference(x, cos, sin, pos, 1, False)
    out = torch.full((B, H, S, D), float("nan"), device=device).transpose(1, 2)  # out in another layout
    gk.rope(buf(x), buf(cos), buf(sin), buf(pos), buf(out))
    sync(device)
    close(out, want, "float32")
    gk.rope(buf(x), buf(cos), buf(sin), buf(pos), buf(x))  # in place, on a strided view
    sync(device)
    close(x, want, "float32")


def test_rope_many_heads_and_16_bit(device: str) -> None:
    # more heads than one program's block (_TILE / half), float16 in, fp32 math
    B, S, H, D = 1, 2, 70, 64
    x = make((B, S, H, D), "float16", device)
    cos, sin = tables(4, 32, torch.float32, device)
    pos = torch.tensor([[3, 1]], device=device)
    out = torch.full_like(x, float("nan"))
    gk.rope(buf(x), buf(cos), buf(sin), buf(pos), buf(out))
    sync(device)
    close(out, reference(x, cos, sin, pos, 1, False), "float16")


def test_rope_out_of_range_positions_are_clamped(device: str) -> None:
    x = make((1, 2, 1, 4), "float64", device)
    cos, sin = tables(3, 2, torch.float64, device)
    out, pos = torch.full_like(x, float("nan")), torch.tensor([[-4, 99]], device=device)
    gk.rope(buf(x), buf(cos), buf(sin), buf(pos), buf(out))
    sync(device)
    close(out, reference(x, cos, sin, torch.tensor([[0, 2]]), 1, False), "float64")


def test_rope_rejects_bad_operands(device: str) -> None:
    x = make((1, 2, 1, 4), "float32", device)
    cos, sin = tables(3, 2, torch.float32, device)
    pos = torch.zeros(1, 2, dtype=torch.int64, device=device)
    with pytest.raises(ValueError, match="rotary_dim 6 exceeds head_dim 4"):
        big_c, big_s = tables(3, 3, torch.float32, device)
        gk.rope(buf(x), buf(big_c), buf(big_s), buf(pos), buf(x))
    with pytest.raises(ValueError, match="positions must be int32 / int64"):
        gk.rope(buf(x), buf(cos), buf(sin), gk.Buffer(pos.data_ptr(), (1, 2), (2, 1), "float32"), buf(x))
    with pytest.raises(ValueError, match="positions must be"):
        gk.rope(buf(x), buf(cos), buf(sin), buf(pos[:, :1]), buf(x))
    with pytest.raises(ValueError, match="seq_dim must be 1 or 2"):
        gk.rope(buf(x), buf(cos), buf(sin), buf(pos), buf(x), seq_dim=3)
    with pytest.raises(TypeError, match="float buffers"):
        xi = torch.ones(1, 2, 1, 4, dtype=torch.int32, device=device)
        gk.rope(buf(xi), buf(cos), buf(sin), buf(pos), buf(xi))
