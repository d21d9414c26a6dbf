"""One-pass reductions (reduce_online.py) against torch in float64: var / std (Welford per lane, Chan's
merge across lanes and programs) and logsumexp (a running max per lane, the sum rescaled to it).

Every case runs with the shipped tiles and with tiny tiles that split any reduction longer than 32
over programs (the merge of the programs' partial summaries in a second launch).
"""

from __future__ import annotations

import sys

import pytest
import torch
from kernels_helpers import assert_close, buf, make, sync

import genesis_kernels as gk

rd = sys.modules["genesis_kernels.reduce"]  # the package's ``reduce`` attribute is the function


def _tiny_tiles(M: int, K: int, red_contig: bool, inner: int) -> tuple[int, int, int, int]:
    # 4-element chunks and a demand of 64 programs per SM: any K > 32 is split over programs.
    return (min(4, 1 << max(inner - 1, 0).bit_length()) if inner else 2), 4, 4, 64


@pytest.fixture(params=["default", "split"])
def tiles(request, monkeypatch):  # type: ignore[no-untyped-def]
    rd.clear_plans()
    if request.param == "split":
        monkeypatch.setattr(rd, "online_tile_config", _tiny_tiles)
    yield request.param
    rd.clear_plans()


def _var(kind: str, x: torch.Tensor, dims: tuple[int, ...], correction: int) -> torch.Tensor:
    kept = tuple(s for d, s in enumerate(x.shape) if d not in {e % x.dim() for e in dims})
    out = torch.empty(kept, dtype=x.dtype, device=x.device)
    getattr(gk, kind)(buf(x), buf(out), dims, correction)
    sync(str(x.device.type))
    return out


def _ref(kind: str, x: torch.Tensor, dims: tuple[int, ...], correction: int) -> torch.Tensor:
    return getattr(torch, kind)(x.double(), dim=dims, correction=correction)


def _layouts(device: str, dtype: str = "float32") -> list[tuple[torch.Tensor, tuple[int, ...]]]:
    base = make((6, 37, 5), dtype, device)
    return [
        (make((9, 53), dtype, device), (1,)),  # rows
        (make((53, 9), dtype, device), (0,)),  # columns (inner rows)
        (make((7, 13), dtype, device), (0, 1)),  # everything
        (base, (1,)),  # a middle dim
        (base, (0, 2)),  # the outer and inner dims
        (base.permute(2, 1, 0), (1,)),  # a middle dim of a permuted view
        (make((9, 53), dtype, device).t(), (0,)),  # columns of a transposed view: contiguous reduced dim
        (make((9, 106), dtype, device)[:, ::2], (1,)),  # strided rows
        (make((20, 33), dtype, device)[::3, 1::4], (0, 1)),  # sliced with steps both ways
        (make((1, 41, 1, 3), dtype, device), (1,)),  # size-1 dims
        (make((5, 7, 11), dtype, device), (-1, 0)),  # a tuple of dims, one negative
        (make((1, 23), dtype, device).expand(19, 23), (0,)),  # a broadcast (stride 0) dim: variance 0
    ]


@pytest.mark.parametrize("kind,correction", [("var", 0), ("var", 1), ("var", 2), ("std", 1)])
def test_var_std_every_layout(device: str, tiles: str, kind: str, correction: int) -> None:
    for x, dims in _layouts(device):
        got = _var(kind, x, dims, correction)
        assert_close(got, _ref(kind, x, dims, correction).float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_var_std_dtypes(device: str, tiles: str, dtype: str) -> None:
    # Half types accumulate in float32 and round once at the end; float64 stays float64 throughout.
    for x, dims in _layouts(device, dtype):
        for kind in ("var", "std"):
            got = _var(kind, x, dims, 1)
            assert_close(got, _ref(kind, x, dims, 1).to(got.dtype), dtype)


@pytest.mark.parametrize(
    "shape,dims",
    [((1,), (0,)), ((7,), (0,)), ((3, 1), (1,)), ((1, 5), (0,)), ((13, 17), (1,)), ((17, 13), (0,)), ((31, 2), (0, 1))],
)
def test_var_odd_shapes(device: str, tiles: str, shape: tuple[int, ...], dims: tuple[int, ...]) -> None:
    x = make(shape, "float32", device)
    for correction in (0, 1):
        assert_close(_var("var", x, dims, correction), _ref("var", x, dims, correction).float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["rows", "cols", "all", "middle"])
def test_var_large_offset(device: str, tiles: str, layout: str) -> None:
    # 1e4 + 1e-3 noise in float32: the spread is ~1 ulp of the offset. E[x^2] - E[x]^2 loses it entirely,
    # and so does a float32 mean (off by up to half an ulp); deviations from a row element keep it.
    shape, dims = {"rows": ((6, 300), (1,)), "cols": ((300, 6), (0,)), "all": ((30, 41), (0, 1))}.get(
        layout, ((3, 100, 5), (1,))
    )
    x = (torch.randn(shape, dtype=torch.float64) * 1e-3 + 1e4).float().to(device)
    want = _ref("var", x, dims, 1)
    xc = x.cpu()
    n = xc.numel() / want.numel()  # a plain number: `want` lives on the device, `xc` on the host
    naive = ((xc * xc).sum(dims) / n - (xc.sum(dims) / n) ** 2) * n / (n - 1)
    assert not torch.allclose(naive.double(), want.cpu(), rtol=1e-2), "the data should defeat the naive formula"
    assert_close(_var("var", x, dims, 1), want.float(), rtol=1e-5, atol=0)
    assert_close(_var("std", x, dims, 1), want.sqrt().float(), rtol=1e-5, atol=0)


def test_var_correction_past_k_and_empty(device: str, tiles: str) -> None:
    # torch divides by max(K - correction, 0): inf where the elements differ, nan where they are all equal.
    x = make((4, 3), "float32", device)
    x[2] = 1.5
    for correction in (3, 5, 1):
        got, want = _var("var", x, (1,), correction), _ref("var", x, (1,), correction)
        assert_close(got, want.float(), rtol=1e-5, atol=1e-6)
    assert torch.isinf(_var("var", x, (1,), 3)[[0, 1, 3]]).all() and torch.isnan(_var("var", x, (1,), 3)[2])
    one = make((5, 1), "float32", device)
    assert torch.isnan(_var("std", one, (1,), 1)).all() and (_var("var", one, (1,), 0) == 0).all()
    empty = torch.empty((4, 0), device=device)
    assert torch.isnan(_var("var", empty, (1,), 1)).all() and torch.isnan(_var("std", empty, (1,), 0)).all()
    assert _var("var", empty.t(), (1,), 1).numel() == 0  # nothing kept: nothing to launch


def test_var_nan_and_inf_propagate(device: str, tiles: str) -> None:
    x = make((5, 60), "float32", device)
    x[1, 40] = float("nan")
    x[3, 7] = float("inf")
    got = _var("var", x, (1,), 1)
    assert_close(got, _ref("var", x, (1,), 1).float(), rtol=1e-5, atol=1e-6)
    assert torch.isnan(got[[1, 3]]).all() and torch.isfinite(got[[0, 2, 4]]).all()


@pytest.mark.parametrize(
    "shape,dims", [((40_000,), (0,)), ((3000, 40), (0,)), ((3, 20_000), (1,)), ((4, 9000, 3), (1,))]
)
def test_var_split_paths(device: str, shape: tuple[int, ...], dims: tuple[int, ...]) -> None:
    # Few output rows and long reductions with the shipped tiles: K is split over programs and the
    # partial (mean, M2) summaries merge in a second launch. The offset keeps the shift honest.
    rd.clear_plans()
    x = make(shape, "float32", device) + 100.0
    for kind in ("var", "std"):
        assert_close(_var(kind, x, dims, 1), _ref(kind, x, dims, 1).float(), rtol=1e-5, atol=0)


@pytest.mark.gpu_tier
@pytest.mark.parametrize("layout", ["rows", "cols", "all", "middle"])
def test_var_large_offset_full_size(device: str, layout: str) -> None:
    # The benchmark's sizes: many lanes and programs per row, merged over deep trees.
    rd.clear_plans()
    x = (torch.randn(2048, 4096, dtype=torch.float64, device=device) * 1e-3 + 1e4).float()
    x, dims = {"rows": (x, (1,)), "cols": (x, (0,)), "all": (x, (0, 1))}.get(layout, (x.view(16, 128, 4096), (1,)))
    assert_close(_var("var", x, dims, 1), _ref("var", x, dims, 1).float(), rtol=2e-5, atol=0)


def test_var_plans_are_reused(device: str) -> None:
    rd.clear_plans()
    a, b = make((9, 53), "float32", device), make((9, 53), "float32", device)
    got = [_var("var", t, (1,), 1) for t in (a, b)]
    assert len(rd._PLANS) == 1  # one layout, one plan; the second call ran it on other memory
    for t, g in zip((a, b), got):
        assert_close(g, _ref("var", t, (1,), 1).float(), rtol=1e-5, atol=1e-6)
    _var("std", a, (1,), 1)
    _var("var", a, (1,), 0)
    assert len(rd._PLANS) == 3  # std and another correction plan apart


# ----------------------------------------------------------------------------------------------
# logsumexp
# ----------------------------------------------------------------------------------------------


def _lse(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    kept = tuple(s for d, s in enumerate(x.shape) if d not in {e % x.dim() for e in dims})
    out = torch.empty(kept, dtype=x.dtype, device=x.device)
    gk.logsumexp(buf(x), buf(out), dims)
    sync(str(x.device.type))
    return out


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
def test_logsumexp_every_layout(device: str, tiles: str, dtype: str) -> None:
    # Values up to +-90: exp overflows float32 unless taken relative to the running max.
    for x, dims in _layouts(device, dtype):
        x = x * 30
        got = _lse(x, dims)
        assert_close(got, torch.logsumexp(x.double(), dim=dims).to(got.dtype), dtype)


def test_logsumexp_extremes(device: str, tiles: str) -> None:
    x = make((8, 50), "float32", device) * 10
    x[0] = float("-inf")  # every element -inf: -inf
    x[1, 7] = float("inf")  # inf wins
    x[2, 30] = float("nan")
    x[3, :25] = float("-inf")  # -inf among finite values adds nothing
    x[4] = torch.arange(50, device=device) * 3.0  # a new maximum at every element: the sum rescales each time
    x[5] = torch.arange(50, device=device) * -3.0
    x[6, [3, 40]] = float("inf")  # inf twice, and beside -inf
    x[6, 20] = float("-inf")
    x[7] = 5.0  # all equal: 5 + log(50)
    for view, dims in ((x, (1,)), (x.t(), (0,)), (x[:, ::3], (1,))):
        assert_close(_lse(view, dims), torch.logsumexp(view.double(), dim=dims).float())
    assert torch.isneginf(_lse(x, (1,))[0]) and torch.isposinf(_lse(x, (1,))[1]) and torch.isnan(_lse(x, (1,))[2])


@pytest.mark.parametrize("shape,dims", [((40_000,), (0,)), ((3000, 40), (0,)), ((3, 20_000), (1,))])
def test_logsumexp_split_paths(device: str, shape: tuple[int, ...], dims: tuple[int, ...]) -> None:
    # The shipped tiles split these over programs; each program's (max, sum) merges in a second launch.
    rd.clear_plans()
    x = make(shape, "float32", device) * 20
    x.view(-1)[-1] = 70.0  # the largest element in the last program
    assert_close(_lse(x, dims), torch.logsumexp(x.double(), dim=dims).float())
    out = torch.empty(tuple(s for d, s in enumerate(shape) if d not in dims), device=device)
    gk.logsumexp(buf(x), buf(out), dims)  # the cached plan, run again
    sync(device)
    assert_close(out, torch.logsumexp(x.double(), dim=dims).float())


def test_logsumexp_empty(device: str) -> None:
    out = torch.zeros(4, device=device)
    gk.logsumexp(buf(torch.empty((4, 0), device=device)), buf(out), (1,))
    sync(device)
    assert torch.isneginf(out).all()
