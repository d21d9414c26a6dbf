"""The gamma family's special functions as Triton device helpers (special_math.py dispatches to them).

- ``digamma``: reflection below 0, the recurrence up to 10, the asymptotic series there;
- ``zeta`` (Hurwitz): a direct sum up to q + N >= 9, then Euler-Maclaurin with 12 Bernoulli terms (their
  coefficients computed here, exactly, from the Bernoulli numbers); polygamma(n >= 1, x) is
  (-1)^(n+1) n! zeta(n + 1, x);
- ``igamma`` / ``igammac``: the power series for x < a + 1, Lentz's continued fraction otherwise.

Each works in the dtype it is given (float32 for 16/32-bit inputs, float64 for float64).
"""

from __future__ import annotations

from fractions import Fraction

import triton
import triton.language as tl

from .mathlib import lib
from .special_clamp import at_least, at_most

_PI = tl.constexpr(3.141592653589793)


def _bernoulli(n: int) -> list[Fraction]:
    """B_0 .. B_n (B_1 = -1/2), by the Akiyama-Tanigawa algorithm."""
    out = []
    a = [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0] if m != 1 else -a[0])
    return out


def _em_coefficients(count: int) -> list[float]:
    """B_2k / (2k)! for k = 1 .. count: the Euler-Maclaurin correction factors."""
    b = _bernoulli(2 * count)
    fact = Fraction(1)
    out = []
    for k in range(1, 2 * count + 1):
        fact *= k
        if k % 2 == 0:
            out.append(float(b[k] / fact))
    return out


(_C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12) = (tl.constexpr(c) for c in _em_coefficients(12))


@triton.jit
def _psi_asymptotic(x):
    """digamma for x >= 10: log x - 1/(2x) - sum B_2k / (2k x^2k), 7 terms (error < 1e-17)."""
    z = 1.0 / (x * x)
    s = z * (
        1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12)))))
    )
    return lib.log(x) - 0.5 / x - s


@triton.jit
def digamma(x):
    """psi(x): reflection psi(x) = psi(1 - x) - pi / tan(pi x) below 0 (NaN at the poles, -inf / inf at
    +0 / -0 as torch), the recurrence psi(x) = psi(x + 1) - 1/x up to 10, the asymptotic series there."""
    neg = x < 0
    v = tl.where(neg, 1.0 - x, x)
    acc = tl.zeros_like(v)
    for _ in range(10):
        small = v < 10.0
        acc = tl.where(small, acc - 1.0 / v, acc)
        v = tl.where(small, v + 1.0, v)
    r = acc + _psi_asymptotic(v)
    frac = x - lib.rint(x)  # tan(pi x) has period 1: reduce first, so that large |x| stays accurate
    r = tl.where(neg, r - (1.0 / lib.tan(frac * _PI)) * _PI, r)
    r = tl.where(neg & (frac == 0.0), float("nan"), r)
    return tl.where(x == float("-inf"), float("nan"), r)


@triton.jit
def _em_term(acc, fac, s, j, inv_a2, c):
    """One Euler-Maclaurin correction: fac becomes s (s+1) ... (s+2j-2) a^(-s-2j+1)."""
    fac = fac * (s + (2 * j - 3)) * (s + (2 * j - 2)) * inv_a2
    return acc + fac * c, fac


@triton.jit
def zeta(s, q):
    """The Hurwitz zeta function sum_k (k + q)^-s: inf at s = 1 and at q a non-positive integer, NaN for
    s < 1 and for q < 0 with s not an integer (as torch)."""
    # A direct sum until q + n >= 9 (more terms for negative q: the block's largest count).
    q_finite = tl.where(q == float("-inf"), 0.0, q)  # (-inf is a pole: no terms to sum)
    shift = at_most(at_least(9.0 - lib.floor(q_finite), 9.0), 1.0e6)  # 9 for a NaN q
    n = tl.max(shift.to(tl.int32), axis=0)
    acc = tl.zeros_like(s)
    for k in range(0, n):
        use = k < shift
        acc = tl.where(use, acc + lib.pow(q + k, -s), acc)
    direct = acc  # all of it for s = inf (every later term is 0), where the tail's inf * 0 would give NaN
    a = q + shift
    b = lib.pow(a, -s)
    inv_a2 = 1.0 / (a * a)
    acc = acc + a * b / (s - 1.0) + 0.5 * b
    fac = s * b / a
    acc = acc + fac * _C1
    acc, fac = _em_term(acc, fac, s, 2, inv_a2, _C2)
    acc, fac = _em_term(acc, fac, s, 3, inv_a2, _C3)
    acc, fac = _em_term(acc, fac, s, 4, inv_a2, _C4)
    acc, fac = _em_term(acc, fac, s, 5, inv_a2, _C5)
    acc, fac = _em_term(acc, fac, s, 6, inv_a2, _C6)
    acc, fac = _em_term(acc, fac, s, 7, inv_a2, _C7)
    acc, fac = _em_term(acc, fac, s, 8, inv_a2, _C8)
    acc, fac = _em_term(acc, fac, s, 9, inv_a2, _C9)
    acc, fac = _em_term(acc, fac, s, 10, inv_a2, _C10)
    acc, fac = _em_term(acc, fac, s, 11, inv_a2, _C11)
    acc, fac = _em_term(acc, fac, s, 12, inv_a2, _C12)
    # s = inf: the terms are 0, 1 or inf; where all are 0 torch's own tail divides 0 by 0 (NaN), kept as torch
    acc = tl.where(s == float("inf"), tl.where(direct == 0.0, float("nan"), direct), acc)
    q_int = q == lib.floor(q)
    acc = tl.where((q <= 0) & ~q_int & (s != lib.floor(s)), float("nan"), acc)
    acc = tl.where((q <= 0) & q_int, float("inf"), acc)
    acc = tl.where(s < 1.0, float("nan"), acc)
    return tl.where(s == 1.0, float("inf"), acc)


@triton.jit
def _igamma_parts(a, x):
    """(P, Q) regularised incomplete gamma functions for a > 0, x > 0: the series for P when x < a + 1,
    Lentz's continued fraction for Q otherwise (200 steps: accurate for a up to about 10^4)."""
    series = x < a + 1.0
    # P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a+1) ... (a+n))
    term = tl.zeros_like(a) + 1.0
    total = term
    ap = a
    for _ in range(200):
        ap = ap + 1.0
        term = term * x / ap
        total = total + term
    p_series = total * lib.exp(a * lib.log(x) - x - lib.lgamma(a + 1.0))
    # Q = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)), modified Lentz.
    tiny = 1.0e-300 if a.dtype == tl.float64 else 1.0e-30
    b = x + 1.0 - a
    c = tl.zeros_like(a) + 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 200):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = tl.where(tl.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = tl.where(tl.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        h = h * d * c
    q_frac = h * lib.exp(a * lib.log(x) - x - lib.lgamma(a))
    p = tl.where(series, p_series, 1.0 - q_frac)
    q = tl.where(series, 1.0 - p_series, q_frac)
    return p, q


@triton.jit
def igamma(a, x, UPPER: tl.constexpr):
    """P(a, x) (UPPER False) or Q(a, x), with torch's values at the edges of the domain: its tests in its
    order (applied here last to first, so that the first that holds wins), NaN otherwise where a or x is."""
    inf = float("inf")
    a_pos = tl.where((a > 0) & (a < inf), a, 1.0)
    x_pos = tl.where((x > 0) & (x < inf), x, 1.0)
    p, q = _igamma_parts(a_pos, x_pos)
    r = q if UPPER else p
    one = 0.0 if UPPER else 1.0  # P's value 1 (Q's 0)
    zero = 1.0 if UPPER else 0.0  # P's value 0 (Q's 1)
    r = tl.where((a != a) | (x != x), float("nan"), r)
    r = tl.where(x == inf, one, r)
    r = tl.where(a == inf, tl.where(x == inf, float("nan"), zero), r)
    r = tl.where(x == 0, zero, r)
    r = tl.where(a == 0, tl.where(x > 0, one, float("nan")), r)
    return tl.where((a < 0) | (x < 0), float("nan"), r)
