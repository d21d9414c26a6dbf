"""genesis_kernels.codegen: dropout (statistics, reproducibility, the cpu reference's Philox, the backward's
mask), the hand-written kernels' work as generated programs (codegen/programs.py), saved outputs in a
gradient program, and bad programs and launches raising clear errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from kernels_helpers import buf, make, sync
from test_kernels_codegen import assert_rel, run

import genesis_kernels as gk
from genesis_kernels import codegen
from genesis_kernels.codegen import ProgramBuilder, programs
from genesis_ndarray.backends.cpu.fused_pointwise import evaluate


def _dropout_program(p: float) -> codegen.Program:
    b = ProgramBuilder()
    x = b.input()
    b.output(b.dropout(x, p))
    b.output(b.dropout(x, p))  # a second dropout of the same x: its own mask (slot 1)
    return b.build()


def test_dropout_statistics_and_scale(device: str) -> None:
    x = make((64, 64), "float32", device, low=0.5, high=2.0)
    first, second = run(_dropout_program(0.3), [x], (64, 64), ["float32", "float32"], seed=7, offset=0)
    for out in (first, second):
        kept = out != 0
        assert abs(kept.float().mean().item() - 0.7) < 0.03  # 4096 draws: 5 standard deviations
        assert_rel(out[kept], x[kept].double() / 0.7, "float32")
    assert not torch.equal(first != 0, second != 0), "the two dropouts drew the same mask"


def test_dropout_same_seed_same_mask_and_cpu_reference(device: str) -> None:
    program = _dropout_program(0.5)
    x = make((5, 77), "float32", device)
    a = run(program, [x], (5, 77), ["float32", "float32"], seed=123, offset=40)
    b = run(program, [x], (5, 77), ["float32", "float32"], seed=123, offset=40)
    c = run(program, [x], (5, 77), ["float32", "float32"], seed=123, offset=44)
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    assert not torch.equal(a[0] != 0, c[0] != 0), "a new offset drew the same mask"
    # The cpu backend's torch Philox draws the very same masks.
    ref = evaluate(program, [x.cpu()], (5, 77), [], (123, 40, 0), [torch.float32, torch.float32])
    assert all(torch.equal(u.cpu() != 0, v != 0) for u, v in zip(a, ref))


def test_dropout_gradient_redraws_the_mask(device: str) -> None:
    program = programs.dropout_residual(0.4)
    x, res = make((6, 50), "float32", device), make((6, 50), "float32", device)
    out = run(program, [x, res], (6, 50), ["float32"], seed=99, offset=8)[0]
    keep = (out - res) != 0
    gp = program.gradient((True, True))
    assert sorted(gp.sources) == [("grad", 0)]  # the gradient needs neither input: the mask is redrawn
    g = make((6, 50), "float32", device)
    dx, dres = run(gp.program, [g], (6, 50), ["float32"] * 2, seed=99, offset=8)
    assert_rel(dx, g.double() * keep / 0.6, "float32")
    assert torch.equal(dres, g)


@pytest.mark.parametrize("kind", ["gelu", "gelu_tanh", "silu", "sigmoid"])
def test_generated_equals_handwritten_unary_and_backward(device: str, kind: str) -> None:
    x, dy = make((7, 130), "float32", device), make((7, 130), "float32", device)
    hand = torch.empty_like(x)
    gk.unary(kind, buf(x), buf(hand))
    hand_dx = torch.empty_like(x)
    gk.activation_backward(buf(dy), buf(x), buf(hand_dx), kind)
    sync(device)
    assert torch.equal(run(programs.activation(kind), [x], x.shape, ["float32"])[0], hand)
    dx = run(programs.activation_backward(kind), [dy, x], x.shape, ["float32"])[0]
    if kind == "sigmoid":  # the hand-written kernel's s * (1 - s) comes from its own sigmoid formula
        assert_rel(dx, hand_dx, "float32")
    else:
        assert torch.equal(dx, hand_dx)


@pytest.mark.parametrize("kind", ["gelu", "silu"])
def test_generated_gated_units_match_handwritten(device: str, kind: str) -> None:
    gate, up, dy = (make((5, 66), "float32", device) for _ in range(3))
    out, dgate, dup = torch.empty_like(gate), torch.empty_like(gate), torch.empty_like(gate)
    gk.gated_forward(buf(gate), buf(up), buf(out), kind)
    gk.gated_backward(buf(dy), buf(gate), buf(up), buf(dgate), buf(dup), kind)
    sync(device)
    # the hand-written kernels write act as x * cdf, elementwise's unary as 0.5 * x * (1 + erf): rounding apart
    assert_rel(run(programs.gated(kind), [gate, up], gate.shape, ["float32"])[0], out, "float32")
    got_dgate, got_dup = run(programs.gated_backward(kind), [dy, gate, up], gate.shape, ["float32"] * 2)
    assert_same_arithmetic(got_dgate, dgate, device)
    assert_rel(got_dup, dup, "float32")


def assert_same_arithmetic(got: torch.Tensor, want: torch.Tensor, device: str) -> None:
    """Bit-equal under the interpreter (numpy evaluates each operation as written). On the GPU the compiler
    may contract a multiply and an add into one fma differently in a fused kernel than in the separate
    kernels, a difference of one rounding per contracted pair, which a later sum carries: within 4 ulps of
    the largest value (a sum's rounding scales with its operands, not with its possibly cancelled result)."""
    if device == "cpu":
        assert torch.equal(got, want)
        return
    got, want = got.double().cpu(), want.double().cpu()
    bound = 4 * torch.finfo(torch.float32).eps * want.abs().max()
    assert ((got - want).abs() <= bound).all(), f"max difference {(got - want).abs().max():.3e} > {bound:.3e}"


@pytest.mark.parametrize("kind", ["gelu", "gelu_tanh", "silu"])
def test_bias_act_residual_equals_the_handwritten_chain(device: str, kind: str) -> None:
    x, bias, res = make((9, 48), "float32", device), make((48,), "float32", device), make((9, 48), "float32", device)
    t1, t2, hand = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
    gk.binary("add", buf(x), buf(bias.expand(9, 48)), buf(t1), compute_dtype="float32")
    gk.unary(kind, buf(t1), buf(t2))
    gk.binary("add", buf(t2), buf(res), buf(hand), compute_dtype="float32")
    sync(device)
    assert_same_arithmetic(run(programs.bias_act_residual(kind), [x, bias, res], x.shape, ["float32"])[0], hand, device)
    act = {"gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "silu": F.silu}[kind]
    assert_rel(hand, act(x.double() + bias.double()) + res.double(), "float32")


def test_gradient_loads_a_saved_output_only_when_recomputing_costs_more(device: str) -> None:
    b = ProgramBuilder()
    x = b.input()
    y = b.exp(b.tanh(b.sigmoid(x)) * 2.0)  # three transcendentals to recompute: loading y is cheaper
    b.output(y)
    b.output(x * 2.0)  # cheap: never loaded
    program = b.build()
    gp = program.gradient((True,), (True, True), (True, True))
    assert ("saved", 0) in gp.sources and ("saved", 1) not in gp.sources
    cheap = programs.activation("gelu").gradient((True,), (True,), (True,))
    assert ("saved", 0) not in cheap.sources
    x_t, g0, g1 = (make((4, 21), "float32", device, low=-1, high=1) for _ in range(3))
    y_t = run(program, [x_t], x_t.shape, ["float32", "float32"])[0]
    feed = {("input", 0): x_t, ("grad", 0): g0, ("grad", 1): g1, ("saved", 0): y_t}
    dx = run(gp.program, [feed[s] for s in gp.sources], x_t.shape, ["float32"])[0]
    leaf = x_t.cpu().double().requires_grad_()
    torch.autograd.backward(
        [torch.exp(torch.tanh(torch.sigmoid(leaf)) * 2), leaf * 2], [g0.cpu().double(), g1.cpu().double()]
    )
    assert_rel(dx, leaf.grad, "float32")


def test_bad_programs_raise() -> None:
    b = ProgramBuilder()
    x = b.input()
    with pytest.raises(ValueError, match="unknown pointwise op 'softmax'"):
        b.op("softmax", x)
    with pytest.raises(ValueError, match="'add' takes 2 operand"):
        b.op("add", x)
    with pytest.raises(TypeError, match="constant exponent"):
        b.pow(x, "2")
    with pytest.raises(TypeError, match="cast to unsupported dtype 'complex64'"):
        b.cast(x, "complex64")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        b.dropout(x, 1.5)
    with pytest.raises(ValueError, match="belongs to another ProgramBuilder"):
        b.add(x, ProgramBuilder().input())
    with pytest.raises(ValueError, match="already defined"):
        b.scalar("a")
        b.scalar("a")
    with pytest.raises(ValueError, match="at least one output"):
        b.build()
    with pytest.raises(ValueError, match="at least one tensor input"):
        empty = ProgramBuilder()
        empty.output(empty.const(1.0))
        empty.build()
    with pytest.raises(NotImplementedError, match="second derivative"):
        g = ProgramBuilder()
        g.output(g.gelu_grad(g.input()))
        g.build().gradient((True,))


def test_bad_launches_raise(device: str) -> None:
    program = programs.bias_act_residual("gelu")
    x, res = make((3, 8), "float32", device), make((3, 8), "float32", device)
    out = torch.empty_like(x)
    with pytest.raises(ValueError, match="takes 3 input"):
        codegen.fused_pointwise(program, [buf(x), buf(res)], [buf(out)])
    with pytest.raises(ValueError, match=r"input 1 of shape \(5,\) does not broadcast to the outputs' \(3, 8\)"):
        codegen.fused_pointwise(program, [buf(x), buf(make((5,), "float32", device)), buf(res)], [buf(out)])
    with pytest.raises(ValueError, match="takes 0 scalar"):
        codegen.fused_pointwise(program, [buf(x), buf(x), buf(res)], [buf(out)], [1.0])
    with pytest.raises(ValueError, match="has 1 output"):
        codegen.fused_pointwise(program, [buf(x), buf(x), buf(res)], [buf(out), buf(out)])
