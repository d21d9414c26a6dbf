"""cumsum / cumprod against torch (float64 references for half types)."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, assert_close, buf, make, sync

import genesis_kernels as gk
from genesis_kernels import scan as scan_module


def _ref(op: str, x: torch.Tensor, dim: int, out_dtype: str) -> torch.Tensor:
    xd = x.double() if x.dtype.is_floating_point else x.long()
    return getattr(torch, op)(xd, dim).to(TORCH_DTYPES[out_dtype])


def _check(op: str, x: torch.Tensor, dim: int, out_dtype: str, device: str, **tol: float) -> None:
    out = torch.empty(x.shape, dtype=TORCH_DTYPES[out_dtype], device=device)
    getattr(gk, op)(buf(x), buf(out), dim)
    sync(device)
    assert_close(out, _ref(op, x, dim, out_dtype), out_dtype, **tol)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "int64", "bool"])
def test_scan_dtypes(device: str, op: str, dtype: str) -> None:
    x = make((5, 13), dtype, device, low=0.8, high=1.2) if op == "cumprod" else make((5, 13), dtype, device)
    if op == "cumprod" and dtype in ("int32", "int64"):
        x = x % 3 - 1  # keep products small
    out_dtype = "int64" if dtype in ("int32", "bool") else dtype
    extra = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else {}
    _check(op, x, 1, out_dtype, device, **extra)
    _check(op, x, 0, out_dtype, device, **extra)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast", "3d", "scalar", "zero", "one", "long"])
def test_scan_layouts(device: str, layout: str) -> None:
    if layout == "transposed":
        x, dims = make((11, 7), "float32", device).t(), (0, 1)
    elif layout == "sliced":
        x, dims = make((6, 46), "float32", device)[::2, ::2], (0, 1)
    elif layout == "broadcast":
        x, dims = make((1, 19), "float32", device).expand(4, 19), (0, 1)
    elif layout == "3d":
        x, dims = make((3, 5, 7), "float64", device), (0, 1, 2)
    elif layout == "scalar":
        x, dims = make((), "float32", device), (0,)
    elif layout == "zero":
        x, dims = make((0, 3), "float32", device), (0, 1)
    elif layout == "one":
        x, dims = make((1, 1), "float32", device), (0, 1)
    else:
        x, dims = make((2, 1031), "float64", device), (1,)  # several column blocks
    for d in dims:
        _check("cumsum", x, d, str(x.dtype).removeprefix("torch."), device, rtol=1e-5, atol=1e-5)


def test_scan_split_rows(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Few long rows: segment totals, their scan, then the segments (three launches)."""
    monkeypatch.setattr(scan_module, "SPLIT_SEGMENT", 16)
    x = make((3, 211), "float64", device)
    _check("cumsum", x, 1, "float64", device)
    y = make((211,), "float64", device, low=0.9, high=1.1)
    _check("cumprod", y, 0, "float64", device)
    z = make((211, 2), "int32", device)
    _check("cumsum", z, 0, "int64", device)


def test_scan_in_place(device: str) -> None:
    x = make((4, 9), "float32", device)
    ref = torch.cumsum(x.double(), 1)
    gk.cumsum(buf(x), buf(x), 1)
    sync(device)
    assert_close(x, ref.float(), rtol=1e-5, atol=1e-5)
