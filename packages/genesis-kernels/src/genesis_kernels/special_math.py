"""Special functions as Triton device helpers, and the elementwise ops that run them.

Each helper works in the dtype it is given (float32 for 16/32-bit inputs, float64 for float64: the
elementwise launcher picks it), so one implementation serves both precisions; where a closed form
is only approximate, a Newton/Halley step on an accurate libdevice function finishes the job.

- ``erfinv`` / ``ndtri``: Giles' single-precision approximation (or, deep in the tail, the erfc
  asymptote solved by fixed-point iteration) as the start, then two Halley steps on erf / erfc;
- ``erfcx``: exp(x^2) erfc(x) with exp(x^2) split so that no rounding of x^2 is amplified, and the
  asymptotic series past x = 8;
- ``digamma``: reflection below 0, the recurrence up to 10, the asymptotic series there;
- ``zeta`` (Hurwitz): a direct sum up to q + N >= 9, then Euler-Maclaurin with 12 Bernoulli terms;
  polygamma(n >= 1, x) is (-1)^(n+1) n! zeta(n + 1, x);
- ``i0`` / ``i1`` (and the exponentially scaled forms): the power series below 30, the Hankel
  asymptotic series above;
- ``igamma`` / ``igammac``: the power series for x < a + 1, Lentz's continued fraction otherwise;
- ``nextafter``, ``signbit``, ``gcd``, ``lcm``: on the bits / integers.
"""

from __future__ import annotations

from fractions import Fraction

import triton
import triton.language as tl

from . import special_bessel
from .mathlib import lib

# Elementwise op names this module adds (genesis_kernels.elementwise merges them into its tables).
BESSEL_OPS = frozenset(
    {
        "bessel_j0",
        "bessel_j1",
        "bessel_y0",
        "bessel_y1",
        "modified_bessel_k0",
        "modified_bessel_k1",
        "scaled_modified_bessel_k0",
        "scaled_modified_bessel_k1",
        "airy_ai",
    }
)
UNARY_OPS = (
    frozenset({"erfinv", "erfcx", "ndtri", "log_ndtr", "digamma", "i0", "i0e", "i1", "i1e", "signbit"}) | BESSEL_OPS
)
FLOAT_UNARY = UNARY_OPS - {"signbit"}
BINARY_OPS = frozenset({"zeta", "igamma", "igammac", "nextafter", "gcd", "lcm"})
FLOAT_BINARY = frozenset({"zeta", "igamma", "igammac"})


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

_PI = tl.constexpr(3.141592653589793)
_SQRT_PI = tl.constexpr(1.7724538509055160)
_TWO_OVER_SQRT_PI = tl.constexpr(1.1283791670955126)
_SQRT2 = tl.constexpr(1.4142135623730951)
_INV_SQRT_2PI = tl.constexpr(0.3989422804014327)


# ------------------------------------------------------------------ erf inverses
@triton.jit
def _giles(w):
    """Giles' single-precision erfinv(y) / y, as a polynomial in w = -log(1 - y^2) (w < 5 and 5 <= w)."""
    c = w - 2.5
    p = 2.81022636e-08
    p = 3.43273939e-07 + p * c
    p = -3.5233877e-06 + p * c
    p = -4.39150654e-06 + p * c
    p = 0.00021858087 + p * c
    p = -0.00125372503 + p * c
    p = -0.00417768164 + p * c
    p = 0.246640727 + p * c
    p = 1.50140941 + p * c
    t = lib.sqrt(w) - 3.0
    q = -0.000200214257
    q = 0.000100950558 + q * t
    q = 0.00134934322 + q * t
    q = -0.00367342844 + q * t
    q = 0.00573950773 + q * t
    q = -0.0076224613 + q * t
    q = 0.00943887047 + q * t
    q = 1.00167406 + q * t
    q = 2.83297682 + q * t
    return tl.where(w < 5.0, p, q)


@triton.jit
def _erfinv_core(a, z):
    """t >= 0 with erf(t) = a, for 0 <= a <= 1 given with z = 1 - a (exact from the caller: the tail's
    precision lives in z). Start from Giles (the erfc asymptote past w = 25), then two Halley steps."""
    w = -lib.log(z * (2.0 - z))
    t = _giles(w) * a
    # Deep tail: erfc(t) ~ exp(-t^2) / (t sqrt(pi)) = z, solved for t by fixed-point iteration.
    big = -lib.log(z)
    s = lib.sqrt(big)
    s = lib.sqrt(tl.maximum(big - lib.log(s * _SQRT_PI), 0.0))
    s = lib.sqrt(tl.maximum(big - lib.log(s * _SQRT_PI), 0.0))
    t = tl.where(w >= 25.0, s, t)
    for _ in range(2):
        # f = erf(t) - a, computed as z - erfc(t) in the upper half where erf(t) is close to 1.
        f = tl.where(a <= 0.5, lib.erf(t) - a, z - lib.erfc(t))
        d = lib.exp(-t * t) * _TWO_OVER_SQRT_PI
        u = f / d
        t = tl.where(d > 0, t - u / (1.0 + t * u), t)
    return t


@triton.jit
def erfinv(y):
    """The inverse error function: +-inf at +-1, NaN outside [-1, 1]."""
    a = tl.abs(y)
    t = _erfinv_core(a, 1.0 - a)
    t = tl.where(a == 1.0, float("inf"), t)
    t = tl.where(a > 1.0, float("nan"), t)
    return tl.where(y < 0, -t, t)


@triton.jit
def ndtri(p):
    """The standard normal quantile: -sqrt(2) erfcinv(2p); -inf at 0, inf at 1, NaN outside [0, 1]."""
    lo = _erfinv_core(1.0 - 2.0 * p, 2.0 * p)  # p < 1/2: 2p exact, the tail's precision kept
    hi = _erfinv_core(2.0 * p - 1.0, 2.0 - 2.0 * p)  # p >= 1/2: 1 - p exact
    r = tl.where(p < 0.5, -lo, hi) * _SQRT2
    r = tl.where(p == 0.0, float("-inf"), r)
    r = tl.where(p == 1.0, float("inf"), r)
    return tl.where((p < 0.0) | (p > 1.0), float("nan"), r)


@triton.jit
def _exp_square(x):
    """exp(x * x) without the rounding of x * x amplified by the exponential: x = h + l with h on a
    1/256 grid, so that h * h is exact and exp's argument error stays tiny."""
    h = lib.floor(x * 256.0) / 256.0
    lo = x - h
    return lib.exp(h * h) * lib.exp((2.0 * h + lo) * lo)


@triton.jit
def _erfcx_positive(x):
    """erfcx for x >= 0: exp(x^2) erfc(x) below 8 (erfc still far from underflow in float32),
    the asymptotic series 1/(x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k above (20 terms: < 1e-18)."""
    xs = tl.maximum(x, 8.0)
    inv = 1.0 / (2.0 * xs * xs)
    term = tl.zeros_like(xs) + 1.0
    acc = term
    for k in range(1, 21):
        term = -term * (2 * k - 1) * inv
        acc += term
    asym = acc / (xs * _SQRT_PI)
    xd = tl.minimum(x, 8.0)
    direct = _exp_square(xd) * lib.erfc(xd)
    return tl.where(x < 8.0, direct, asym)


@triton.jit
def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x); erfcx(x) = 2 exp(x^2) - erfcx(-x) below 0."""
    pos = _erfcx_positive(tl.abs(x))
    neg = 2.0 * _exp_square(x) - pos
    r = tl.where(x < 0, neg, pos)
    r = tl.where(x == float("-inf"), float("inf"), r)
    return tl.where(x == float("inf"), 0.0, r)


@triton.jit
def log_ndtr(x):
    """log of the standard normal CDF, accurate in both tails (torch's split at -1)."""
    t = x * (1.0 / _SQRT2)
    upper = lib.log1p(-0.5 * lib.erfc(t))
    lower = lib.log(0.5 * erfcx(-tl.minimum(t, 0.0))) - t * t
    return tl.where(x < -1.0, lower, upper)


# ------------------------------------------------------------------ gamma family
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
    shift = tl.maximum(9.0 - lib.floor(q), 9.0)
    shift = tl.where(shift == shift, tl.minimum(shift, 1.0e6), 9.0)
    n = tl.max(shift.to(tl.int32), axis=0)
    acc = tl.zeros_like(s)
    for k in range(0, n):
        use = k < shift
        acc = tl.where(use, acc + lib.pow(q + k, -s), acc)
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
def _igamma(a, x, UPPER: tl.constexpr):
    """P(a, x) (UPPER False) or Q(a, x), with torch's values at the edges of the domain."""
    a_pos = tl.where(a > 0, a, 1.0)
    x_pos = tl.where(x > 0, x, 1.0)
    x_fin = tl.where(x == float("inf"), 1.0, x_pos)
    p, q = _igamma_parts(a_pos, x_fin)
    r = q if UPPER else p
    one = 0.0 if UPPER else 1.0
    zero = 1.0 if UPPER else 0.0
    r = tl.where(x == float("inf"), one, r)
    r = tl.where(x == 0, zero, r)
    r = tl.where(a == 0, tl.where(x > 0, one, float("nan")), r)
    r = tl.where((a == float("inf")) & (x < float("inf")), zero, r)
    return tl.where((a < 0) | (x < 0) | (a != a) | (x != x), float("nan"), r)


# ------------------------------------------------------------------ modified Bessel functions
@triton.jit
def _bessel_i(x, ORDER: tl.constexpr, SCALED: tl.constexpr):
    """I0 / I1 of |x| (the caller restores I1's sign), times exp(-|x|) when SCALED.

    Below 30 the power series (x/2)^n sum (x^2/4)^k / (k! (k+n)!) (all terms positive: no cancellation;
    64 terms reach 1e-17 at 30). Above, the Hankel series e^x / sqrt(2 pi x) sum_k (-1)^k a_k / x^k with
    a_k = prod_j (4 n^2 - (2j-1)^2) / (k! 8^k) (30 terms: < 1e-17 past 30)."""
    ax = tl.abs(x)
    xs = tl.minimum(ax, 30.0)
    q = 0.25 * xs * xs
    term = tl.zeros_like(xs) + 1.0
    if ORDER == 1:
        term = 0.5 * xs
    total = term
    for k in range(1, 64):
        term = term * q / (k * (k + ORDER))
        total = total + term
    if SCALED:
        total = total * lib.exp(-xs)
    xl = tl.maximum(ax, 30.0)
    mu = 4.0 * ORDER * ORDER
    t = tl.zeros_like(xl) + 1.0
    big = t
    for k in range(1, 31):
        t = -t * (mu - (2 * k - 1) * (2 * k - 1)) / (k * 8.0 * xl)
        big = big + t
    big = big / lib.sqrt(xl) * _INV_SQRT_2PI
    if not SCALED:
        # e^x / sqrt(x) in two halves: e^x alone overflows float32 / float64 before the product does
        half = lib.exp(0.5 * xl)
        big = big * half * half
    return tl.where(ax < 30.0, total, big)


@triton.jit
def bessel_i(x, ORDER: tl.constexpr, SCALED: tl.constexpr):
    """I0, I1 (odd: the sign of x) and their scaled forms; NaN stays NaN."""
    r = _bessel_i(x, ORDER, SCALED)
    if ORDER == 1:
        r = tl.where(x < 0, -r, r)
    return tl.where(x != x, x, r)


# ------------------------------------------------------------------ bits and integers
@triton.jit
def signbit(x):
    """Whether the sign bit is set (true for -0.0 and negative NaN, as torch)."""
    if x.dtype == tl.float64:
        return x.to(tl.int64, bitcast=True) < 0
    elif x.dtype == tl.float32:
        return x.to(tl.int32, bitcast=True) < 0
    else:
        return x < 0


@triton.jit
def nextafter(a, b):
    """The next representable value after a in the direction of b (float32 / float64 only)."""
    if a.dtype == tl.float64:
        ia = a.to(tl.int64, bitcast=True)
        tiny = tl.full(ia.shape, 1, tl.int64).to(tl.float64, bitcast=True)
    else:
        ia = a.to(tl.int32, bitcast=True)
        tiny = tl.full(ia.shape, 1, tl.int32).to(tl.float32, bitcast=True)
    away = (b > a) == (a > 0)  # a step away from zero raises the magnitude bits
    step = tl.where(away, ia + 1, ia - 1).to(a.dtype, bitcast=True)
    r = tl.where(a == 0, tl.where(b > 0, tiny, -tiny), step)
    r = tl.where(a == b, b, r)
    return tl.where((a != a) | (b != b), a + b, r)


@triton.jit
def gcd(a, b):
    """The non-negative greatest common divisor (Euclid; 93 steps cover every int64 pair)."""
    a = tl.abs(a)
    b = tl.abs(b)
    for _ in range(93):
        nz = b != 0
        r = a % tl.where(nz, b, 1)
        a = tl.where(nz, b, a)
        b = tl.where(nz, r, b)
    return a


@triton.jit
def lcm(a, b):
    """|a / gcd(a, b) * b|, 0 when either is 0."""
    g = gcd(a, b)
    r = tl.abs(a // tl.where(g == 0, 1, g) * b)
    return tl.where(g == 0, 0, r)


# ------------------------------------------------------------------ the elementwise ops
@triton.jit
def special_unary(x, OP: tl.constexpr):
    """The unary ops of this module by name (``x`` is in the compute dtype)."""
    if OP == "erfinv":
        return erfinv(x)
    elif OP == "erfcx":
        return erfcx(x)
    elif OP == "ndtri":
        return ndtri(x)
    elif OP == "log_ndtr":
        return log_ndtr(x)
    elif OP == "digamma":
        return digamma(x)
    elif OP == "i0":
        return bessel_i(x, 0, False)
    elif OP == "i0e":
        return bessel_i(x, 0, True)
    elif OP == "i1":
        return bessel_i(x, 1, False)
    elif OP == "i1e":
        return bessel_i(x, 1, True)
    elif OP == "signbit":
        return signbit(x)
    elif OP == "bessel_j0":
        return special_bessel.bessel_jy(x, "j0").to(x.dtype)
    elif OP == "bessel_j1":
        return special_bessel.bessel_jy(x, "j1").to(x.dtype)
    elif OP == "bessel_y0":
        return special_bessel.bessel_jy(x, "y0").to(x.dtype)
    elif OP == "bessel_y1":
        return special_bessel.bessel_jy(x, "y1").to(x.dtype)
    elif OP == "modified_bessel_k0":
        return special_bessel.bessel_k(x, 0, False).to(x.dtype)
    elif OP == "modified_bessel_k1":
        return special_bessel.bessel_k(x, 1, False).to(x.dtype)
    elif OP == "scaled_modified_bessel_k0":
        return special_bessel.bessel_k(x, 0, True).to(x.dtype)
    elif OP == "scaled_modified_bessel_k1":
        return special_bessel.bessel_k(x, 1, True).to(x.dtype)
    elif OP == "airy_ai":
        return special_bessel.airy_ai(x).to(x.dtype)
    else:
        tl.static_assert(False, "unknown unary op")


@triton.jit
def special_binary(a, b, OP: tl.constexpr):
    """The binary ops of this module by name (``a`` and ``b`` are in the compute dtype)."""
    if OP == "zeta":
        return zeta(a, b)
    elif OP == "igamma":
        return _igamma(a, b, False)
    elif OP == "igammac":
        return _igamma(a, b, True)
    elif OP == "nextafter":
        return nextafter(a, b)
    elif OP == "gcd":
        return gcd(a, b)
    elif OP == "lcm":
        return lcm(a, b)
    else:
        tl.static_assert(False, "unknown binary op")
