"""Rotary position embeddings on CUDA: one genesis_kernels.rope launch per call, q and k together.

The operands are read in place through their strides (views of fused projections, either token layout);
the results are new arrays of the operands' shapes, contiguous. The positions stay on the device: the
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


@reg("rope_pair")
def rope_pair(
    q: View, k: View, cos: View, sin: View, positions: View, seq_dim: int, interleaved: bool, inverse: bool
) -> tuple[View, View]:
    if k.dtype != q.dtype:  # the fused launch takes one dtype: two launches
        return rope(q, cos, sin, positions, seq_dim, interleaved, inverse), rope(
            k, cos, sin, positions, seq_dim, interleaved, inverse
        )
    qo, ko = gs.empty(q.shape, q.dtype, q.device), gs.empty(k.shape, k.dtype, k.device)
    if qo.numel or ko.numel:
        gk.rope(q, cos, sin, positions, qo, seq_dim=seq_dim, interleaved=interleaved, backward=inverse, k=k,
                k_out=ko, stream=stream_of(q))  # fmt: skip
    return qo, ko
