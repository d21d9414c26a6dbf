"""sort / argsort / topk against torch (stable sort: indices must match exactly)."""

from __future__ import annotations

import importlib

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, assert_close, buf, make, sync

import genesis_kernels as gk

sort_module = importlib.import_module("genesis_kernels.sort")  # (gk.sort is the function)


def _with_ties_and_nans(shape: tuple[int, ...], dtype: str, device: str) -> torch.Tensor:
    x = make(shape, dtype, device)
    if dtype in ("float32", "float16", "bfloat16", "float64") and x.numel() > 3:
        flat = x.view(-1)
        flat[::5] = 1.0  # ties
        flat[1::7] = float("nan")
        flat[2::11] = -0.0
        flat[3::13] = float("-inf")
    return x


def _check_sort(x: torch.Tensor, dim: int, descending: bool, device: str) -> None:
    values = torch.empty_like(x)
    indices = torch.empty(x.shape, dtype=torch.int64, device=device)
    gk.sort(buf(x), buf(values), buf(indices), dim, descending=descending)
    sync(device)
    rv, ri = torch.sort(x, dim=dim, descending=descending, stable=True)
    assert torch.equal(indices.cpu(), ri.cpu())
    assert_close(values, rv)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_dtypes(device: str, dtype: str, descending: bool) -> None:
    _check_sort(_with_ties_and_nans((6, 37), dtype, device), -1, descending, device)


@pytest.mark.parametrize("length", [0, 1, 2, 13, 64])
def test_sort_lengths(device: str, length: int) -> None:
    _check_sort(_with_ties_and_nans((3, length), "float32", device), 1, False, device)


@pytest.mark.parametrize("layout", ["dim0", "transposed", "sliced", "broadcast", "3d_middle", "scalar", "no_rows"])
def test_sort_layouts(device: str, layout: str) -> None:
    if layout == "dim0":
        x, dim = _with_ties_and_nans((17, 5), "float32", device), 0
    elif layout == "transposed":
        x, dim = _with_ties_and_nans((11, 7), "float32", device).t(), 1
    elif layout == "sliced":
        x, dim = _with_ties_and_nans((6, 46), "float32", device)[::2, ::2], 1
    elif layout == "broadcast":
        x, dim = _with_ties_and_nans((1, 19), "float32", device).expand(4, 19), 1
    elif layout == "3d_middle":
        x, dim = _with_ties_and_nans((3, 23, 4), "int32", device), 1
    elif layout == "scalar":
        x, dim = make((), "float32", device), 0
    else:
        x, dim = make((0, 9), "float32", device), 1
    _check_sort(x, dim, True, device)
    _check_sort(x, dim, False, device)


# block=None is the full-size network, too slow for the interpreter; block=8 covers the same code there.
@pytest.mark.parametrize("block", [8, pytest.param(None, marks=pytest.mark.gpu_tier)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_long_rows_multipass(
    device: str, block: int | None, descending: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows longer than the in-register block: chunk sort then merge passes (odd and even pass counts)."""
    if block is not None:
        monkeypatch.setattr(sort_module, "MAX_BLOCK", block)
        lengths = [9, 17, 61, 131]
    else:
        lengths = [2 * sort_module.MAX_BLOCK + 3, 5 * sort_module.MAX_BLOCK + 1]
    for n in lengths:
        x = _with_ties_and_nans((2, n), "float32", device)
        x[1] = torch.randint(0, 4, (n,), device=device).float()  # heavy ties: stability across runs
        _check_sort(x, 1, descending, device)
        _check_sort(x.t().contiguous().t(), 1, descending, device)


def test_sort_in_place(device: str) -> None:
    x = make((5, 29), "float32", device)
    ref, ri = torch.sort(x, dim=1, stable=True)
    indices = torch.empty(5, 29, dtype=torch.int64, device=device)
    gk.sort(buf(x), buf(x), buf(indices), 1)
    sync(device)
    assert_close(x, ref)
    assert torch.equal(indices.cpu(), ri.cpu())


def test_argsort(device: str) -> None:
    x = _with_ties_and_nans((4, 31), "bfloat16", device)
    indices = torch.empty(4, 31, dtype=torch.int64, device=device)
    tmp = torch.empty_like(x)
    gk.argsort(buf(x), buf(indices), buf(tmp), -1, descending=True)
    sync(device)
    assert torch.equal(indices.cpu(), torch.argsort(x, dim=-1, descending=True, stable=True).cpu())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 5, 31])
def test_topk(device: str, dtype: str, largest: bool, k: int) -> None:
    x = _with_ties_and_nans((3, 31), dtype, device)
    values = torch.empty(3, k, dtype=TORCH_DTYPES[dtype], device=device)
    indices = torch.empty(3, k, dtype=torch.int64, device=device)
    gk.topk(buf(x), k, buf(values), buf(indices), -1, largest=largest)
    sync(device)
    rv, _ = torch.topk(x, k, dim=-1, largest=largest, sorted=True)
    assert_close(values, rv)
    # Ties may pick different indices than torch: check they point at the returned values.
    assert_close(x.gather(1, indices), values)


def test_topk_long_rows_and_dim0(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sort_module, "MAX_BLOCK", 8)
    x = make((53, 3), "float32", device)
    for largest in (True, False):
        values = torch.empty(7, 3, device=device)
        indices = torch.empty(7, 3, dtype=torch.int64, device=device)
        gk.topk(buf(x), 7, buf(values), buf(indices), 0, largest=largest)
        sync(device)
        rv, ri = torch.topk(x, 7, dim=0, largest=largest)
        assert_close(values, rv)
        assert torch.equal(indices.cpu(), ri.cpu())  # no ties in random floats


def test_topk_rejects_bad_k() -> None:
    b = gk.Buffer(0, (5,), (1,), "float32")
    with pytest.raises(ValueError):
        gk.topk(b, 6, b, gk.Buffer(0, (6,), (1,), "int64"))
