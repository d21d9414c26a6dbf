"""FusedPointwise (functions/fused_pointwise.py): a generated pointwise program as one differentiable op,
forward and gradients against torch autograd on the same composite in float64, on both devices; broadcast
inputs' gradients summed down, several outputs, dropout's backward using the forward's mask, second
derivatives, errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from ag_helpers import assert_close, to_genesis, values

import genesis
import genesis_autograd as ga
from genesis_kernels.codegen import ProgramBuilder, programs


def _leaves(shapes, device, domain="any"):
    torch_leaves = [values(s, domain).requires_grad_() for s in shapes]
    return torch_leaves, [to_genesis(t, device, requires_grad=True) for t in torch_leaves]


def _bias_gelu_residual_scaled():
    b = ProgramBuilder()
    x, bias, res, scale = b.input(), b.input(), b.input(), b.scalar("scale")
    y = b.gelu(x + bias) * scale + res
    b.output(y)
    b.output(b.maximum(b.sigmoid(y), b.tanh(x)) / b.sqrt(b.abs(res) + 1.0))  # a second output over the first
    return b.build()


def test_forward_and_gradients_with_broadcast_and_two_outputs(device: str) -> None:
    t, g = _leaves([(4, 6), (6,), (4, 6)], device)
    out0, out1 = ga.fused_pointwise(_bias_gelu_residual_scaled(), *g, scalars=[0.5])
    y = F.gelu(t[0] + t[1]) * 0.5 + t[2]
    ref1 = torch.maximum(torch.sigmoid(y), torch.tanh(t[0])) / torch.sqrt(t[2].abs() + 1)
    assert_close(out0, y)
    assert_close(out1, ref1)
    w0, w1 = values((4, 6)), values((4, 6))
    (out0 * to_genesis(w0, device) + out1 * to_genesis(w1, device)).sum().backward()
    ((y * w0) + (ref1 * w1)).sum().backward()
    for gl, tl in zip(g, t):
        assert_close(gl.grad, tl.grad)


def test_only_some_inputs_need_gradients_and_one_output_unused(device: str) -> None:
    t, g = _leaves([(3, 5), (5,), (3, 5)], device)
    g[1].requires_grad_(False)
    t[1].requires_grad_(False)
    out0, _ = ga.fused_pointwise(_bias_gelu_residual_scaled(), *g, scalars=[2.0])
    out0.sum().backward()
    (F.gelu(t[0] + t[1]) * 2.0 + t[2]).sum().backward()
    assert g[1].grad is None
    assert_close(g[0].grad, t[0].grad)
    assert_close(g[2].grad, t[2].grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_low_precision_inputs_keep_their_dtype(device: str, dtype: torch.dtype) -> None:
    x, bias, res = (values(s).to(dtype) for s in [(8, 16), (16,), (8, 16)])
    gdtype = {torch.float32: genesis.float32, torch.bfloat16: genesis.bfloat16, torch.float16: genesis.float16}[dtype]
    # (numpy has no bfloat16: the values go over in float32, exactly, and are cast back)
    gx, gb, gr = (to_genesis(v.float(), device).to(gdtype).requires_grad_() for v in (x, bias, res))
    out = ga.fused_pointwise(programs.bias_act_residual("gelu"), gx, gb, gr)
    assert out.dtype.torch == dtype
    leaves = [v.double().requires_grad_() for v in (x, bias, res)]
    want = F.gelu(leaves[0] + leaves[1]) + leaves[2]
    # One rounding to the dtype of an fp32 computation (a bias gradient: a sum of 8 such values): two ulps.
    eps = torch.finfo(dtype).eps
    tol = dict(rtol=2 * eps, atol=2 * eps) if dtype != torch.float32 else dict(rtol=1e-5, atol=1e-5)
    assert_close(out.to(genesis.float64), want.detach(), **tol)
    out.to(genesis.float64).sum().backward()
    want.sum().backward()
    for gl, tl in zip((gx, gb, gr), leaves):
        assert gl.grad.dtype.torch == dtype
        assert_close(gl.grad.to(genesis.float64), tl.grad, **tol)


def test_dropout_backward_uses_the_forward_mask_and_masks_are_fresh(device: str) -> None:
    genesis.manual_seed(3)
    _, g = _leaves([(16, 32), (16, 32)], device)
    program = programs.dropout_residual(0.25)
    out = ga.fused_pointwise(program, *g)
    again = ga.fused_pointwise(program, *g)
    keep = torch.from_numpy((out - g[1]).detach().cpu().numpy()) != 0
    keep_again = torch.from_numpy((again - g[1]).detach().cpu().numpy()) != 0
    assert not torch.equal(keep, keep_again), "two calls drew the same mask"
    assert abs(keep.double().mean().item() - 0.75) < 0.06
    w = values((16, 32))
    (out * to_genesis(w, device)).sum().backward()
    assert_close(g[0].grad, w * keep / 0.75)
    assert_close(g[1].grad, w)
    genesis.manual_seed(3)
    replay = ga.fused_pointwise(program, *[x.detach() for x in g])  # the same seed replays the same masks
    assert torch.equal(torch.from_numpy(replay.cpu().numpy()), torch.from_numpy(out.detach().cpu().numpy()))


def test_second_derivative_through_the_gradient_program(device: str) -> None:
    b = ProgramBuilder()
    x = b.input()
    b.output(b.tanh(x) * b.exp(x * 0.5))
    program = b.build()
    t, g = _leaves([(3, 7)], device)
    (dx,) = genesis.autograd.grad(ga.fused_pointwise(program, *g).sum(), g, create_graph=True)
    dx.sum().backward()
    (tdx,) = torch.autograd.grad((torch.tanh(t[0]) * torch.exp(t[0] * 0.5)).sum(), t, create_graph=True)
    tdx.sum().backward()
    assert_close(dx, tdx)
    assert_close(g[0].grad, t[0].grad)


def test_errors(device: str) -> None:
    _, g = _leaves([(2, 3), (4, 3), (2, 3)], device)
    with pytest.raises(ValueError, match="takes 3 input"):
        ga.fused_pointwise(programs.bias_act_residual("silu"), g[0], g[2])
    with pytest.raises(RuntimeError, match="must match the size"):
        ga.fused_pointwise(programs.bias_act_residual("silu"), *g)
    with pytest.raises(TypeError, match="input 1 must be a Tensor, not float"):
        ga.fused_pointwise(programs.bias_act_residual("silu"), g[0], 1.0, g[2])
    with pytest.raises(ValueError, match="takes 1 scalar"):
        ga.fused_pointwise(_bias_gelu_residual_scaled(), g[0], g[0], g[2])
