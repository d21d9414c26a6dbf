"""Special functions the distributions need, composed of genesis ops until genesis has them as ops.

Each helper uses genesis' own op (``genesis.lgamma``, ...) when it exists and falls back to a
composite otherwise. The composites work in float64 (the series and the Lanczos sum cancel in
float32) and return the input's dtype; gradients come from autograd through the composite, except
erfinv, whose derivative is attached in closed form.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import genesis
from genesis import Tensor

__all__ = ["atanh", "digamma", "erfinv", "lgamma", "log_beta", "xlogy"]

# Lanczos' approximation with g = 7 and 9 terms (Numerical Recipes' / Godfrey's coefficients): ~1e-15 relative.
_LANCZOS_G = 7.0
_LANCZOS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)


def _native(name: str) -> Callable[..., Tensor] | None:
    return getattr(genesis, name, None)


def _wide(x: Tensor) -> Tensor:
    return x if x.dtype == genesis.float64 else x.to(genesis.float64)


def _lgamma_right(x: Tensor) -> Tensor:
    """log Gamma(x) for x >= 0.5 by Lanczos' sum."""
    z = x - 1
    series = genesis.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (z + i)
    t = z + _LANCZOS_G + 0.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * t.log() - t + series.log()


def lgamma(x: Tensor) -> Tensor:
    """log |Gamma(x)|, elementwise (torch.lgamma)."""
    native = _native("lgamma")
    if native is not None:
        return native(x)
    w = _wide(x)
    left = w < 0.5
    right = _lgamma_right(genesis.where(left, 1 - w, w))
    # The reflection Gamma(x) Gamma(1 - x) = pi / sin(pi x); its inputs are made harmless where unused.
    s = genesis.where(left, w, genesis.full_like(w, 0.25))
    reflected = math.log(math.pi) - (s * math.pi).sin().abs().log() - right
    return genesis.where(left, reflected, right).to(x.dtype)


def _digamma_right(x: Tensor) -> Tensor:
    """psi(x) for x > 0: the recurrence up to x + 10, then the asymptotic series (error < 1e-14)."""
    shift = genesis.zeros_like(x)
    for k in range(10):
        shift = shift + 1 / (x + k)
    y = x + 10
    inv2 = 1 / (y * y)
    tail = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 * (1 / 132)))))
    return y.log() - 0.5 / y - tail - shift


def digamma(x: Tensor) -> Tensor:
    """The digamma function psi(x) = d/dx log Gamma(x), elementwise (torch.digamma)."""
    native = _native("digamma")
    if native is not None:
        return native(x)
    w = _wide(x)
    left = w <= 0
    right = _digamma_right(genesis.where(left, 1 - w, w))
    s = genesis.where(left, w, genesis.full_like(w, 0.25))
    reflected = right - math.pi / (s * math.pi).tan()
    return genesis.where(left, reflected, right).to(x.dtype)


def log_beta(a: Tensor, b: Tensor) -> Tensor:
    """log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b)."""
    return lgamma(a) + lgamma(b) - lgamma(a + b)


# Giles' single-precision approximation of erfinv ("Approximating the erfinv function", 2010) as a start.
_GILES_CENTRAL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_GILES_TAIL = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)


def _horner(coefficients: tuple[float, ...], w: Tensor) -> Tensor:
    p = genesis.full_like(w, coefficients[0])
    for c in coefficients[1:]:
        p = p * w + c
    return p


def _erfinv_value(x: Tensor) -> Tensor:
    """erfinv in float64 without a graph: Giles' start, then Newton steps on erf."""
    w = -((1 - x) * (1 + x)).clamp(min=1e-300).log()
    central = _horner(_GILES_CENTRAL, w - 2.5)
    tail = _horner(_GILES_TAIL, w.clamp(min=0).sqrt() - 3)
    y = genesis.where(w < 5, central, tail) * x
    for _ in range(3):
        step = (genesis.erf(y) - x) / (2 / math.sqrt(math.pi) * (-y * y).exp())
        y = y - genesis.where(step.isfinite(), step, genesis.zeros_like(step))
    edge = x.abs() == 1
    return genesis.where(edge, x * math.inf, genesis.where(x.abs() > 1, x * math.nan, y))


def erfinv(x: Tensor) -> Tensor:
    """The inverse error function, elementwise (torch.erfinv); its derivative is sqrt(pi)/2 exp(y^2)."""
    native = _native("erfinv")
    if native is not None:
        return native(x)
    with genesis.no_grad():
        y = _erfinv_value(_wide(x.detach()))
    if not x.requires_grad:
        return y.to(x.dtype)
    slope = (y * y).exp() * (math.sqrt(math.pi) / 2)
    return (y + (_wide(x) - _wide(x.detach())) * slope).to(x.dtype)


def xlogy(x: Tensor, y: Tensor) -> Tensor:
    """x * log(y), 0 where x == 0 (torch.special.xlogy; NaN stays NaN)."""
    native = _native("xlogy")
    if native is not None:
        return native(x, y)
    zero = x == 0
    safe_y = genesis.where(zero & ~y.isnan(), genesis.ones_like(y), y)
    return x * safe_y.log()


def atanh(x: Tensor) -> Tensor:
    """The inverse hyperbolic tangent, elementwise: 0.5 * (log1p(x) - log1p(-x))."""
    native = _native("atanh")
    if native is not None:
        return native(x)
    return 0.5 * (x.log1p() - (-x).log1p())
