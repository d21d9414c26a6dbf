"""scaled_dot_product_attention (functions/attention.py, the fused op) against torch: forward values and
gradients (float64 on cpu), gradcheck, and gradgradcheck (the double backward goes through the Tensor-op
form of the backward); float32 / bfloat16 on cuda (the flash kernels) against a float64 reference."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import CUDA, I, check_forward_and_gradients, check_gradcheck, check_gradgradcheck, params, to_genesis

import genesis
import genesis_autograd as ga


def _sdpa(lib, q, k, v, mask=None, **kw):
    if lib is torch:
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, enable_gqa=q.shape[1] != k.shape[1], **kw
        )
    return ga.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)


def _bool_mask(lib):
    m = torch.tensor([[True, False, True, True, False], [False, False, False, False, False], [True] * 5])
    return m if lib is torch else genesis.tensor(m.numpy())


CASES = [
    ("plain", lambda lib, q, k, v: _sdpa(lib, q, k, v), [I((1, 2, 3, 4)), I((1, 2, 5, 4)), I((1, 2, 5, 4))]),
    ("causal-gqa", lambda lib, q, k, v: _sdpa(lib, q, k, v, is_causal=True, scale=0.7),
     [I((2, 4, 4, 3)), I((2, 2, 3, 3)), I((2, 2, 3, 3))]),
    ("bool-mask-dead-row", lambda lib, q, k, v: _sdpa(lib, q, k, v, _bool_mask(lib)),
     [I((1, 1, 3, 4)), I((1, 1, 5, 4)), I((1, 1, 5, 4))]),
    ("float-mask-transposed", lambda lib, q, k, v, m: _sdpa(lib, q, k, v, m.detach()),
     [I((1, 2, 4, 3), layout="t"), I((1, 2, 5, 3)), I((1, 2, 5, 3)), I((1, 1, 4, 5), rg=False)]),
]  # fmt: skip
PARAMS = params(CASES, devices=("cpu",))  # float64: cuda runs the float32 / bfloat16 cases below


@pytest.mark.parametrize("case,device", PARAMS)
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)


def test_double_backward_with_dropout_is_refused():
    q = genesis.randn(1, 1, 3, 4, requires_grad=True)
    out = ga.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    with pytest.raises(RuntimeError, match="double backward with dropout"):
        genesis.autograd.grad(out.sum(), q, create_graph=True)


def test_bad_shapes():
    q, k = genesis.randn(1, 3, 4, 8), genesis.randn(1, 2, 4, 8)
    with pytest.raises(RuntimeError, match="must divide"):
        ga.scaled_dot_product_attention(q, k, k)
    with pytest.raises(RuntimeError, match="4-D"):
        ga.scaled_dot_product_attention(q[0], k[0], k[0])


@pytest.mark.parametrize("device", [CUDA])
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 1e-2)])
def test_cuda_kernels_match_float64(device, dtype, tol):
    shapes = [(2, 4, 37, 64), (2, 2, 45, 64), (2, 2, 45, 64)]
    ts = [torch.randn(s, dtype=torch.float64) for s in shapes]
    tref = [t.clone().requires_grad_() for t in ts]
    ref = torch.nn.functional.scaled_dot_product_attention(*tref, is_causal=True, enable_gqa=True)
    w = torch.randn(ref.shape, dtype=torch.float64)
    (ref * w).sum().backward()
    gs = [to_genesis(t.to(dtype).float(), device).to(genesis.bfloat16 if dtype == torch.bfloat16 else genesis.float32)
          for t in ts]  # fmt: skip
    for g in gs:
        g.requires_grad_()
    out = ga.scaled_dot_product_attention(*gs, is_causal=True)
    (out.float() * to_genesis(w.float(), device)).sum().backward()

    def rel(a, b):
        a = torch.from_numpy(a.detach().float().cpu().numpy()).double()
        return ((a - b).norm() / b.norm()).item()

    assert rel(out, ref.detach()) < tol
    for g, t in zip(gs, tref):
        assert rel(g.grad, t.grad) < tol


@pytest.mark.parametrize("device", [CUDA])
def test_cuda_head_split_layout_is_kept_by_output_and_gradients(device):
    """q, k, v as a GPT block makes them: one (B, L, 3 * H * D) projection split in three, each viewed as
    (B, L, H, D) and transposed to (B, H, L, D). The output and q / k / v's gradients come back in that
    (B, L, H, D) memory order, so ``out.transpose(1, 2).contiguous()`` is the output itself and the
    gradient of each projection slice is one view (no copy) away; values match float64 torch."""
    b, length, heads, d = 2, 19, 3, 16
    x64 = torch.randn(b, length, 3 * heads * d, dtype=torch.float64)
    w64 = torch.randn(b, heads, length, d, dtype=torch.float64)

    def run(lib, x, w):
        q, k, v = (t.view(b, length, heads, d).transpose(1, 2) for t in x.split(heads * d, dim=2))
        out = _sdpa(lib, q, k, v, is_causal=True)
        (out * w).sum().backward()
        return out, q

    xt = x64.clone().requires_grad_()
    ref, _ = run(torch, xt, w64)
    x = to_genesis(x64.float(), device).requires_grad_()
    out, q = run(genesis, x, to_genesis(w64.float(), device))
    assert q.stride() == (length * 3 * heads * d, d, 3 * heads * d, 1)  # a slice of the projection
    assert out.stride() == (length * heads * d, d, heads * d, 1)  # q's dim order, dense
    flat = out.transpose(1, 2)
    assert flat.is_contiguous() and flat.contiguous() is flat
    got = torch.from_numpy(out.detach().cpu().numpy()).double()
    assert ((got - ref.detach()).norm() / ref.norm()).item() < 1e-5
    grad = torch.from_numpy(x.grad.cpu().numpy()).double()
    assert ((grad - xt.grad).norm() / xt.grad.norm()).item() < 1e-5
