"""CUDA chunk_cat / chunk_split (genesis_ndarray.chunk_cat): one genesis_kernels.chunk_cat launch each way.

The launch table goes up through the optimizer's upload slots (keyed by the table's layout): FSDP's
groups of one model mostly share a layout, so they share a slot, rewritten in stream order. Strided
arrays go through contiguous copies (the launcher refuses them before launching anything).
"""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from .common import View, forget_range, forget_ranges, reg, stream_of
from .memory import contiguous, copy_
from .optimizer import _upload


def _dense(views: list[View]) -> list[View]:
    return [v if v.is_contiguous() else contiguous(v) for v in views]


@reg("chunk_cat")
def chunk_cat(out: View, arrays: list[View], num_chunks: int) -> None:
    forget_range(out)
    target = out if out.is_contiguous() else gs.empty(out.shape, out.dtype, out.device)  # all of it is written
    gk.chunk_cat.chunk_cat(_dense(arrays), num_chunks, target, upload=_upload(out.device), stream=stream_of(out))
    if target is not out:
        copy_(out, target)


@reg("chunk_split")
def chunk_split(src: View, num_chunks: int, out: list[View]) -> None:
    forget_ranges(out)
    targets = _dense(out)
    source = src if src.is_contiguous() else contiguous(src)
    gk.chunk_cat.chunk_split(source, num_chunks, targets, upload=_upload(src.device), stream=stream_of(src))
    for o, t in zip(out, targets):
        if t is not o:
            copy_(o, t)
