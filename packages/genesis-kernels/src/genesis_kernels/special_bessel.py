"""Bessel functions of integer order 0 and 1 (J, Y, K and scaled K) and the Airy function Ai, as Triton
device helpers for special_math's elementwise ops. All of them compute in float64 whatever the input
(their series cancel too much for float32 arithmetic) and the caller casts the result back.

- J0, J1, Y0, Y1: the power series below 5; from 5 to 25 Miller's backward recurrence normalised by
  J0 + 2 (J2 + J4 + ...) = 1, with Y0 from Neumann's series sum (-1)^k J_2k / k and Y1 = -Y0' from its
  derivative; from 25 Hankel's asymptotic expansion (24 terms);
- K0, K1 (and K e^x): the power series up to 2; above, K_nu(x) = int_0^inf e^(-x cosh t) cosh(nu t) dt by the
  trapezoidal rule, which converges geometrically for this even analytic integrand (32 nodes over the
  range where the integrand matters, which scales as 1/sqrt(x));
- Ai: the Maclaurin series on [-8, 2] (its cancellation costs 2e-12 absolute at -8); above, Ai(x) =
  sqrt(x/3)/pi K_1/3(2/3 x^3/2) (the same quadrature); below, the asymptotic expansion of Ai(-x).
"""

from __future__ import annotations

import triton
import triton.language as tl

from .mathlib import lib
from .special_clamp import at_least, at_most


# ------------------------------------------------------------------ J and Y
@triton.jit
def _jy_series(x):
    """(J0, J1, Y0, Y1) by their power series: q = x^2/4, J0 = sum (-q)^k / k!^2, J1 = x/2 sum (-q)^k / (k! (k+1)!),
    Y0 = 2/pi (log(x/2) + gamma) J0 + 2/pi sum (-1)^(k+1) H_k q^k / k!^2,
    Y1 = 2/pi log(x/2) J1 - 2/(pi x) - x/(2 pi) sum (psi(k+1) + psi(k+2)) (-q)^k / (k! (k+1)!)."""
    q = 0.25 * x * x
    t0 = tl.zeros_like(x) + 1.0  # (-q)^k / k!^2
    t1 = tl.zeros_like(x) + 1.0  # (-q)^k / (k! (k+1)!)
    j0 = t0
    j1 = t1
    harmonic = tl.zeros_like(x)  # H_k
    one = harmonic + 1.0
    y0s = tl.zeros_like(x)
    y1s = t1 * (1.0 - 2.0 * 0.5772156649015329)  # k = 0: psi(1) + psi(2) = 1 - 2 gamma
    for k in range(1, 40):
        t0 = -t0 * q / (k * k)
        t1 = -t1 * q / (k * (k + 1))
        j0 += t0
        j1 += t1
        harmonic += one / k  # (a plain 1.0 / k would round to float32)
        y0s -= harmonic * t0
        y1s += (2.0 * harmonic + one / (k + 1) - 2.0 * 0.5772156649015329) * t1
    j1 = j1 * 0.5 * x
    log_half = lib.log(0.5 * x)
    y0 = (log_half + 0.5772156649015329) * j0 * 0.6366197723675814 + y0s * 0.6366197723675814
    y1 = log_half * j1 * 0.6366197723675814 - 0.6366197723675814 / x - y1s * x * (0.5 * 0.3183098861837907)
    return j0, j1, y0, y1


@triton.jit
def _jy_miller(x):
    """(J0, J1, Y0, Y1) for 5 <= x < 25 (x here may be anything positive): J_k from k = 64 down by
    J_(k-1) = 2k/x J_k - J_(k+1), normalised by J0 + 2 sum J_2k; Y0 by Neumann's series and Y1 = -Y0'
    with J_2k' = (J_(2k-1) - J_(2k+1)) / 2 (the odd J_k's coefficient gathered as the recurrence passes)."""
    upper = tl.zeros_like(x)  # J_(k+1)
    cur = tl.zeros_like(x) + 1.0e-30  # J_k, unnormalised
    norm = tl.zeros_like(x)
    neumann = tl.zeros_like(x)  # sum_m (-1)^m J_2m / m
    odd = tl.zeros_like(x)  # sum over odd k of c_k J_k (the derivative's series)
    for i in range(63):
        k = 64 - i  # cur is J_k, k = 64 .. 2
        m = k // 2
        sign = 1.0 - 2.0 * (m % 2)  # (-1)^m
        if k % 2 == 0:
            norm += 2.0 * cur
            neumann += sign * cur / m
        else:
            # k = 2m + 1: -(-1)^m / (2m) from Neumann term m and (-1)^(m+1) / (2m + 2) from term m + 1
            odd -= sign * (cur / (2 * m) + cur / (2 * m + 2))  # cur / int: float64 (a 1.0 / int would be float32)
        lower = cur * (2.0 * k) / x - upper
        upper = cur
        cur = lower
    j1 = cur  # k = 1: only Neumann term 1 has it, with -1/2
    odd += -0.5 * cur
    cur, upper = cur * 2.0 / x - upper, cur
    norm += cur  # cur is J_0 now
    j0 = cur / norm
    j1 = j1 / norm
    log_term = lib.log(0.5 * x) + 0.5772156649015329
    y0 = 0.6366197723675814 * log_term * j0 - 2.0 * 0.6366197723675814 * neumann / norm
    dy0 = 0.6366197723675814 * (j0 / x - log_term * j1) - 2.0 * 0.6366197723675814 * odd / norm
    return j0, j1, y0, -dy0


@triton.jit
def _jy_hankel(x):
    """(J0, J1, Y0, Y1) for x >= 25: sqrt(2/(pi x)) (P cos chi -+ Q sin chi) with chi = x - (2 nu + 1) pi/4
    expanded exactly (no rounding of x - pi/4), P and Q the even / odd terms of sum a_k(nu) / x^k."""
    p0 = tl.zeros_like(x) + 1.0
    q0 = tl.zeros_like(x)
    p1 = tl.zeros_like(x) + 1.0
    q1 = tl.zeros_like(x)
    t0 = tl.zeros_like(x) + 1.0
    t1 = tl.zeros_like(x) + 1.0
    for k in range(1, 25):
        odd2 = (2 * k - 1) * (2 * k - 1)
        t0 = t0 * (0.0 - odd2) / (8.0 * k * x)
        t1 = t1 * (4.0 - odd2) / (8.0 * k * x)
        sign = 1.0 - 2.0 * ((k // 2) % 2)  # (-1)^floor(k/2)
        if k % 2 == 0:
            p0 += sign * t0
            p1 += sign * t1
        else:
            q0 += sign * t0
            q1 += sign * t1
    s = lib.sin(x)
    c = lib.cos(x)
    amp = lib.sqrt(0.6366197723675814 / x)
    cos0, sin0 = (c + s) * 0.7071067811865476, (s - c) * 0.7071067811865476  # chi = x - pi/4
    cos1, sin1 = (s - c) * 0.7071067811865476, -(s + c) * 0.7071067811865476  # chi = x - 3 pi/4
    j0 = amp * (p0 * cos0 - q0 * sin0)
    j1 = amp * (p1 * cos1 - q1 * sin1)
    y0 = amp * (p0 * sin0 + q0 * cos0)
    y1 = amp * (p1 * sin1 + q1 * cos1)
    return j0, j1, y0, y1


@triton.jit
def bessel_jy(x_in, KIND: tl.constexpr):
    """J0, J1, Y0 or Y1 (KIND "j0", "j1", "y0", "y1") of x_in, in float64."""
    x = x_in.to(tl.float64)
    ax = tl.abs(x)
    sj0, sj1, sy0, sy1 = _jy_series(at_most(ax, 5.0))
    mj0, mj1, my0, my1 = _jy_miller(at_most(at_least(ax, 5.0), 25.0))
    hj0, hj1, hy0, hy1 = _jy_hankel(at_least(ax, 25.0))
    small = ax < 5.0
    big = ax >= 25.0
    if KIND == "j0":
        r = tl.where(small, sj0, tl.where(big, hj0, mj0))
    elif KIND == "j1":
        r = tl.where(small, sj1, tl.where(big, hj1, mj1))
        r = tl.where(x < 0, -r, r)
    elif KIND == "y0":
        r = tl.where(small, sy0, tl.where(big, hy0, my0))
        r = tl.where(x == 0, float("-inf"), tl.where(x < 0, float("nan"), r))
    else:
        r = tl.where(small, sy1, tl.where(big, hy1, my1))
        r = tl.where(x == 0, float("-inf"), tl.where(x < 0, float("nan"), r))
    return tl.where(ax == float("inf"), float("nan"), r)  # NaN at +-inf (and for NaN), as torch


# ------------------------------------------------------------------ K and Ai
@triton.jit
def _k_quadrature(x, NU: tl.constexpr):
    """e^x K_nu(x) = int_0^inf e^(-x (cosh t - 1)) cosh(nu t) dt for x >= ~1.5, by the trapezoidal rule over
    [0, T], e^(-x (cosh T - 1)) = e^-45: 32 nodes of width T / 32 (half weight at t = 0)."""
    y = 45.0 / x
    top = lib.log1p(y + lib.sqrt(y * (2.0 + y)))  # acosh(1 + y), without 1 + y rounding to 1 for large x
    h = top / 32.0
    total = tl.zeros_like(x) + 0.5
    for j in range(1, 33):
        t = h * j
        sh = lib.sinh(t * 0.5)
        total += lib.exp(-x * (2.0 * sh * sh)) * lib.cosh(t * NU)  # cosh t - 1 = 2 sinh^2(t/2): no cancellation
    return total * h


@triton.jit
def _k_series(x):
    """(K0, K1) for 0 < x <= 2: K0 = -(log(x/2) + gamma) I0 + sum H_k q^k / k!^2,
    K1 = 1/x + log(x/2) I1 - x/4 sum (psi(k+1) + psi(k+2)) q^k / (k! (k+1)!), q = x^2/4."""
    q = 0.25 * x * x
    t0 = tl.zeros_like(x) + 1.0
    t1 = tl.zeros_like(x) + 1.0
    i0 = t0
    i1 = t1
    harmonic = tl.zeros_like(x)
    one = harmonic + 1.0
    k0s = tl.zeros_like(x)
    k1s = t1 * (1.0 - 2.0 * 0.5772156649015329)
    for k in range(1, 30):
        t0 = t0 * q / (k * k)
        t1 = t1 * q / (k * (k + 1))
        i0 += t0
        i1 += t1
        harmonic += one / k  # (a plain 1.0 / k would round to float32)
        k0s += harmonic * t0
        k1s += (2.0 * harmonic + one / (k + 1) - 2.0 * 0.5772156649015329) * t1
    log_half = lib.log(0.5 * x)
    k0 = -(log_half + 0.5772156649015329) * i0 + k0s
    k1 = 1.0 / x + log_half * i1 * 0.5 * x - 0.25 * x * k1s
    return k0, k1


@triton.jit
def bessel_k(x_in, ORDER: tl.constexpr, SCALED: tl.constexpr):
    """K0 / K1 of x_in (times e^x when SCALED) in float64: inf at 0, NaN below."""
    x = x_in.to(tl.float64)
    xs = at_most(at_least(x, 1.0e-300), 2.0)
    k0, k1 = _k_series(xs)
    small = k0 if ORDER == 0 else k1
    if SCALED:
        small = small * lib.exp(xs)
    xq = at_least(x, 2.0)
    big = _k_quadrature(xq, ORDER)
    if not SCALED:
        big = big * lib.exp(-xq)
    r = tl.where(x <= 2.0, small, big)
    r = tl.where(x == float("inf"), 0.0, r)
    r = tl.where(x == 0, float("inf"), r)
    return tl.where((x < 0) | (x != x), float("nan"), r)


@triton.jit
def _airy_maclaurin(x):
    """Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f = sum 3^k (1/3)_k x^3k / (3k)!, g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!."""
    x3 = x * x * x
    f = tl.zeros_like(x) + 1.0
    g = x
    tf = f
    tg = g
    for k in range(1, 40):
        tf = tf * x3 / ((3 * k - 1) * (3 * k))
        tg = tg * x3 / ((3 * k) * (3 * k + 1))
        f += tf
        g += tg
    return 0.3550280538878172 * f - 0.2588194037928068 * g


@triton.jit
def _airy_oscillating(x):
    """Ai(-x) for x >= 8: x^-1/4 / sqrt(pi) (sin(z + pi/4) P - cos(z + pi/4) Q), z = 2/3 x^3/2, P and Q the
    even / odd terms of sum (-1)^(k//2) u_k z^-k with u_k = (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k) u_(k-1)."""
    z = (2.0 / 3.0) * x * lib.sqrt(x)
    u = tl.zeros_like(x) + 1.0
    p = u
    q = tl.zeros_like(x)
    for k in range(1, 20):
        u = u * ((6 * k - 5) * (6 * k - 3) * (6 * k - 1)) / ((2 * k - 1) * 216.0 * k) / z
        sign = 1.0 - 2.0 * ((k // 2) % 2)
        if k % 2 == 0:
            p += sign * u
        else:
            q += sign * u
    s = lib.sin(z)
    c = lib.cos(z)
    sin_shift = (s + c) * 0.7071067811865476  # sin(z + pi/4)
    cos_shift = (c - s) * 0.7071067811865476  # cos(z + pi/4)
    return (sin_shift * p - cos_shift * q) / (lib.sqrt(lib.sqrt(x)) * 1.7724538509055160)


@triton.jit
def airy_ai(x_in):
    """The Airy function Ai, in float64."""
    x = x_in.to(tl.float64)
    mid = _airy_maclaurin(at_most(at_least(x, -8.0), 2.0))
    xr = at_least(x, 2.0)
    z = (2.0 / 3.0) * xr * lib.sqrt(xr)
    right = _k_quadrature(z, 1.0 / 3.0) * lib.exp(-z) * lib.sqrt(xr / 3.0) * 0.3183098861837907
    right = tl.where(z == float("inf"), 0.0, right)  # x past ~1e205: z overflows, Ai long underflowed
    left = _airy_oscillating(at_least(-x, 8.0))
    r = tl.where(x > 2.0, right, tl.where(x < -8.0, left, mid))
    return tl.where(tl.abs(x) == float("inf"), float("nan"), r)  # NaN at +-inf (and for NaN), as torch
