"""Fused activation ops (GELU / SiLU backward, gated forward and backward) against torch autograd."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from nd_helpers import assert_same, from_torch, random_tensor

import genesis_ndarray as nd

ACTS = {
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
}
F32, F64, BF16 = torch.float32, torch.float64, torch.bfloat16


@pytest.mark.parametrize("kind", list(ACTS))
@pytest.mark.parametrize("dtype", [F32, F64, BF16])
def test_activation_backward(device, kind, dtype):
    x, dy = random_tensor((3, 4, 5), dtype), random_tensor((3, 4, 5), dtype)
    xx = x.double().requires_grad_()
    ACTS[kind](xx).backward(dy.double())
    got = from_torch(x, device).activation_backward(from_torch(dy, device), kind)
    assert_same(got, xx.grad.to(dtype))


@pytest.mark.parametrize("kind", list(ACTS))
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_activation_backward_and_forward(device, kind, dtype):
    """The gradient as activation_backward gives it, and the activation as the forward's unary op gives it."""
    x, dy = random_tensor((3, 4, 5), dtype), random_tensor((3, 4, 5), dtype)
    a, g = from_torch(x, device), from_torch(dy, device)
    dx, y = a.activation_backward_and_forward(g, kind)
    assert torch.equal(dx.to("cpu").native, a.activation_backward(g, kind).to("cpu").native)
    assert torch.equal(y.to("cpu").native, a.unary(kind).to("cpu").native)


@pytest.mark.parametrize("kind", list(ACTS))
@pytest.mark.parametrize("dtype", [F32, F64, BF16])
def test_gated_forward_backward_on_halves(device, kind, dtype):
    t = random_tensor((6, 14), dtype)
    whole = from_torch(t, device)
    gate, up = whole.narrow(1, 0, 7), whole.narrow(1, 7, 7)  # views of one array, read in place on cuda
    a, b = t[:, :7].double().requires_grad_(), t[:, 7:].double().requires_grad_()
    ref = ACTS[kind](a) * b
    dy = random_tensor((6, 7), dtype)
    ref.backward(dy.double())
    # bfloat16: torch rounds act(gate) before the product on cpu, the kernel does not; compare with float64.
    tol = dict(rtol=1.6e-2, atol=2e-2) if dtype == BF16 else {}
    assert_same(gate.gated_forward(up, kind), ref.detach().to(dtype), **tol)
    dgate, dup = gate.gated_backward(from_torch(dy, device), up, kind)
    assert_same(dgate, a.grad.to(dtype), **tol)
    assert_same(dup, b.grad.to(dtype), **tol)


def test_empty_and_scalar(device):
    e = from_torch(torch.empty((0, 3)), device)
    assert e.gated_forward(e, "silu").shape == (0, 3)
    assert e.activation_backward(e, "gelu").shape == (0, 3)
    s = torch.tensor(0.7, dtype=F64)
    assert_same(from_torch(s, device).gated_forward(from_torch(s * 2, device), "silu"), F.silu(s) * s * 2)


def test_errors(device):
    x = from_torch(random_tensor((2, 3)), device)
    with pytest.raises(ValueError, match="unknown activation"):
        x.activation_backward(x, "relu")
    with pytest.raises(RuntimeError, match="match in shape and dtype"):
        x.gated_forward(from_torch(random_tensor((2, 4)), device), "silu")
    with pytest.raises(RuntimeError, match="match in shape and dtype"):
        x.gated_forward(x.astype(nd.float64), "silu")
    i = from_torch(random_tensor((2, 3), torch.int64), device)
    with pytest.raises(NotImplementedError, match="Long"):
        i.gated_forward(i, "silu")


@pytest.mark.parametrize("kind", list(ACTS))
def test_activation_backward_bf16_keeps_float32_accuracy_where_the_output_saturates(device, kind):
    # Where sigmoid(x) is near 1, a gradient formed from a bfloat16 output loses 1 - y's digits (3% off);
    # both devices compute from x in float32 and round once.
    x = (torch.linspace(-6, 6, 241, dtype=torch.float64) + 0.01 * torch.randn(241, dtype=torch.float64)).to(BF16)
    dy = random_tensor((241,), BF16)
    xx = x.double().requires_grad_()
    ACTS[kind](xx).backward(dy.double())
    got = from_torch(x, device).activation_backward(from_torch(dy, device), kind)
    assert_same(got, xx.grad.to(BF16))
