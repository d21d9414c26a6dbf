"""Fused activation kernels (GELU / SiLU backward, gated forward and backward) against float64 torch.

Outputs are poisoned with NaN before each launch, so an element the kernel never writes fails.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from kernels_helpers import buf, make, sync

import genesis_kernels as gk

ACTS = {
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
}
REL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 1e-2, "float16": 1e-2}


def poisoned(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def assert_rel(out: torch.Tensor, ref: torch.Tensor, dtype: str) -> None:
    assert out.shape == ref.shape
    got, want = out.double().cpu(), ref.double().cpu()
    assert not got.isnan().any(), "an output element was not written"
    err = (got - want).norm() / want.norm().clamp_min(1e-300)
    assert err <= REL[dtype], f"relative error {err:.3e} > {REL[dtype]}"


def halves(rows: int, n: int, dtype: str, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """gate and up: the two halves of one (rows, 2n) tensor, F.glu's layout (rows of stride 2n)."""
    t = make((rows, 2 * n), dtype, device)
    return t[:, :n], t[:, n:]


SHAPES = [(1, 1), (3, 7), (5, 37), (2, 3, 129), (1, 1100), (0, 4)]


@pytest.mark.parametrize("kind", list(ACTS))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_activation_backward(device: str, kind: str, shape: tuple[int, ...], dtype: str) -> None:
    x, dy = make(shape, dtype, device), make(shape, dtype, device)
    dx = poisoned(shape, x.dtype, device)
    gk.activation_backward(buf(dy), buf(x), buf(dx), kind)
    sync(device)
    xx = x.double().requires_grad_()
    ACTS[kind](xx).backward(dy.double())
    if dx.numel():
        assert_rel(dx, xx.grad, dtype)


@pytest.mark.parametrize("kind", list(ACTS))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_activation_backward_with_the_forward(device: str, kind: str, shape: tuple[int, ...], dtype: str) -> None:
    """Given ``y``, the same pass writes act(x) too, bit for bit what the forward's elementwise op writes (a
    recompute in backward must reproduce the forward), and the gradient as without it."""
    x, dy = make(shape, dtype, device), make(shape, dtype, device)
    dx, y, alone, forward = (poisoned(shape, x.dtype, device) for _ in range(4))
    gk.activation_backward(buf(dy), buf(x), buf(dx), kind, y=buf(y))
    gk.activation_backward(buf(dy), buf(x), buf(alone), kind)
    gk.unary(kind, buf(x), buf(forward))
    sync(device)
    assert torch.equal(dx, alone) and torch.equal(y, forward)
    if y.numel():
        assert_rel(y, ACTS[kind](x.double()), dtype)


@pytest.mark.parametrize("kind", list(ACTS))
@pytest.mark.parametrize("rows,n", [(1, 1), (3, 7), (5, 37), (2, 129), (0, 3), (3, 0)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gated_forward_backward_on_halves(device: str, kind: str, rows: int, n: int, dtype: str) -> None:
    gate, up = halves(rows, n, dtype, device)
    out = poisoned((rows, n), gate.dtype, device)
    gk.gated_forward(buf(gate), buf(up), buf(out), kind)
    dy = make((rows, n), dtype, device)
    # dgate / dup written as the halves of one gradient buffer, the way glu's input gradient is laid out
    grad = poisoned((rows, 2 * n), gate.dtype, device)
    dgate, dup = grad[:, :n], grad[:, n:]
    gk.gated_backward(buf(dy), buf(gate), buf(up), buf(dgate), buf(dup), kind)
    sync(device)
    a, b = gate.double().requires_grad_(), up.double().requires_grad_()
    ref = ACTS[kind](a) * b
    ref.backward(dy.double())
    if out.numel():
        assert_rel(out, ref.detach(), dtype)
        assert_rel(dgate, a.grad, dtype)
        assert_rel(dup, b.grad, dtype)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("kind", ["gelu", "silu"])
def test_other_dtypes_and_transposed_operands(device: str, dtype: str, kind: str) -> None:
    # A transposed input beside a contiguous gradient: no unit inner stride shared by all operands.
    x = make((13, 9), dtype, device).t()
    dy = make((9, 13), dtype, device)
    dx = poisoned((9, 13), x.dtype, device)
    gk.activation_backward(buf(dy), buf(x), buf(dx), kind)
    gate, up = make((11, 6), dtype, device).t(), make((6, 11), dtype, device)
    out = poisoned((6, 11), x.dtype, device)
    gk.gated_forward(buf(gate), buf(up), buf(out), kind)
    sync(device)
    xx = x.double().requires_grad_()
    ACTS[kind](xx).backward(dy.double())
    assert_rel(dx, xx.grad, dtype)
    assert_rel(out, ACTS[kind](gate.double()) * up.double(), dtype)


def test_mixed_output_dtype(device: str) -> None:
    # bf16 inputs into a float32 output: the product is rounded once, from float32.
    gate, up = halves(4, 33, "bfloat16", device)
    out = poisoned((4, 33), torch.float32, device)
    gk.gated_forward(buf(gate), buf(up), buf(out), "silu")
    sync(device)
    assert_rel(out, F.silu(gate.double()) * up.double(), "float32")


def test_bad_arguments(device: str) -> None:
    x = make((4, 5), "float32", device)
    with pytest.raises(ValueError, match="unknown activation kind"):
        gk.activation_backward(buf(x), buf(x), buf(torch.empty_like(x)), "relu")
    with pytest.raises(ValueError, match="shape mismatch"):
        gk.gated_forward(buf(x), buf(x[:, :4]), buf(torch.empty_like(x)), "silu")
    i = torch.ones((4, 5), dtype=torch.int32, device=device)
    with pytest.raises(TypeError, match="float buffers"):
        gk.gated_forward(buf(i), buf(i), buf(i), "silu")


@pytest.mark.gpu_tier
@pytest.mark.parametrize("kind", ["gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_large_odd_shapes(device: str, kind: str, dtype: str) -> None:
    gate, up = halves(257, 3001, dtype, device)
    out = poisoned((257, 3001), gate.dtype, device)
    gk.gated_forward(buf(gate), buf(up), buf(out), kind)
    x, dy = make((1031, 4099), dtype, device), make((1031, 4099), dtype, device)
    dx = poisoned((1031, 4099), x.dtype, device)
    gk.activation_backward(buf(dy), buf(x), buf(dx), kind)
    sync(device)
    assert_rel(out, ACTS[kind](gate.double()) * up.double(), dtype)
    xx = x.double().requires_grad_()
    ACTS[kind](xx).backward(dy.double())
    assert_rel(dx, xx.grad, dtype)
