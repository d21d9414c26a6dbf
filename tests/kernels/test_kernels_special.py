"""The special functions' elementwise ops (special_math.py) against torch's float64, over wide ranges
and at the edges of their domains; float32 against float64 too (the kernels compute halves in float32)."""

from __future__ import annotations

import mpmath  # torch's sympy brings it, on every tier
import pytest
import torch
from kernels_helpers import buf, sync

import genesis_kernels as gk

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
INF, NAN = float("inf"), float("nan")


def _unary(op: str, x: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=out_dtype or x.dtype, device=x.device)
    gk.unary(op, buf(x), buf(out))
    sync(DEVICE)
    return out


def _binary(op: str, a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    out = torch.empty(a.shape, dtype=out_dtype or a.dtype, device=a.device)
    gk.binary(op, buf(a), buf(b), buf(out), compute_dtype=str(a.dtype).removeprefix("torch."))
    sync(DEVICE)
    return out


def _spread(low: float, high: float, n: int = 24, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (low + (high - low) * torch.rand(n, generator=g, dtype=torch.float64)).to(DEVICE)


def _logspread(low: float, high: float, n: int = 24, seed: int = 0) -> torch.Tensor:
    return _spread(low, high, n, seed).exp10() if hasattr(torch.Tensor, "exp10") else 10 ** _spread(low, high, n, seed)


def _close(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float = 0.0) -> None:
    torch.testing.assert_close(actual.cpu(), expected.cpu().to(actual.dtype), rtol=rtol, atol=atol, equal_nan=True)


UNARY_CASES = {
    # op: (torch reference, inputs, float64 rtol)
    "erfinv": (
        torch.erfinv,
        lambda: torch.cat([_spread(-1, 1), 1 - _logspread(-15, -1, 8), -1 + _logspread(-15, -1, 8)]),
        1e-13,
    ),
    "erfcx": (torch.special.erfcx, lambda: torch.cat([_spread(-5, 30), _logspread(0, 6, 8)]), 1e-13),
    "ndtri": (
        torch.special.ndtri,
        lambda: torch.cat([_spread(0, 1), _logspread(-300, -1, 8), 1 - _logspread(-15, -1, 8)]),
        1e-12,
    ),
    "log_ndtr": (torch.special.log_ndtr, lambda: torch.cat([_spread(-40, 10), -_logspread(1, 8, 8)]), 1e-13),
    "digamma": (torch.digamma, lambda: torch.cat([_spread(-20, 40), _logspread(-8, 6, 8)]), 1e-11),
    "i0": (torch.special.i0, lambda: _spread(-60, 60, 32), 1e-13),
    "i0e": (torch.special.i0e, lambda: torch.cat([_spread(-60, 60, 32), _logspread(2, 8, 4)]), 1e-13),
    "i1": (torch.special.i1, lambda: _spread(-60, 60, 32), 1e-13),
    "i1e": (torch.special.i1e, lambda: torch.cat([_spread(-60, 60, 32), _logspread(2, 8, 4)]), 1e-13),
}


@pytest.mark.parametrize("op", sorted(UNARY_CASES))
def test_unary_special_float64(op):
    ref, inputs, rtol = UNARY_CASES[op]
    x = inputs()
    _close(_unary(op, x), ref(x), rtol=rtol, atol=1e-300)


@pytest.mark.parametrize("op", sorted(UNARY_CASES))
def test_unary_special_float32(op):
    ref, inputs, _ = UNARY_CASES[op]
    x64 = inputs()
    x = x64.float()
    expected = ref(x.double())
    keep = expected.abs() < 1e38  # past float32's range both are inf
    _close(_unary(op, x)[keep], expected[keep], rtol=2e-5, atol=1e-37)


EDGES = torch.tensor([0.0, -0.0, 1.0, -1.0, -2.0, 0.5, INF, -INF, NAN], dtype=torch.float64)


@pytest.mark.parametrize("op", sorted(UNARY_CASES))
def test_unary_special_edges(op):
    ref = UNARY_CASES[op][0]
    x = EDGES.to(DEVICE)
    _close(_unary(op, x), ref(x), rtol=1e-13)


def test_signbit():
    x = torch.tensor([0.0, -0.0, 1.5, -2.0, INF, -INF, NAN, -NAN], device=DEVICE)
    assert torch.equal(_unary("signbit", x, torch.bool).cpu(), torch.signbit(x).cpu())
    i = torch.tensor([3, -4, 0], dtype=torch.int32, device=DEVICE)
    assert torch.equal(_unary("signbit", i, torch.bool).cpu(), torch.signbit(i).cpu())


def test_zeta():
    s = torch.cat([_spread(1.01, 12, 24, 1), torch.tensor([2.0, 3.0, 4.0, 2.5, 1.0, 0.5, 2.0], device=DEVICE)])
    q = torch.cat([_spread(0.01, 30, 24, 2), torch.tensor([-1.5, -3.5, -0.25, -1.5, 1.0, 1.0, -2.0], device=DEVICE)])
    _close(_binary("zeta", s, q), torch.special.zeta(s, q), rtol=1e-12)


@pytest.mark.parametrize("op", ["igamma", "igammac"])
def test_incomplete_gamma(op):
    a = torch.cat([_spread(0.05, 50, 32, 3), torch.tensor([0.0, 0.0, 1.0, -1.0, 2.0, 1.0, 3.0, INF], device=DEVICE)])
    x = torch.cat([_spread(0.01, 80, 32, 4), torch.tensor([0.0, 1.0, 0.0, 1.0, INF, -1.0, NAN, 2.0], device=DEVICE)])
    ref = getattr(torch, op)
    # torch's own float64 values are off by up to ~2e-9 for a in the tens (its large-a asymptotic branch):
    # the random points are checked against mpmath at 1e-12, the edges against torch's exact values.
    n = 32
    got = _binary(op, a, x)
    exact = torch.tensor([_mp_gammainc(op, float(ai), float(xi)) for ai, xi in zip(a[:n], x[:n])], dtype=torch.float64)
    _close(got[:n], exact, rtol=1e-12, atol=1e-300)
    _close(got[n:], ref(a[n:], x[n:]), rtol=0.0)
    _close(_binary(op, a.float(), x.float()), ref(a, x), rtol=1e-4, atol=1e-30)


def _mp_gammainc(op: str, a: float, x: float) -> float:
    with mpmath.workdps(30):
        if op == "igamma":
            return float(mpmath.gammainc(a, 0, x, regularized=True))
        return float(mpmath.gammainc(a, x, mpmath.inf, regularized=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nextafter(dtype):
    a = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, -0.0, 2.5, INF, NAN, 3.0], dtype=dtype, device=DEVICE)
    b = torch.tensor([2.0, 0.0, 0.0, -2.0, 1.0, -1.0, 1.0, 2.5, 0.0, 1.0, NAN], dtype=dtype, device=DEVICE)
    assert torch.equal(_binary("nextafter", a, b).cpu().nan_to_num(7.0), torch.nextafter(a, b).cpu().nan_to_num(7.0))


@pytest.mark.parametrize("op", ["gcd", "lcm"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_gcd_lcm(op, dtype):
    g = torch.Generator().manual_seed(5)
    a = torch.randint(-500, 500, (40,), generator=g, dtype=dtype).to(DEVICE)
    b = torch.randint(-500, 500, (40,), generator=g, dtype=dtype).to(DEVICE)
    a[:3], b[:3] = torch.tensor([0, 0, 7]), torch.tensor([0, 9, 0])
    assert torch.equal(_binary(op, a, b).cpu(), getattr(torch, op)(a, b).cpu())


# torch's own float64 Bessel J / Y and Airy values are off by up to ~1e-6 (its float32-accurate tables):
# these are checked against mpmath instead, over each method's range and across the switch points.
_MP_BESSEL = {
    "bessel_j0": lambda mp, v: mp.besselj(0, v),
    "bessel_j1": lambda mp, v: mp.besselj(1, v),
    "bessel_y0": lambda mp, v: mp.bessely(0, v),
    "bessel_y1": lambda mp, v: mp.bessely(1, v),
    "modified_bessel_k0": lambda mp, v: mp.besselk(0, v),
    "modified_bessel_k1": lambda mp, v: mp.besselk(1, v),
    "scaled_modified_bessel_k0": lambda mp, v: mp.besselk(0, v) * mp.exp(v),
    "scaled_modified_bessel_k1": lambda mp, v: mp.besselk(1, v) * mp.exp(v),
    "airy_ai": lambda mp, v: mp.airyai(v),
}
_SWITCHES = [1e-3, 0.7, 1.99, 2.01, 4.99, 5.01, 13.4, 24.99, 25.01, 80.0, 700.0]


@pytest.mark.parametrize("op", sorted(_MP_BESSEL))
def test_bessel_and_airy_against_mpmath(op):
    signed = op in ("bessel_j0", "bessel_j1", "airy_ai")
    x = torch.cat(
        [_spread(-30 if signed else 0.05, 40, 16, 7), torch.tensor(_SWITCHES, dtype=torch.float64, device=DEVICE)]
    )
    if signed:
        x = torch.cat([x, torch.tensor([-7.99, -8.01, -60.0, -4.99, -25.01], dtype=torch.float64, device=DEVICE)])
    if "_k" in op:  # the quadrature's range for huge x (1 + 45/x rounds to 1 past 1e17)
        x = torch.cat([x, torch.tensor([1e20, 1e30], dtype=torch.float64, device=DEVICE)])
    # (Ai's Maclaurin series cancels to ~3e-12 absolute near -8, where the asymptotic series takes over)
    _close(_unary(op, x), _mp_values(mpmath, op, x), rtol=1e-12, atol=4e-12)
    # float32 inputs compute in float64 too: only the final rounding differs
    x32 = x.float()
    _close(_unary(op, x32), _mp_values(mpmath, op, x32.double()), rtol=1e-6, atol=1e-30)


def _mp_values(mpmath, op: str, x: torch.Tensor) -> torch.Tensor:
    with mpmath.workdps(30):
        return torch.tensor([float(_MP_BESSEL[op](mpmath, mpmath.mpf(float(v)))) for v in x.cpu()], dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", sorted(_MP_BESSEL))
def test_bessel_and_airy_edges(op, dtype):
    x = torch.tensor([0.0, -0.0, -1.0, INF, -INF, NAN, -NAN], dtype=dtype, device=DEVICE)
    got = _unary(op, x)
    assert got[-2:].isnan().all(), f"{op}(nan) = {got[-2:].tolist()}"
    _close(got, getattr(torch.special, op)(x.double()), rtol=1e-5)


# NaN in, NaN out, for every unary special op: the kernels clamp x into each method's range, and the GPU's
# min / max (unlike numpy's) map NaN to the bound, so each op must restore NaN itself.
_ALL_UNARY = {op: ref for op, (ref, _, _) in UNARY_CASES.items()} | {
    op: getattr(torch.special, op) for op in _MP_BESSEL
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", sorted(_ALL_UNARY))
def test_unary_special_nan_and_inf(op, dtype):
    x = torch.tensor([NAN, -NAN, INF, -INF, 0.0, -0.0], dtype=dtype, device=DEVICE)
    got = _unary(op, x)
    assert got[:2].isnan().all(), f"{op}(nan) = {got[:2].tolist()} ({dtype})"
    torch.testing.assert_close(got.cpu(), _ALL_UNARY[op](x.double()).cpu().to(dtype), equal_nan=True)


# Every pair of these, for the binary float ops: torch's rules at the edges (zeta(1, nan) = inf,
# igamma(nan, 0) = 0, igamma(inf, inf) = nan, ...), and NaN elsewhere a NaN goes in.
_GRID = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -2.5, 3.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", ["zeta", "igamma", "igammac", "nextafter"])
def test_binary_special_edges(op, dtype):
    a = torch.tensor([p for p in _GRID for _ in _GRID], dtype=dtype, device=DEVICE)
    b = torch.tensor([q for _ in _GRID for q in _GRID], dtype=dtype, device=DEVICE)
    ref = {"zeta": torch.special.zeta, "igamma": torch.igamma, "igammac": torch.igammac}.get(op)
    expected = ref(a.double(), b.double()).to(dtype) if ref else torch.nextafter(a, b)
    rtol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(_binary(op, a, b).cpu(), expected.cpu(), rtol=rtol, atol=0.0, equal_nan=True)
