"""searchsorted on CUDA: binary search of 2-D operands (rows of boundaries, rows of values) in one launch."""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from .common import View, reg, stream_of


@reg("searchsorted")
def searchsorted(seq: View, values: View, right: bool, out_int32: bool) -> View:
    """For each ``values[r, j]``, its insertion index in the sorted row ``seq[r]`` (int64, or int32)."""
    if seq.device != values.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"cuda:{seq.device} and cuda:{values.device}!"
        )
    out = gs.empty(tuple(values.shape), "int32" if out_int32 else "int64", values.device)
    gk.searchsorted(seq, values, out, right=right, stream=stream_of(values))
    return out
