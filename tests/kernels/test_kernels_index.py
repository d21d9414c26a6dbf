"""Indexing kernels against torch: gather/scatter, index_select/add, embedding, masked ops, nonzero."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, assert_close, buf, make, sync

import genesis_kernels as gk


def _idx(high: int, shape: tuple[int, ...], device: str) -> torch.Tensor:
    return torch.randint(0, max(high, 1), shape).to(device)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int32", "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(device: str, dtype: str, dim: int) -> None:
    x = make((5, 7), dtype, device)
    d = dim % 2
    index = _idx(x.shape[d], (3, 7) if d == 0 else (5, 11), device)
    out = torch.empty(index.shape, dtype=TORCH_DTYPES[dtype], device=device)
    gk.gather(buf(x), dim, buf(index), buf(out))
    sync(device)
    assert_close(out, x.gather(dim, index))


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast_index", "smaller_index", "zero", "scalar"])
def test_gather_layouts(device: str, layout: str) -> None:
    if layout == "transposed":
        x, index = make((7, 5), "float32", device).t(), _idx(5, (5, 7), device).t().contiguous().t()
    elif layout == "sliced":
        x, index = make((5, 14), "float32", device)[:, ::2], _idx(5, (4, 14), device)[:, ::2]
    elif layout == "broadcast_index":
        x, index = make((5, 7), "float32", device), _idx(5, (1, 7), device).expand(3, 7)
    elif layout == "smaller_index":
        x, index = make((5, 7, 3), "float32", device), _idx(5, (2, 4, 2), device)
    elif layout == "zero":
        x, index = make((5, 7), "float32", device), _idx(5, (0, 7), device)
    else:
        x, index = make((), "float32", device), torch.zeros((), dtype=torch.int64, device=device)
    out = torch.empty(index.shape, device=device)
    gk.gather(buf(x), 0, buf(index), buf(out))
    sync(device)
    assert_close(out, x.gather(0, index))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int64", "int8"])
def test_scatter_add_duplicates(device: str, dtype: str) -> None:
    src = make((13, 5), dtype, device)
    index = _idx(3, (13, 5), device)  # many duplicates
    base = make((3, 5), dtype, device)
    out = base.clone()
    gk.scatter_add(buf(out), 0, buf(index), buf(src))
    sync(device)
    ref = (
        base.double().scatter_add(0, index, src.double())
        if dtype in ("float16", "bfloat16")
        else base.scatter_add(0, index, src)
    )
    assert_close(out, ref.to(out.dtype), dtype)


def test_scatter(device: str) -> None:
    out = make((6, 9), "float32", device)
    ref = out.clone()
    index = torch.stack([torch.randperm(6)[:4] for _ in range(9)], 1).to(device)  # no duplicates per column
    src = make((4, 9), "float32", device)
    gk.scatter(buf(out), 0, buf(index), buf(src))
    ref.scatter_(0, index, src)
    index2 = index[:, :3].contiguous() % 9
    gk.scatter(buf(out), 1, buf(index2), -2.5)
    ref.scatter_(1, index2, -2.5)
    sync(device)
    assert_close(out, ref)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("n", [0, 1, 13])
def test_index_select(device: str, dim: int, n: int) -> None:
    x = make((7, 11), "float32", device).t().contiguous().t()  # transposed
    index = _idx(x.shape[dim], (2 * n,), device)[::2]  # strided index
    shape = list(x.shape)
    shape[dim] = n
    out = torch.empty(shape, device=device)
    gk.index_select(buf(x), dim, buf(index), buf(out))
    sync(device)
    assert_close(out, x.index_select(dim, index))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_index_add(device: str, dtype: str) -> None:
    out = make((5, 3, 4), dtype, device)
    ref = out.clone()
    index = torch.tensor([4, 0, 4, 4, 1, 0, 2], device=device)
    src = make((5, 7, 4), dtype, device)
    alpha = 2 if dtype == "int32" else 0.5
    index = index % 3
    gk.index_add(buf(out), 1, buf(index), buf(src), alpha=alpha)
    sync(device)
    expect = (
        ref.double().index_add(1, index, src.double(), alpha=alpha)
        if dtype == "bfloat16"
        else ref.index_add(1, index, src, alpha=alpha)
    )
    assert_close(out, expect.to(out.dtype), dtype)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_embedding(device: str, dtype: str) -> None:
    weight = make((11, 6), dtype, device)
    indices = _idx(11, (3, 7), device)
    indices[0, :3] = 4  # duplicates
    out = torch.empty(3, 7, 6, dtype=TORCH_DTYPES[dtype], device=device)
    gk.embedding(buf(weight), buf(indices), buf(out))
    grad = make((3, 7, 6), dtype, device)
    gw = torch.zeros(11, 6, dtype=TORCH_DTYPES[dtype], device=device)
    gk.embedding_backward(buf(grad), buf(indices), buf(gw))
    gw_pad = torch.zeros(11, 6, dtype=torch.float32, device=device)
    grad32 = grad.float()
    gk.embedding_backward(buf(grad32), buf(indices), buf(gw_pad), padding_idx=4)
    sync(device)
    assert_close(out, torch.nn.functional.embedding(indices, weight))
    ref = torch.ops.aten.embedding_dense_backward(grad.double(), indices, 11, -1, False)
    assert_close(gw, ref.to(gw.dtype), dtype)
    ref_pad = torch.ops.aten.embedding_dense_backward(grad.double(), indices, 11, 4, False)
    assert_close(gw_pad, ref_pad.float())


@pytest.mark.parametrize(
    "case", ["gather", "index_select", "scatter_add", "index_put", "embedding", "embedding_backward", "index_add"]
)
def test_out_of_range_raises_then_recovers(device: str, case: str) -> None:
    x = make((5, 4), "float32", device)
    good = torch.tensor([[0, 4], [2, 1]], device=device)
    bad = torch.tensor([[0, 7], [2, 1]], device=device)
    neg = torch.tensor([[0, -1], [2, 1]], device=device)

    def run(index: torch.Tensor) -> torch.Tensor:
        if case == "gather":
            out = torch.empty(2, 2, device=device)
            gk.gather(buf(x), 0, buf(index), buf(out))
            return out
        if case == "index_select":
            out = torch.empty(4, 4, device=device)
            gk.index_select(buf(x), 0, buf(index.flatten()), buf(out))
            return out
        if case == "scatter_add":
            out = x.clone()
            src = x[:2, :2].contiguous()
            gk.scatter_add(buf(out), 0, buf(index), buf(src))
            return out
        if case == "index_add":
            out = x.clone()
            ones = torch.ones(4, 4, device=device)
            gk.index_add(buf(out), 0, buf(index.flatten()), buf(ones))
            return out
        if case == "index_put":
            out = x.clone()
            gk.index_put(buf(out), (buf(index),), 1.0)
            return out
        if case == "embedding":
            out = torch.empty(2, 2, 4, device=device)
            gk.embedding(buf(x), buf(index), buf(out))
            return out
        out = torch.zeros(5, 4, device=device)
        ones = torch.ones(2, 2, 4, device=device)
        gk.embedding_backward(buf(ones), buf(index), buf(out))
        return out

    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 5"):
        run(bad)
    if case != "index_put":  # negative indices are an error everywhere but index_put
        with pytest.raises(IndexError, match="index -1 is out of bounds"):
            run(neg)
    else:
        with pytest.raises(IndexError, match="index -6 is out of bounds"):
            run(torch.tensor([[0, -6], [1, 1]], device=device))
    first = run(good)  # the error state is cleared: the kernel works afterwards
    second = run(good)
    sync(device)
    assert_close(first, second)


@pytest.mark.parametrize("layout", ["contiguous", "broadcast_mask", "transposed"])
def test_masked_fill(device: str, layout: str) -> None:
    x = make((6, 7), "bfloat16", device)
    if layout == "broadcast_mask":
        mask = (torch.rand(1, 7) > 0.5).to(device).expand(6, 7)
    elif layout == "transposed":
        mask = (torch.rand(7, 6) > 0.5).to(device).t()
    else:
        mask = (torch.rand(6, 7) > 0.5).to(device)
    out = torch.empty_like(x)
    gk.masked_fill(buf(x), buf(mask), -1.5, buf(out))
    sync(device)
    assert_close(out, x.masked_fill(mask, -1.5))


@pytest.mark.parametrize("shape", [(0,), (1,), (13,), (3, 5, 7), (2, 1, 3, 1, 2), (4099,)])
def test_nonzero(device: str, shape: tuple[int, ...]) -> None:
    mask = (torch.rand(shape) > 0.6).to(device)
    count = gk.nonzero_count(buf(mask))
    assert count == int(mask.sum())
    out = torch.empty(count, len(shape), dtype=torch.int64, device=device)
    gk.nonzero(buf(mask), buf(out))
    sync(device)
    assert torch.equal(out.cpu(), mask.nonzero().cpu())


def test_nonzero_dtypes_and_layouts(device: str) -> None:
    x = make((9, 11), "int32", device) % 3
    xt = x.t()  # transposed: row-major order of the logical view
    for t in (x.float(), xt, x[::2, 1::3]):
        count = gk.nonzero_count(buf(t))
        out = torch.empty(count, 2, dtype=torch.int64, device=device)
        gk.nonzero(buf(t), buf(out))
        sync(device)
        assert torch.equal(out.cpu(), t.nonzero().cpu())
    s = torch.tensor(3.0, device=device)
    assert gk.nonzero_count(buf(s)) == 1


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "broadcast"])
def test_masked_select(device: str, dtype: str, layout: str) -> None:
    x = make((37, 23), dtype, device)
    mask = (torch.rand(37, 23) > 0.5).to(device)
    if layout == "transposed":
        x = make((23, 37), dtype, device).t()
        mask = (torch.rand(23, 37) > 0.5).to(device).t()
    elif layout == "broadcast":
        x = make((1, 23), dtype, device).expand(37, 23)
    out = torch.empty(gk.nonzero_count(buf(mask)), dtype=TORCH_DTYPES[dtype], device=device)
    gk.masked_select(buf(x), buf(mask), buf(out))
    sync(device)
    assert_close(out, x[mask])


def test_masked_select_zero_and_short_output(device: str) -> None:
    x = make((0, 3), "float32", device)
    mask = torch.zeros(0, 3, dtype=torch.bool, device=device)
    assert gk.nonzero_count(buf(mask)) == 0
    empty = torch.empty(0, device=device)
    gk.masked_select(buf(x), buf(mask), buf(empty))
    x = make((50,), "float32", device)
    mask = torch.ones(50, dtype=torch.bool, device=device)
    guard = torch.full((20,), 9.0, device=device)
    gk.masked_select(buf(x), buf(mask), buf(guard[:10]))  # too short: never written past its end
    sync(device)
    assert_close(guard[:10], x[:10])
    assert bool((guard[10:] == 9.0).all())
