"""Creation kernels against torch: arange, linspace, eye, triu, tril."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, assert_close, buf, make, sync

import genesis_kernels as gk


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bfloat16", "int32"])
def test_arange_linspace(device: str, dtype: str) -> None:
    out = torch.empty(2 * 37, dtype=TORCH_DTYPES[dtype], device=device)[::2]
    start, step = (3, -2) if dtype in ("int64", "int32") else (0.5, 0.1)
    gk.arange(buf(out), start, step)
    sync(device)
    ref = torch.arange(start, start + 37 * step, step, dtype=TORCH_DTYPES[dtype])[:37]
    assert_close(out, ref)
    if dtype in ("float32", "float64"):
        lin = torch.empty(37, dtype=TORCH_DTYPES[dtype], device=device)
        gk.linspace(buf(lin), -1.5, 2.0)
        sync(device)
        assert_close(lin, torch.linspace(-1.5, 2.0, 37, dtype=TORCH_DTYPES[dtype]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16", "int64", "int32"])
@pytest.mark.parametrize("n", [1, 2, 4, 37, 1001])
def test_linspace_matches_torch(device: str, dtype: str, n: int) -> None:
    """torch's formula and step: integers step in float64 and truncate (the caller passes integer ends, as torch
    converts them first); the last element is exactly ``end``. Half types compute in float32 and round once, so
    they are compared with the float64 result rounded (torch's CPU computes them in the half type itself)."""
    start, end = (-7, 30) if dtype.startswith("int") else (-1.3, 2.9)
    out = torch.empty(2 * n, dtype=TORCH_DTYPES[dtype], device=device)[::2]  # strided, too
    gk.linspace(buf(out), start, end)
    sync(device)
    half = dtype in ("bfloat16", "float16")
    ref = torch.linspace(start, end, n, dtype=torch.float64 if half else TORCH_DTYPES[dtype]).to(out.dtype)
    assert_close(out, ref)
    assert out[-1].item() == ref[-1].item()


def test_eye_triu_tril(device: str) -> None:
    for shape in ((1, 1), (5, 7), (7, 5), (0, 3)):
        out = torch.empty(shape, device=device)
        gk.eye(buf(out))
        sync(device)
        assert_close(out, torch.eye(*shape, device=device))
    x = make((3, 6, 37), "bfloat16", device).transpose(1, 2)
    for diagonal in (-3, 0, 2, 40):
        for name in ("triu", "tril"):
            out = torch.empty(x.shape, dtype=x.dtype, device=device)
            getattr(gk, name)(buf(x), buf(out), diagonal)
            sync(device)
            assert_close(out, getattr(torch, name)(x, diagonal))
    y = make((5, 5), "int64", device)
    ref = torch.triu(y, 1)
    gk.triu(buf(y), buf(y), 1)  # in place
    sync(device)
    assert_close(y, ref)
