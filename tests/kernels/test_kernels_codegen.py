"""genesis_kernels.codegen: every IR op's generated kernel and generated gradient against torch (float64
reference, torch autograd on the same composite), dtypes, dense / broadcast / strided layouts, multiple
outputs, the kernel cache. Dropout, the hand-written kernels' equivalents and bad programs:
test_kernels_codegen_extra.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from kernels_helpers import TORCH_DTYPES, buf, make, sync

from genesis_kernels import codegen
from genesis_kernels.codegen import ProgramBuilder

REL = {"float32": 2e-6, "float64": 1e-12, "bfloat16": 8e-3, "float16": 1e-3}


def run(program, inputs: list[torch.Tensor], shape, dtypes: list[str], scalars=(), **rng) -> list[torch.Tensor]:
    """The program's outputs (poisoned with NaN first, so an unwritten element fails)."""
    device = inputs[0].device
    outs = [torch.full(shape, float("nan"), device=device).to(TORCH_DTYPES[d]) for d in dtypes]
    codegen.fused_pointwise(program, [buf(t) for t in inputs], [buf(o) for o in outs], scalars, 0, **rng)
    sync(device.type)
    return outs


def assert_rel(got: torch.Tensor, want: torch.Tensor, dtype: str) -> None:
    got, want = got.double().cpu(), want.double().cpu()
    assert got.shape == want.shape
    assert not got.isnan().any(), "an output element was not written"
    err = (got - want).norm() / want.norm().clamp_min(1e-300)
    assert err <= REL[dtype], f"relative error {err:.3e} > {REL[dtype]}"


def gradients(program, inputs: list[torch.Tensor], grads: list[torch.Tensor], dtype: str, **rng) -> list:
    """The inputs' gradients through the generated gradient program (every input needs one)."""
    gp = program.gradient((True,) * len(inputs))
    feed = [inputs[i] if kind == "input" else grads[i] for kind, i in gp.sources]
    shape = torch.broadcast_shapes(*[t.shape for t in feed])
    outs = run(gp.program, feed, shape, [dtype] * len(gp.grads_for), **rng)
    return [outs[gp.grads_for.index(k)] for k in range(len(inputs))]


def reference(fn: Callable, inputs: list[torch.Tensor], grads: list[torch.Tensor]):
    """(outputs, input gradients broadcast-shaped) of torch on float64 copies: the reference."""
    leaves = [t.detach().cpu().double().requires_grad_() for t in inputs]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    torch.autograd.backward(outs, [g.cpu().double() for g in grads])
    return outs, [leaf.grad for leaf in leaves]


def check(program, fn, inputs, dtype: str, shape, n_out: int = 1) -> None:
    """Forward and gradients of ``program`` against ``fn`` in float64 (gradients of broadcast inputs summed)."""
    outs = run(program, inputs, shape, [dtype] * n_out)
    grads = [make(shape, dtype, inputs[0].device.type) for _ in range(n_out)]
    want, want_grads = reference(fn, inputs, grads)
    for got, w in zip(outs, want):
        assert_rel(got, w, dtype)
    for x, got, w in zip(inputs, gradients(program, inputs, grads, dtype), want_grads):
        lead = got.dim() - x.dim()
        dims = [d for d in range(got.dim()) if d < lead or (x.shape[d - lead] == 1 and got.shape[d] != 1)]
        summed = got.double().sum(dims, keepdim=True).reshape(x.shape) if dims else got
        assert_rel(summed, w, dtype)


UNARY = {
    "neg": torch.neg,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "silu": F.silu,
    "abs": torch.abs,
}
POSITIVE = ("log", "sqrt", "rsqrt")


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_op_forward_and_gradient(device: str, op: str) -> None:
    b = ProgramBuilder()
    b.output(b.op(op, b.input()))
    low = 0.2 if op in POSITIVE else -3.0
    check(b.build(), UNARY[op], [make((5, 37), "float32", device, low=low)], "float32", (5, 37))


BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
}


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_op_broadcast_forward_and_gradient(device: str, op: str) -> None:
    b = ProgramBuilder()
    b.output(b.op(op, b.input(), b.input()))
    x, y = make((4, 33), "float32", device), make((33,), "float32", device, low=0.5)
    if op in ("maximum", "minimum"):
        x[1] = y  # ties: torch splits the gradient in halves there
    check(b.build(), BINARY[op], [x, y], "float32", (4, 33))


def test_comparisons_where_pow_and_casts(device: str) -> None:
    b = ProgramBuilder()
    x, y = b.input(), b.input()
    picked = b.where(b.gt(x, y), b.pow(x, 2.0), b.pow(y, 1.5))
    flags = b.eq(x, y) + b.ne(x, y) * 2.0 + b.lt(x, y) * 4.0 + b.le(x, y) * 8.0 + b.ge(x, y) * 16.0
    rounded = b.cast(b.cast(x * 7.0, "int32"), "float32") + b.cast(y, "bfloat16") + b.cast(x, "float16")
    b.output(picked * 0.5 + b.pow(y, -1.0) + b.pow(x, 3.0) + b.pow(y, 0.5) - b.pow(y, -2.0))
    b.output(flags)
    b.output(rounded)
    x_t, y_t = make((3, 40), "float32", device), make((3, 40), "float32", device, low=0.5)
    x_t[0, :5] = y_t[0, :5]

    def fn(x, y):
        picked = torch.where(x > y, x**2, y**1.5)
        out = picked * 0.5 + y.reciprocal() + x**3 + y.sqrt() - y**-2.0
        flags = (x == y) + (x != y) * 2.0 + (x < y) * 4.0 + (x <= y) * 8.0 + (x >= y) * 16.0

        # A float cast's value is rounded and its gradient passes unrounded (inside the kernel nothing is
        # stored in the narrow dtype, where torch would round the gradient too); an integer cast has none.
        def through(t, dtype):
            return t + (t.float().to(dtype).double() - t).detach()

        rounded = (x * 7).float().int().double() + through(y, torch.bfloat16) + through(x, torch.float16)
        return out, flags.double() + 0 * x, rounded

    check(b.build(), fn, [x_t, y_t], "float32", (3, 40), n_out=3)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
def test_bias_gelu_residual_dtypes(device: str, dtype: str) -> None:
    b = ProgramBuilder()
    x, bias, res, scale = b.input(), b.input(), b.input(), b.scalar("scale")
    b.output(b.gelu(x + bias) * scale + res)
    inputs = [make((6, 24), dtype, device), make((24,), dtype, device), make((6, 24), dtype, device)]
    program = b.build()
    out = run(program, inputs, (6, 24), [dtype], [0.75])[0]
    assert out.dtype == TORCH_DTYPES[dtype]
    x, bias, res = (t.cpu().double() for t in inputs)
    assert_rel(out, F.gelu(x + bias) * 0.75 + res, dtype)


LAYOUTS = {
    "dense": lambda t: t,
    "transposed": lambda t: t.t().contiguous().t(),
    "sliced": lambda t: torch.cat([t, t], dim=1)[:, ::2],
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layouts(device: str, layout: str) -> None:
    b = ProgramBuilder()
    x, y = b.input(), b.input()
    b.output(b.silu(x) * y + 1.0)
    program = b.build()
    x_t = LAYOUTS[layout](make((9, 70), "float32", device))
    y_t = LAYOUTS[layout](make((9, 70), "float32", device))
    out = run(program, [x_t, y_t], (9, 70), ["float32"])[0]
    assert_rel(out, F.silu(x_t.cpu().double()) * y_t.cpu().double() + 1.0, "float32")


def test_four_dim_broadcast_into_strided_output(device: str) -> None:
    b = ProgramBuilder()
    x, y, z = b.input(), b.input(), b.input()
    b.output(b.tanh(x) + y * z)
    x_t, y_t = make((2, 3, 4, 5), "float32", device), make((3, 1, 5), "float32", device)
    z_t = make((2, 1, 4, 1), "float32", device)
    out = torch.full((2, 3, 5, 4), float("nan"), device=device).transpose(2, 3)  # a non-contiguous output
    codegen.fused_pointwise(b.build(), [buf(x_t), buf(y_t), buf(z_t)], [buf(out)])
    sync(device)
    want = torch.tanh(x_t.cpu().double()) + y_t.cpu().double() * z_t.cpu().double()
    assert_rel(out, want, "float32")


def test_multiple_outputs_share_subexpressions(device: str) -> None:
    b = ProgramBuilder()
    x = b.input()
    s = b.sigmoid(x)
    b.output(s * x, "bfloat16")
    b.output(b.sigmoid(x) * (1.0 - s), "float32")  # b.sigmoid(x) again: the same node
    program = b.build()
    assert sum(1 for n in program.nodes if n.op == "sigmoid") == 1
    x_t = make((7, 19), "float32", device)
    out0, out1 = run(program, [x_t], (7, 19), ["bfloat16", "float32"])
    xd = x_t.cpu().double()
    assert_rel(out0, F.silu(xd), "bfloat16")
    assert_rel(out1, torch.sigmoid(xd) * (1 - torch.sigmoid(xd)), "float32")


def test_scalars_by_name_and_no_recompile(device: str) -> None:
    b = ProgramBuilder()
    x = b.input()
    b.output(x * b.scalar("alpha") + b.scalar("beta"))
    program = b.build()
    x_t = make((3, 50), "float32", device)
    run(program, [x_t], (3, 50), ["float32"], {"alpha": 1.0, "beta": 0.0})
    before = dict(codegen.STATS)
    out = run(program, [x_t], (3, 50), ["float32"], {"beta": -1.0, "alpha": 3.0})[0]
    assert codegen.STATS == before, "a second call with new scalar values generated or compiled again"
    assert_rel(out, x_t.cpu().double() * 3.0 - 1.0, "float32")
    y_t = make((8, 11), "float32", device)  # a new shape, same layout class: no new source or build
    run(program, [y_t], (8, 11), ["float32"], [2.0, 1.0])
    assert codegen.STATS == before


def test_empty_output_launches_nothing(device: str) -> None:
    b = ProgramBuilder()
    b.output(b.exp(b.input()))
    x = make((0, 4), "float32", device)
    assert run(b.build(), [x], (0, 4), ["float32"])[0].shape == (0, 4)
