"""Reductions against torch (float64 references): sum .. any, logsumexp, norms, arg_reduce.

var and std: test_kernels_reduce_var.py.
"""

from __future__ import annotations

import sys

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, assert_close, buf, make, sync

import genesis_kernels as gk


def _ref(op: str, x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    xd = x.double() if x.dtype.is_floating_point else x
    if op in ("sum", "mean"):
        r = getattr(xd, op)(dim=dims) if dims else getattr(xd, op)()
        return r
    if op == "prod":
        r = xd
        for d in sorted(dims, reverse=True):
            r = r.prod(d)
        return r
    if op in ("max", "amax"):
        return xd.amax(dim=dims)
    if op in ("min", "amin"):
        return xd.amin(dim=dims)
    r = x.bool()
    for d in sorted(dims, reverse=True):
        r = r.all(d) if op == "all" else r.any(d)
    return r


def _out_dtype(op: str, dtype: str) -> str:
    if op in ("all", "any"):
        return "bool"
    if op in ("sum", "prod") and dtype in ("int8", "int16", "int32", "int64", "uint8", "bool"):
        return "int64"
    return dtype


def _run(op: str, x: torch.Tensor, dims: tuple[int, ...], device: str) -> None:
    dtype = str(x.dtype).removeprefix("torch.")
    shape = tuple(s for d, s in enumerate(x.shape) if d not in dims)
    out = torch.empty(shape, dtype=TORCH_DTYPES[_out_dtype(op, dtype)], device=device)
    gk.reduce(op, buf(x), buf(out), dims)
    sync(device)
    ref = _ref(op, x, dims)
    k = max(1, x.numel() // max(1, out.numel()))
    extra = {}
    if op in ("sum", "mean") and dtype == "float32":
        extra = dict(rtol=1e-5, atol=1e-6 * k**0.5 * 3)
    if op == "prod" and dtype in ("float32", "bfloat16", "float16"):
        extra = dict(rtol=1e-4 if dtype == "float32" else 2e-2, atol=1e-6)
    assert_close(out, ref.to(out.dtype), str(out.dtype).removeprefix("torch."), **extra)


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "max", "min", "amax", "amin", "all", "any"])
@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (0, 2), (0, 1, 2)])
def test_reduce_ops_dims(device: str, op: str, dims: tuple[int, ...]) -> None:
    x = make((5, 7, 11), "float32", device, low=0.5 if op == "prod" else -3, high=1.5 if op == "prod" else 3)
    if op in ("all", "any"):
        x = x > (0.0 if op == "all" else 2.5)
        x.view(-1)[0] = op == "all"
    _run(op, x, dims, device)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce_dtypes(device: str, dtype: str, op: str) -> None:
    x = make((13, 17), dtype, device)
    _run(op, x, (1,), device)
    _run(op, x, (0,), device)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast", "zero_kept", "zero_reduced", "one"])
def test_reduce_layouts(device: str, layout: str) -> None:
    if layout == "transposed":
        x = make((17, 23), "float32", device).t()
    elif layout == "sliced":
        x = make((17, 46), "float32", device)[::2, ::2]
    elif layout == "broadcast":
        x = make((1, 23), "float32", device).expand(19, 23)
    elif layout == "zero_kept":
        x = make((0, 5), "float32", device)
    elif layout == "zero_reduced":
        x = make((5, 0), "float32", device)
    else:
        x = make((1, 1), "float32", device)
    for dims in ((0,), (1,), (0, 1)):
        _run("sum", x, dims, device)
        if x.numel() and layout != "zero_reduced":
            _run("max", x, dims, device)


def test_reduce_nan_propagates(device: str) -> None:
    x = make((4, 9), "float32", device)
    x[1, 3] = float("nan")
    _run("max", x, (1,), device)
    _run("min", x, (0,), device)


@pytest.mark.parametrize("shape,dims", [((40_000,), (0,)), ((3000, 40), (0,)), ((3, 20_000), (1,))])
def test_reduce_split_paths(device: str, shape: tuple[int, ...], dims: tuple[int, ...]) -> None:
    # Few output rows and long reductions: K is split over programs and folded in a second pass.
    x = make(shape, "float32", device)
    _run("sum", x, dims, device)
    _run("max", x, dims, device)
    _run("mean", x, dims, device)
    flags = x > 2.9  # a few True among many False: any() must find them, all() must not
    _run("any", flags, dims, device)
    _run("all", ~flags, dims, device)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_logsumexp(device: str, dtype: str) -> None:
    x = make((7, 29), dtype, device, low=-20, high=20)
    for dims in ((1,), (0,), (0, 1)):
        out = torch.empty(tuple(s for d, s in enumerate(x.shape) if d not in dims), dtype=x.dtype, device=device)
        gk.logsumexp(buf(x), buf(out), dims)
        sync(device)
        assert_close(out, torch.logsumexp(x.double(), dim=dims).to(x.dtype), dtype)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, float("inf"), float("-inf"), 0.0])
@pytest.mark.parametrize("dims", [(1,), (0,), (0, 1)])
def test_norm(device: str, p: float, dims: tuple[int, ...]) -> None:
    x = make((23, 19), "float32", device)
    x[3, 4] = 0.0  # exercises p = 0 (count) and 0^p
    out = torch.empty(tuple(s for d, s in enumerate(x.shape) if d not in dims), device=device)
    gk.norm(buf(x), buf(out), p, dims)
    sync(device)
    assert_close(out, torch.linalg.vector_norm(x.double(), ord=p, dim=dims).float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_norm_dtypes_layouts_and_split(device: str, dtype: str) -> None:
    x = make((9, 31), dtype, device)
    for view, dims in ((x, (1,)), (x.t(), (0,)), (x[:, ::3], (1,))):
        out = torch.empty(tuple(s for d, s in enumerate(view.shape) if d not in dims), dtype=x.dtype, device=device)
        gk.norm(buf(view), buf(out), 2.0, dims)
        sync(device)
        assert_close(out, torch.linalg.vector_norm(view.double(), dim=dims).to(x.dtype), dtype)
    long = make((30_000,), "float32", device)  # few rows, long reduction: the split path
    out = torch.empty((), device=device)
    for p in (2.0, 3.0, float("inf")):
        gk.norm(buf(long), buf(out), p)
        sync(device)
        assert_close(out, torch.linalg.vector_norm(long.double(), ord=p).float(), rtol=1e-5, atol=1e-6)


def test_norm_empty_and_bad_dtype(device: str) -> None:
    x = torch.empty((0, 4), device=device)
    out = torch.full((4,), 7.0, device=device)
    gk.norm(buf(x), buf(out), 2.0, (0,))
    sync(device)
    assert_close(out, torch.zeros(4))
    with pytest.raises(ValueError, match="no identity"):
        gk.norm(buf(x), buf(out), float("inf"), (0,))
    with pytest.raises(TypeError, match="floating point"):
        gk.norm(buf(torch.ones(3, dtype=torch.int64, device=device)), buf(torch.empty((), device=device)))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32", "bool"])
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_arg_reduce(device: str, dtype: str, op: str, dim: int) -> None:
    x = make((9, 13), dtype, device, low=-2, high=2)
    if dtype in ("float32", "bfloat16"):
        x = (x * 2).round() / 2  # many ties: the first occurrence must win
    x = x.t() if dim == -1 else x
    d = dim % 2
    shape = tuple(s for i, s in enumerate(x.shape) if i != d)
    values = torch.empty(shape, dtype=x.dtype, device=device)
    indices = torch.empty(shape, dtype=torch.int64, device=device)
    gk.arg_reduce(op, buf(x), buf(values), buf(indices), dim)
    sync(device)
    xc = x.cpu()
    ref_v, ref_i = (
        (xc.max(d) if op == "max" else xc.min(d))
        if dtype != "bool"
        else (xc.to(torch.int8).max(d) if op == "max" else xc.to(torch.int8).min(d))
    )
    assert torch.equal(values.cpu(), ref_v.to(values.dtype))
    assert torch.equal(indices.cpu(), ref_i)


def test_arg_reduce_nan_and_reduce_logsumexp(device: str) -> None:
    x = make((4, 9), "float32", device)
    x[2, 5] = float("nan")
    values = torch.empty(4, device=device)
    indices = torch.empty(4, dtype=torch.int64, device=device)
    gk.arg_reduce("argmax", buf(x), buf(values), buf(indices), 1)
    out = torch.empty(4, device=device)
    rows = x[[0, 1, 3]].contiguous()  # keep a reference: a buffer does not own its memory
    gk.logsumexp(buf(rows), buf(out[:3]), (1,))
    sync(device)
    assert indices[2].item() == 5 and torch.isnan(values[2])
    torch.testing.assert_close(indices.cpu(), x.cpu().argmax(1))
    assert_close(out[:3], torch.logsumexp(rows.double(), 1).float())


# ----------------------------------------------------------------------------------------------
# Every layout (rows, columns, everything, a middle dim, non-contiguous) through both row
# addressings (flat, inner) and, with tiny tiles forced, through the split two-pass path.
# ----------------------------------------------------------------------------------------------

rd = sys.modules["genesis_kernels.reduce"]  # the package's ``reduce`` attribute is the function


def _tiny_tiles(M: int, K: int, red_contig: bool, inner: int) -> tuple[int, int, int, int]:
    # 4-element chunks and a demand of 64 programs per SM: any K > 32 is split over programs.
    return (min(4, 1 << max(inner - 1, 0).bit_length()) if inner else 2), 4, 4, 64


@pytest.fixture(params=["default", "split"])
def tiles(request, monkeypatch):  # type: ignore[no-untyped-def]
    rd.clear_plans()
    if request.param == "split":
        monkeypatch.setattr(rd, "tile_config", _tiny_tiles)
        monkeypatch.setattr(rd, "arg_tile_config", _tiny_tiles)
        monkeypatch.setattr(rd, "online_tile_config", _tiny_tiles)
    yield request.param
    rd.clear_plans()


def _layouts(device: str) -> list[tuple[str, torch.Tensor, tuple[int, ...]]]:
    base = make((6, 37, 5), "float32", device)
    return [
        ("rows", make((9, 53), "float32", device), (1,)),
        ("cols", make((53, 9), "float32", device), (0,)),
        ("all", make((7, 13), "float32", device), (0, 1)),
        ("middle", base, (1,)),
        ("outer_and_inner", base, (0, 2)),
        ("middle_of_permuted", base.permute(2, 1, 0), (1,)),
        ("cols_of_transposed", make((9, 53), "float32", device).t(), (0,)),
        ("strided_rows", make((9, 106), "float32", device)[:, ::2], (1,)),
        ("size1_dims", make((1, 41, 1, 3), "float32", device), (1,)),
    ]


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "any"])
def test_reduce_every_layout(device: str, tiles: str, op: str) -> None:
    for _name, x, dims in _layouts(device):
        if op == "prod":
            x = x / 3 + 1.0  # keep products of ~50 factors in range
        if op == "any":
            x = x > 2.9
        _run(op, x, dims, device)


def test_reduce_every_layout_nan_and_empty(device: str, tiles: str) -> None:
    for _name, x, dims in _layouts(device):
        x = x.clone()
        x[tuple(s // 2 for s in x.shape)] = float("nan")  # clone keeps the layout
        _run("max", x, dims, device)
        _run("sum", x, dims, device)
    _run("sum", make((0, 7), "float32", device), (0,), device)
    _run("sum", make((7, 0), "float32", device), (0,), device)


@pytest.mark.parametrize("kind", ["logsumexp", "norm2", "norm3", "norminf"])
def test_two_pass_and_norm_every_layout(device: str, tiles: str, kind: str) -> None:
    # (var / std: test_kernels_reduce_var.py)
    for _name, x, dims in _layouts(device):
        shape = tuple(s for d, s in enumerate(x.shape) if d not in dims)
        out = torch.empty(shape, device=device)
        xd = x.double()
        if kind == "logsumexp":
            gk.logsumexp(buf(x), buf(out), dims)
            ref = torch.logsumexp(xd, dim=dims)
        else:
            p = {"norm2": 2.0, "norm3": 3.0, "norminf": float("inf")}[kind]
            gk.norm(buf(x), buf(out), p, dims)
            ref = torch.linalg.vector_norm(xd, ord=p, dim=dims)
        sync(device)
        assert_close(out, ref.float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_arg_reduce_every_layout(device: str, tiles: str, op: str, dtype: str) -> None:
    cases = [
        (make((9, 53), dtype, device, low=-2, high=2), 1),
        (make((53, 9), dtype, device, low=-2, high=2), 0),
        (make((6, 37, 5), dtype, device, low=-2, high=2), 1),
        (make((6, 37, 5), dtype, device, low=-2, high=2).permute(2, 1, 0), 1),
        (make((9, 53), dtype, device, low=-2, high=2).t(), 0),
        (make((300,), dtype, device, low=-2, high=2), 0),
    ]
    for x, dim in cases:
        if dtype != "int32":
            x = (x * 2).round() / 2  # many ties: the first occurrence must win, across split programs too
        shape = tuple(s for i, s in enumerate(x.shape) if i != dim)
        values = torch.empty(shape, dtype=x.dtype, device=device)
        indices = torch.empty(shape, dtype=torch.int64, device=device)
        gk.arg_reduce(op, buf(x), buf(values), buf(indices), dim)
        sync(device)
        xc = x.cpu().double() if dtype == "bfloat16" else x.cpu()
        ref_v, ref_i = xc.max(dim) if op == "max" else xc.min(dim)
        assert torch.equal(indices.cpu(), ref_i), (tuple(x.shape), dim)
        assert torch.equal(values.cpu().to(ref_v.dtype), ref_v)


def test_arg_reduce_nan_across_split(device: str, tiles: str) -> None:
    x = make((5, 200), "float32", device)
    x[1, 150] = float("nan")
    x[1, 170] = float("nan")
    x[3, 7] = float("nan")
    for op in ("max", "min"):
        values = torch.empty(5, device=device)
        indices = torch.empty(5, dtype=torch.int64, device=device)
        gk.arg_reduce(op, buf(x), buf(values), buf(indices), 1)
        sync(device)
        ref = x.cpu().argmax(1) if op == "max" else x.cpu().argmin(1)
        assert torch.equal(indices.cpu(), ref)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int64"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_arg_reduce_extremes_of_everything(device: str, tiles: str, dtype: str, op: str) -> None:
    # argmax() of a whole tensor (one row, K split over programs): identity-valued extremes (-inf for
    # max, the int64 minimum) must still give the first index, the first NaN wins, ties keep the first.
    floating = dtype != "int64"
    worst = float("-inf" if op == "max" else "inf") if floating else (-(2**63) if op == "max" else 2**63 - 1)
    dt = TORCH_DTYPES[dtype]
    n = 1009  # prime: a ragged last chunk in every program
    cases = {
        "all_worst": torch.full((n,), worst, dtype=dt),
        "worst_then_one": torch.full((n,), worst, dtype=dt).index_fill_(0, torch.tensor([700]), 1),
        "ties": (make((n,), "float64", "cpu", low=-2, high=2) * 2).round().to(dt),
        "late_extreme_twice": make((n,), dtype, "cpu", low=-2, high=2).index_fill_(
            0, torch.tensor([777, 901]), 9 if op == "max" else -9
        ),
    }
    if floating:
        nan = make((n,), dtype, "cpu")
        nan[[613, 800]] = float("nan")
        cases["nans"] = nan
        cases["nan_among_worst"] = torch.full((n,), worst, dtype=dt).index_fill_(0, torch.tensor([5, 6]), float("nan"))
    for name, x in cases.items():
        x = x.to(device)
        values = torch.empty((), dtype=dt, device=device)
        index = torch.empty((), dtype=torch.int64, device=device)
        gk.arg_reduce(op, buf(x), buf(values), buf(index), 0)
        sync(device)
        xc = x.cpu()
        want = xc.argmax() if op == "max" else xc.argmin()
        assert index.item() == want.item(), (name, index.item(), want.item())
        assert torch.equal(values.cpu(), xc[want]) or (values.cpu().isnan() and xc[want].isnan()), name


@pytest.mark.parametrize("shape,dim", [((3, 1), 1), ((1, 257), 1), ((257, 3), 0), ((2, 5000), 1), ((5000,), 0)])
def test_arg_reduce_odd_sizes(device: str, tiles: str, shape: tuple[int, ...], dim: int) -> None:
    x = (make(shape, "float32", device) * 2).round() / 2
    out_shape = tuple(s for i, s in enumerate(shape) if i != dim)
    for op in ("max", "min"):
        values = torch.empty(out_shape, device=device)
        indices = torch.empty(out_shape, dtype=torch.int64, device=device)
        gk.arg_reduce(op, buf(x), buf(values), buf(indices), dim)
        sync(device)
        ref_v, ref_i = x.cpu().max(dim) if op == "max" else x.cpu().min(dim)
        assert torch.equal(indices.cpu(), ref_i) and torch.equal(values.cpu(), ref_v)


def test_reduce_plans_are_reused_and_follow_pointers(device: str) -> None:
    rd.clear_plans()
    a, b = make((9, 53), "float32", device), make((9, 53), "float32", device)
    outs = [torch.empty(9, device=device) for _ in range(2)]
    for x, out in zip((a, b), outs):
        gk.reduce("sum", buf(x), buf(out), (1,))
    sync(device)
    assert len(rd._PLANS) == 1  # one layout, one plan; the second call ran it on other memory
    assert_close(outs[0], a.double().sum(1).float(), rtol=1e-5, atol=1e-5)
    assert_close(outs[1], b.double().sum(1).float(), rtol=1e-5, atol=1e-5)
