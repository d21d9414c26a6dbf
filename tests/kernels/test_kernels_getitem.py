"""index_put (the write side of advanced indexing) against torch's index_put_."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import assert_close, buf, make, sync

import genesis_kernels as gk


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_index_put(device: str, accumulate: bool, dtype: str) -> None:
    out = make((4, 5, 3), dtype, device)
    ref = out.clone()
    i0 = torch.tensor([[0], [-1], [2]], device=device).expand(3, 4)  # broadcast, negative
    i1 = torch.tensor([1, -5, 4, 1], device=device).expand(3, 4)
    if not accumulate:  # unique positions only (torch leaves duplicates unspecified)
        i1 = torch.tensor([1, -5, 4, 2], device=device).expand(3, 4)
    values = make((3, 4, 3), dtype, device)
    gk.index_put(buf(out), (buf(i0), buf(i1)), buf(values), accumulate=accumulate)
    ref.index_put_((i0, i1), values, accumulate=accumulate)
    sync(device)
    assert_close(out, ref, dtype)
    col = i0[:, :1].contiguous()
    gk.index_put(buf(out), (buf(col),), 7)
    ref.index_put_((col,), torch.tensor(7, dtype=ref.dtype, device=device))
    sync(device)
    assert_close(out, ref, dtype)


def test_index_put_reports_the_right_dim(device: str) -> None:
    out = make((4, 3), "float32", device)
    i0, i1 = torch.tensor([0, 1], device=device), torch.tensor([2, 3], device=device)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        gk.index_put(buf(out), (buf(i0), buf(i1)), 0.0)
