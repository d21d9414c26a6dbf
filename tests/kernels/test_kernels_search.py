"""searchsorted's binary-search kernel (search.py) against torch.searchsorted: left / right, NaN (sorted last),
ties, strided operands, mixed dtypes, int32 output, empty rows and many rows."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import buf, sync

import genesis_kernels as gk

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _run(seq: torch.Tensor, values: torch.Tensor, right: bool, out_dtype=torch.int64) -> torch.Tensor:
    out = torch.empty(values.shape, dtype=out_dtype, device=DEVICE)
    gk.searchsorted(buf(seq), buf(values), buf(out), right=right)
    sync(DEVICE)
    return out


@pytest.mark.parametrize("right", [False, True])
def test_matches_torch_with_nan_and_ties(right):
    g = torch.Generator().manual_seed(0)
    seq = torch.sort(torch.randn(3, 37, generator=g, dtype=torch.float64), 1).values
    seq[1, -3:] = float("nan")
    seq[2, 5:9] = seq[2, 5]
    vals = torch.randn(3, 300, generator=g, dtype=torch.float64)
    vals[0, :4] = float("nan")
    vals[2, 10:13] = seq[2, 5]
    seq, vals = seq.to(DEVICE), vals.to(DEVICE)
    assert torch.equal(_run(seq, vals, right).cpu(), torch.searchsorted(seq, vals, right=right).cpu())


def test_strided_operands_mixed_dtypes_int32():
    g = torch.Generator().manual_seed(1)
    seq_t = torch.sort(torch.randn(37, 3, generator=g, dtype=torch.float64), 0).values.to(DEVICE)
    seq = seq_t.t()  # rows of stride 1, elements of stride 3
    vals_wide = torch.randn(3, 300, generator=g).to(DEVICE)  # float32 values against float64 boundaries
    vals = vals_wide[:, ::2]
    got = _run(seq, vals, False, torch.int32)
    assert torch.equal(got.cpu().long(), torch.searchsorted(seq.contiguous(), vals.double().contiguous()).cpu())


def test_integers_and_many_rows():
    rows = 70000 if DEVICE == "cuda" else 300  # past a grid axis's 65,535 on the GPU; the interpreter is slow
    seq = torch.sort(torch.randint(-50, 50, (rows, 5)), 1).values.to(DEVICE)
    vals = torch.randint(-60, 60, (rows, 2)).to(DEVICE)
    assert torch.equal(_run(seq, vals, True).cpu(), torch.searchsorted(seq, vals, right=True).cpu())


def test_empty_rows():
    seq = torch.empty(2, 0, dtype=torch.float32, device=DEVICE)
    vals = torch.randn(2, 4, device=DEVICE)
    assert torch.equal(_run(seq, vals, False).cpu(), torch.zeros(2, 4, dtype=torch.int64))
    _run(torch.randn(2, 3, device=DEVICE), torch.empty(2, 0, device=DEVICE), False)  # nothing to do


def test_shape_errors():
    with pytest.raises(ValueError, match="2-D"):
        gk.searchsorted(buf(torch.zeros(3)), buf(torch.zeros(3)), buf(torch.zeros(3, dtype=torch.int64)))
    with pytest.raises(ValueError, match="rows"):
        gk.searchsorted(buf(torch.zeros(2, 3)), buf(torch.zeros(3, 3)), buf(torch.zeros(3, 3, dtype=torch.int64)))
