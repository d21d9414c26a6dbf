"""A genesis_kernels.codegen pointwise program evaluated with torch ops: the reference semantics.

Every value is computed in float32 (float64 when an operand or output is float64), as the generated
kernel does: a comparison is 1.0 / 0.0, ``cast`` rounds through its dtype, outputs are converted once
at the end (``!= 0`` for bool, truncation for integers). The program is read as plain data (node op
names), so this backend never imports the kernels package (nor Triton).

Dropout masks are drawn with Philox 4x32-10 exactly as the generated kernel draws them (element ``i``
of dropout slot ``k``: the first word of counter ``offset + k * numel + i`` under ``seed``, mapped to
[0, 1) as triton.language.random does), so a (seed, offset) gives the same mask on both devices and
a backward redraws its forward's mask.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from ...dtypes import DType, int64
from ...registry import lookup
from .common import reg

_M32 = 0xFFFFFFFF


def philox_uniform(seed: int, counters: torch.Tensor) -> torch.Tensor:
    """float32 uniforms in [0, 1) of Philox 4x32-10's first word at int64 ``counters`` under ``seed``.

    Unsigned 32-bit arithmetic in int64 tensors: a product of two 32-bit words wraps in 64 bits with
    its high word intact, and masking keeps every value a 32-bit word."""
    c0, c1 = counters & _M32, (counters >> 32) & _M32
    c2 = c3 = torch.zeros_like(counters)
    k0, k1 = seed & _M32, (seed >> 32) & _M32
    for _ in range(10):
        p0, p2 = c0 * 0xD2511F53, c2 * 0xCD9E8D57
        c0, c2, c1, c3 = ((p2 >> 32) & _M32) ^ c1 ^ k0, ((p0 >> 32) & _M32) ^ c3 ^ k1, p2 & _M32, p0 & _M32
        k0, k1 = (k0 + 0x9E3779B9) & _M32, (k1 + 0xBB67AE85) & _M32
    signed = torch.where(c0 >= 2**31, c0 - 2**32, c0)  # the word as int32
    signed = torch.where(signed < 0, -signed - 1, signed)
    return signed.to(torch.float32) * torch.tensor(4.6566127342e-10, dtype=torch.float32)


def _gelu_grad(x: torch.Tensor, approximate: str) -> torch.Tensor:
    return torch.ops.aten.gelu_backward(torch.ones_like(x), x, approximate=approximate)


_UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "neg": torch.neg,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "abs": torch.abs,
    "sign": torch.sign,
    "gelu_grad": lambda x: _gelu_grad(x, "none"),
    "gelu_tanh_grad": lambda x: _gelu_grad(x, "tanh"),
    "silu_grad": lambda x: torch.ops.aten.silu_backward(torch.ones_like(x), x),
}
_BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
}


def _leaf(node: Any, inputs: list[torch.Tensor], scalars: list[float], numel: int, rng: Any, cdt: Any) -> Any:
    if node.op == "input":
        return inputs[node.attr].to(cdt)
    if node.op == "scalar":
        return torch.tensor(scalars[node.attr], dtype=cdt)
    if node.op == "const":
        return torch.tensor(node.attr, dtype=cdt)
    p, slot = node.attr  # dropout_mask
    seed, offset = rng[0], rng[1]
    u = philox_uniform(seed & (2**63 - 1), offset + slot * numel + torch.arange(numel, dtype=torch.int64))
    scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
    return (u >= torch.tensor(p, dtype=torch.float32)).to(cdt) * torch.tensor(scale, dtype=cdt)


def evaluate(program: Any, inputs: list[torch.Tensor], shape: tuple[int, ...], scalars: list[float], rng: Any,
             out_dtypes: list[torch.dtype]) -> list[torch.Tensor]:  # fmt: skip
    """The program's outputs (new contiguous tensors of ``shape``) from ``inputs``, in torch ops."""
    wide = any(t.dtype == torch.float64 for t in inputs) or torch.float64 in out_dtypes
    cdt = torch.float64 if wide else torch.float32
    numel = math.prod(shape)
    values: list[Any] = []
    for node in program.nodes:
        a = [values[i] for i in node.args]
        if not node.args:
            v = _leaf(node, inputs, scalars, numel, rng, cdt)
            v = v.reshape(shape) if node.op == "dropout_mask" else v
        elif node.op in _BINARY:
            v = _BINARY[node.op](a[0], a[1]).to(cdt)
        elif node.op in _UNARY:
            v = _UNARY[node.op](a[0])
        elif node.op == "where":
            v = torch.where(a[0] != 0, a[1], a[2])
        elif node.op == "pow":
            v = torch.pow(a[0], node.attr)
        elif node.op == "cast":
            v = a[0].to(getattr(torch, node.attr)).to(cdt)
        else:
            raise ValueError(f"fused_pointwise: unknown pointwise op {node.op!r}")
        values.append(v)
    outs = []
    for (index, _), dtype in zip(program.outputs, out_dtypes):
        outs.append(torch.empty(shape, dtype=dtype).copy_(values[index].expand(shape)))
    return outs


@reg("fused_pointwise")
def fused_pointwise(
    program: Any, inputs: list[torch.Tensor], shape: tuple[int, ...], scalars: list[float], dtypes: list[DType], rng
) -> tuple[list[torch.Tensor], Any]:
    """The program's outputs and the (seed, offset, 0) its dropout masks used (drawn here when ``rng`` is None)."""
    if len(scalars) != len(program.scalars):
        raise ValueError(
            f"fused_pointwise: the program takes {len(program.scalars)} scalar(s) {list(program.scalars)}, "
            f"got {len(scalars)}"
        )
    if program.dropout_slots and rng is None:
        # A fresh seed from this backend's generator (manual_seed replays it), counters from 0.
        seed = int(lookup("randint", "cpu")(0, 2**62, (1,), int64, None).item())
        rng = (seed, 0, 0)
    outs = evaluate(program, inputs, shape, [float(s) for s in scalars], rng, [d.torch for d in dtypes])
    return outs, rng if program.dropout_slots else None
