"""Special functions as Triton device helpers, and the elementwise ops that run them.

Each helper works in the dtype it is given (float32 for 16/32-bit inputs, float64 for float64: the
elementwise launcher picks it), so one implementation serves both precisions; where a closed form
is only approximate, a Newton/Halley step on an accurate libdevice function finishes the job.

- ``erfinv`` / ``ndtri``: Giles' single-precision approximation (or, deep in the tail, the erfc
  asymptote solved by fixed-point iteration) as the start, then two Halley steps on erf / erfc;
- ``erfcx``: exp(x^2) erfc(x) with exp(x^2) split so that no rounding of x^2 is amplified, and the
  asymptotic series past x = 8;
- the gamma family (digamma, zeta, igamma / igammac): special_gamma.py;
- ``i0`` / ``i1`` (and the exponentially scaled forms): the power series below 30, the Hankel
  asymptotic series above;
- ``nextafter``, ``signbit``, ``gcd``, ``lcm``: on the bits / integers;
- the Bessel functions J / Y / K and Airy's Ai: special_bessel.py.
"""

from __future__ import annotations

import triton
import triton.language as tl

from . import special_bessel, special_gamma
from .mathlib import lib
from .special_clamp import at_least, at_most

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
    s = lib.sqrt(at_least(big - lib.log(s * _SQRT_PI), 0.0))
    s = lib.sqrt(at_least(big - lib.log(s * _SQRT_PI), 0.0))
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
    xs = at_least(x, 8.0)
    inv = 1.0 / (2.0 * xs * xs)
    term = tl.zeros_like(xs) + 1.0
    acc = term
    for k in range(1, 21):
        term = -term * (2 * k - 1) * inv
        acc += term
    asym = acc / (xs * _SQRT_PI)
    xd = at_most(x, 8.0)
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
    lower = lib.log(0.5 * erfcx(-at_most(t, 0.0))) - t * t
    return tl.where(x < -1.0, lower, upper)


# ------------------------------------------------------------------ modified Bessel functions
@triton.jit
def _bessel_i(x, ORDER: tl.constexpr, SCALED: tl.constexpr):
    """I0 / I1 of |x| (the caller restores I1's sign), times exp(-|x|) when SCALED.

    Below 30 the power series (x/2)^n sum (x^2/4)^k / (k! (k+n)!) (all terms positive: no cancellation;
    64 terms reach 1e-17 at 30). Above, the Hankel series e^x / sqrt(2 pi x) sum_k (-1)^k a_k / x^k with
    a_k = prod_j (4 n^2 - (2j-1)^2) / (k! 8^k) (30 terms: < 1e-17 past 30)."""
    ax = tl.abs(x)
    xs = at_most(ax, 30.0)
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
    xl = at_least(ax, 30.0)
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
    """The unary ops of this module by name (``x`` is in the compute dtype); a NaN input gives NaN, as torch,
    whichever range split the method took for it (the GPU's min / max pick the bound for NaN)."""
    r = _unary_value(x, OP)
    if OP == "signbit":
        return r
    else:
        return tl.where(x != x, x, r)


@triton.jit
def _unary_value(x, OP: tl.constexpr):
    """special_unary's value before its NaN rule."""
    if OP == "erfinv":
        return erfinv(x)
    elif OP == "erfcx":
        return erfcx(x)
    elif OP == "ndtri":
        return ndtri(x)
    elif OP == "log_ndtr":
        return log_ndtr(x)
    elif OP == "digamma":
        return special_gamma.digamma(x)
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
        return special_gamma.zeta(a, b)
    elif OP == "igamma":
        return special_gamma.igamma(a, b, False)
    elif OP == "igammac":
        return special_gamma.igamma(a, b, True)
    elif OP == "nextafter":
        return nextafter(a, b)
    elif OP == "gcd":
        return gcd(a, b)
    elif OP == "lcm":
        return lcm(a, b)
    else:
        tl.static_assert(False, "unknown binary op")
