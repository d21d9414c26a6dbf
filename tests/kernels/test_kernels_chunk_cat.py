"""chunk_cat / chunk_split: many tensors into and out of FSDP's chunked row layout in one launch, against
a reference written with torch's pad / view / cat, and against torch's own ``_chunk_cat``."""

from __future__ import annotations

import math

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, Uploads, buf, make, sync

from genesis_kernels import chunk_cat as gkc
from genesis_kernels.optimizer import NotDense


def reference_cat(tensors: list[torch.Tensor], world: int, dtype: torch.dtype) -> torch.Tensor:
    """torch's ``_chunk_cat`` along dim 0, written out: each tensor padded with zero rows to ``world`` chunks,
    flattened per chunk, the chunks of all tensors side by side: ``(world, S)``."""
    parts = []
    for t in tensors:
        chunk = -(-t.shape[0] // world)
        padded = torch.zeros((chunk * world, *t.shape[1:]), dtype=dtype, device=t.device)
        padded[: t.shape[0]] = t.to(dtype)
        parts.append(padded.reshape(world, -1))
    return torch.cat(parts, dim=1)


# Rows that divide, rows that do not (a rank holding nothing), one row, vectors, a slot over several
# programs, a tensor with fewer rows than ranks, odd row widths.
SHAPES = [(8, 3), (5, 7), (1, 4), (13,), (gkc.CHUNK // 2 + 9, 3), (2, 5, 3), (6,)]
GPU_SHAPES = [(1280, 1280), (3840,), (50304, 1280), (5120, 1280), (1024, 1280), (1280,), (3, 1280)]


@pytest.mark.parametrize("world", [1, 3, 4])
@pytest.mark.parametrize(("src", "dst"), [("float32", "float32"), ("bfloat16", "float32"), ("float16", "float16")])
def test_chunk_cat_writes_torchs_layout_with_zero_padding(device, world, src, dst):
    shapes = SHAPES if device == "cpu" else GPU_SHAPES
    tensors = [make(s, src, device) for s in shapes]
    want = reference_cat(tensors, world, TORCH_DTYPES[dst])
    out = torch.full(want.shape, float("nan"), dtype=TORCH_DTYPES[dst], device=device)  # the padding is written
    gkc.chunk_cat([buf(t) for t in tensors], world, buf(out), upload=Uploads(device))
    sync(device)
    assert torch.equal(out, want)
    if hasattr(torch, "_chunk_cat") and device == "cpu" and src == dst:
        assert torch.equal(out, torch._chunk_cat(tensors, 0, world))


@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.parametrize(("src", "dst"), [("float32", "float32"), ("bfloat16", "bfloat16"), ("float32", "bfloat16")])
def test_chunk_split_is_the_inverse(device, world, src, dst):
    shapes = SHAPES if device == "cpu" else GPU_SHAPES
    wholes = [make(s, src, device) for s in shapes]
    chunked = reference_cat(wholes, world, TORCH_DTYPES[src])
    guard = 7
    backing = torch.full((sum(math.prod(s) for s in shapes) + guard,), -5.0, dtype=TORCH_DTYPES[dst], device=device)
    outs, at = [], 0
    for s in shapes:  # views of one buffer, as FSDP's unsharded parameters are
        outs.append(backing[at : at + math.prod(s)].view(s))
        at += math.prod(s)
    gkc.chunk_split(buf(chunked), world, [buf(o) for o in outs], upload=Uploads(device))
    sync(device)
    for whole, out in zip(wholes, outs):
        assert torch.equal(out, whole.to(TORCH_DTYPES[dst]))
    assert torch.equal(backing[at:], torch.full((guard,), -5.0, dtype=TORCH_DTYPES[dst], device=device))


def test_slot_layout_matches_fsdp_rows():
    sizes, offsets, shard = gkc.slot_layout([(5, 7), (13,), (2, 3)], 4)
    assert sizes == [2 * 7, 4, 1 * 3] and offsets == [0, 14, 18] and shard == 21


def test_bad_layouts_raise(device):
    up = Uploads(device)
    a, b = make((4, 3), "float32", device), make((5,), "float32", device)
    with pytest.raises(ValueError, match="need"):
        gkc.chunk_cat([buf(a), buf(b)], 2, buf(torch.empty(3, device=device)), upload=up)
    with pytest.raises(TypeError, match="every tensor"):
        gkc.chunk_cat([buf(a), buf(b.half())], 2, buf(torch.empty(2 * (6 + 3), device=device)), upload=up)
    with pytest.raises(NotDense):
        gkc.chunk_cat([buf(a.t())], 2, buf(torch.empty(2 * 8, device=device)), upload=up)
    with pytest.raises(NotDense):
        gkc.chunk_split(buf(torch.empty(4, 6, device=device)[:, :3]), 4, [buf(a.t().contiguous())], upload=up)
    with pytest.raises(ValueError, match="0-d"):
        gkc.chunk_cat([buf(torch.tensor(1.0, device=device))], 2, buf(torch.empty(2, device=device)), upload=up)
