"""NDArray chunk_cat_ / chunk_split (FSDP's chunked row layout) on both devices: against torch's ``_chunk_cat``
written out, strided arrays, casts, and torch's errors for bad input."""

from __future__ import annotations

import math

import pytest
import torch

import genesis_ndarray as gn

SHAPES = [(5, 3), (13,), (1, 4), (2, 3, 2), (7,)]
NAMES = {torch.float32: gn.float32, torch.bfloat16: gn.bfloat16, torch.float64: gn.float64}


def _nd(t: torch.Tensor, device: str) -> gn.NDArray:
    return gn.from_torch(t.contiguous()).to(device)


def _torch(a: gn.NDArray) -> torch.Tensor:
    return a.to("cpu").native.clone()


def reference(tensors: list[torch.Tensor], chunks: int, dtype: torch.dtype) -> torch.Tensor:
    """torch's ``_chunk_cat`` along dim 0 written out: zero-padded rows, chunk i of every tensor side by side."""
    parts = []
    for t in tensors:
        rows = -(-t.shape[0] // chunks) * chunks
        padded = torch.zeros((rows, *t.shape[1:]), dtype=dtype)
        padded[: t.shape[0]] = t.to(dtype)
        parts.append(padded.reshape(chunks, -1))
    return torch.cat(parts, dim=1)


@pytest.mark.parametrize("chunks", [1, 2, 3, 5])
@pytest.mark.parametrize("src,dst", [(torch.float32, torch.float32), (torch.bfloat16, torch.float32)])
def test_chunk_cat_and_split_round_trip(device: str, chunks: int, src: torch.dtype, dst: torch.dtype) -> None:
    tensors = [torch.randn(s, dtype=torch.float64).to(src) for s in SHAPES]
    want = reference(tensors, chunks, dst)
    out = gn.full(tuple(want.shape), float("nan"), dtype=NAMES[dst], device=device)
    assert out.chunk_cat_([_nd(t, device) for t in tensors], chunks) is out
    assert torch.equal(_torch(out), want)
    backs = [gn.empty(*s, dtype=NAMES[src], device=device) for s in SHAPES]
    _nd(want.to(src), device).chunk_split(chunks, backs)
    for t, b in zip(tensors, backs):
        assert torch.equal(_torch(b), t)


def test_strided_arrays_go_through_copies(device: str) -> None:
    base = torch.randn(6, 4)
    tensors = [base.t(), torch.randn(9)]  # a transposed source
    want = reference(tensors, 3, torch.float32)
    wide = gn.zeros(want.shape[0], 2 * want.shape[1], device=device)
    out = wide[:, ::2]  # a strided output
    out.chunk_cat_([_nd(base, device).permute(1, 0), _nd(tensors[1], device)], 3)
    assert torch.equal(_torch(out), want) and torch.equal(_torch(wide)[:, 1::2], torch.zeros_like(want))
    target = gn.zeros(6, 4, device=device).permute(1, 0)  # a strided destination
    rest = gn.empty(9, device=device)
    _nd(want, device).chunk_split(3, [target, rest])
    assert torch.equal(_torch(target), base.t()) and torch.equal(_torch(rest), tensors[1])


def test_views_of_one_buffer_keep_their_neighbours(device: str) -> None:
    wholes = [torch.randn(s) for s in SHAPES]
    total = sum(math.prod(s) for s in SHAPES)
    buffer = gn.full((total + 5,), -3.0, device=device)
    outs, at = [], 0
    for s in SHAPES:
        outs.append(buffer[at : at + math.prod(s)].view(*s))
        at += math.prod(s)
    _nd(reference(wholes, 4, torch.float32), device).chunk_split(4, outs)
    got = _torch(buffer)
    assert torch.equal(got[:total], torch.cat([w.reshape(-1) for w in wholes]))
    assert torch.equal(got[total:], torch.full((5,), -3.0))


def test_bad_input_raises_runtime_errors(device: str) -> None:
    a, b = gn.ones(4, 3, device=device), gn.ones(5, device=device)
    with pytest.raises(RuntimeError, match=r"need 18"):
        gn.empty(19, device=device).chunk_cat_([a, b], 2)
    with pytest.raises(RuntimeError, match="non-empty"):
        gn.empty(0, device=device).chunk_cat_([], 2)
    with pytest.raises(RuntimeError, match="non-scalar"):
        gn.empty(2, device=device).chunk_cat_([gn.ones((), device=device)], 2)
    with pytest.raises(RuntimeError, match="one dtype"):
        gn.empty(18, device=device).chunk_cat_([a, b.to(dtype=gn.float64)], 2)
    with pytest.raises(RuntimeError, match="positive int"):
        gn.empty(18, device=device).chunk_cat_([a, b], 0)
    with pytest.raises(RuntimeError, match="need 18"):
        gn.empty(17, device=device).chunk_split(2, [a, b])
    if device == "cuda":
        with pytest.raises(RuntimeError, match="same device"):
            gn.empty(18, device=device).chunk_cat_([a, gn.ones(5)], 2)
