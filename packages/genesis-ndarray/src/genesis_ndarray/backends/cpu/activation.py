"""CPU fused-activation ops through torch: GELU / SiLU backward, gated units (act(gate) * up) both ways."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .common import reg

_APPROXIMATE = {"gelu": "none", "gelu_tanh": "tanh"}


def _act(x: torch.Tensor, kind: str) -> torch.Tensor:
    if kind in _APPROXIMATE:
        return F.gelu(x, approximate=_APPROXIMATE[kind])
    return F.silu(x) if kind == "silu" else torch.sigmoid(x)


@reg("activation_backward")
def activation_backward(grad_output: torch.Tensor, input: torch.Tensor, kind: str) -> torch.Tensor:
    if kind in _APPROXIMATE:
        return torch.ops.aten.gelu_backward(grad_output, input, approximate=_APPROXIMATE[kind])
    if kind == "silu":
        return torch.ops.aten.silu_backward(grad_output, input)
    if input.dtype in (torch.bfloat16, torch.float16):
        # From x in float32, as the fused kernel does: a 16-bit y = sigmoid(x) first would leave 1 - y
        # only a few bits near y = 1 (3% off in bfloat16), against the float64 gradient.
        y = torch.sigmoid(input.float())
        return torch.ops.aten.sigmoid_backward(grad_output.float(), y).to(input.dtype)
    return torch.ops.aten.sigmoid_backward(grad_output, torch.sigmoid(input))


@reg("activation_backward_forward")
def activation_backward_forward(grad_output: torch.Tensor, input: torch.Tensor, kind: str):
    return activation_backward(grad_output, input, kind), _act(input, kind)


@reg("gated_forward")
def gated_forward(gate: torch.Tensor, up: torch.Tensor, kind: str) -> torch.Tensor:
    return _act(gate, kind) * up


@reg("gated_backward")
def gated_backward(
    grad_output: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, kind: str
) -> tuple[torch.Tensor, torch.Tensor]:
    return activation_backward(grad_output * up, gate, kind), grad_output * _act(gate, kind)
