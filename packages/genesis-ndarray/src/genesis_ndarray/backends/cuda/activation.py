"""Fused activations on CUDA: GELU / SiLU backward and gated units (act(gate) * up), one kernel each.

Operands are read in place through their strides (the two halves of one tensor, expanded views);
results are new contiguous arrays.
"""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from .common import View, reg, stream_of


@reg("activation_backward")
def activation_backward(grad_output: View, input: View, kind: str) -> View:
    dx = gs.empty(input.shape, input.dtype, input.device)
    if dx.numel:
        gk.activation_backward(grad_output, input, dx, kind, stream=stream_of(input))
    return dx


@reg("activation_backward_forward")
def activation_backward_forward(grad_output: View, input: View, kind: str) -> tuple[View, View]:
    dx = gs.empty(input.shape, input.dtype, input.device)
    y = gs.empty(input.shape, input.dtype, input.device)
    if dx.numel:
        gk.activation_backward(grad_output, input, dx, kind, y=y, stream=stream_of(input))
    return dx, y


@reg("gated_forward")
def gated_forward(gate: View, up: View, kind: str) -> View:
    out = gs.empty(gate.shape, gate.dtype, gate.device)
    if out.numel:
        gk.gated_forward(gate, up, out, kind, stream=stream_of(gate))
    return out


@reg("gated_backward")
def gated_backward(grad_output: View, gate: View, up: View, kind: str) -> tuple[View, View]:
    dgate = gs.empty(gate.shape, gate.dtype, gate.device)
    dup = gs.empty(up.shape, up.dtype, up.device)
    if dgate.numel:
        gk.gated_backward(grad_output, gate, up, dgate, dup, kind, stream=stream_of(gate))
    return dgate, dup
