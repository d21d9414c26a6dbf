"""Rotary position embeddings on CUDA: one genesis_kernels.rope launch per tensor, each way.

The operand is read in place through its strides (a view of a fused projection, either token layout);
the result is a new array of the operand's shape, contiguous. The positions stay on the device: the
kernel reads them, so a captured decode step advances them without the host.
"""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from .common import View, reg, stream_of


@reg("rope")
def rope(x: View, cos: View, sin: View, positions: View, seq_dim: int, interleaved: bool, inverse: bool) -> View:
    out = gs.empty(x.shape, x.dtype, x.device)
    if out.numel:
        gk.rope(x, cos, sin, positions, out, seq_dim=seq_dim, interleaved=interleaved, backward=inverse,
                stream=stream_of(x))  # fmt: skip
    return out
