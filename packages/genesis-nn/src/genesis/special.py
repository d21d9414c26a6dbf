"""genesis.special: torch.special's functions, same names and signatures.

The kernels and derivatives are in genesis_autograd (functions/special.py, over genesis_kernels'
special_math.py); the spellings torch.special adds (expit, gammaln, psi, ndtr, entr, xlog1py, ...) are
compositions here; the orthogonal polynomials are in _special_polynomials.py; the Bessel / Airy functions
(no derivatives, as torch) come from genesis_autograd's functions/special_bessel.py.
"""

from __future__ import annotations

import math

from genesis_autograd import (
    DType,
    Tensor,
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    erfcx,
    i0e,
    i1,
    i1e,
    log_ndtr,
    modified_bessel_k0,
    modified_bessel_k1,
    ndtri,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
)
from genesis_autograd import (
    zeta as _zeta,
)

from ._special_polynomials import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from ._torch_special import xlogy

Number = int | float | bool

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]


def erf(input: Tensor) -> Tensor:
    """The error function."""
    return input.erf()


def erfc(input: Tensor) -> Tensor:
    """The complementary error function 1 - erf(x)."""
    return input.erfc()


def erfinv(input: Tensor) -> Tensor:
    """The inverse error function."""
    return input.erfinv()


def expit(input: Tensor) -> Tensor:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return input.sigmoid()


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)); with ``eps``, x clamped to [eps, 1 - eps] first."""
    return input.logit(eps)


def exp2(input: Tensor) -> Tensor:
    """2 ** x."""
    return input.exp2()


def expm1(input: Tensor) -> Tensor:
    """exp(x) - 1, accurate near 0."""
    return input.expm1()


def log1p(input: Tensor) -> Tensor:
    """log(1 + x), accurate near 0."""
    return input.log1p()


def gammaln(input: Tensor) -> Tensor:
    """log |Gamma(x)|."""
    return input.lgamma()


def digamma(input: Tensor) -> Tensor:
    """psi(x) = d/dx log Gamma(x)."""
    return input.digamma()


psi = digamma


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma."""
    return input.polygamma(n)


def multigammaln(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``."""
    return input.mvlgamma(p)


def gammainc(input: Tensor, other: Tensor) -> Tensor:
    """The regularised lower incomplete gamma function P(input, other)."""
    return input.igamma(other)


def gammaincc(input: Tensor, other: Tensor) -> Tensor:
    """The regularised upper incomplete gamma function Q(input, other)."""
    return input.igammac(other)


def zeta(input: Tensor | Number, other: Tensor | Number) -> Tensor:
    """The Hurwitz zeta function sum_k (k + other) ** -input (one of the two may be a number)."""
    return _zeta(input, other)


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0."""
    return input.i0()


def modified_bessel_i0(input: Tensor) -> Tensor:
    """I0, without a gradient (as torch's modified_bessel_i0)."""
    return input.detach().i0()


def modified_bessel_i1(input: Tensor) -> Tensor:
    """I1, without a gradient (as torch's modified_bessel_i1)."""
    return i1(input.detach())


def spherical_bessel_j0(input: Tensor) -> Tensor:
    """sin(x) / x, 1 at 0 (no gradient, as torch)."""
    x = input.detach()
    x = x if x.dtype.is_floating_point else x.float()
    safe = x.where(x != 0, 1.0)
    return (safe.sin() / safe).where(x != 0, 1.0)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF: erfc(-x / sqrt(2)) / 2."""
    x = input if input.dtype.is_floating_point else input.float()
    return (x * -math.sqrt(0.5)).erfc() * 0.5


def sinc(input: Tensor) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0."""
    return input.sinc()


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even, to ``decimals`` decimal places."""
    if decimals == 0:
        return input.round()
    scale = 10.0**decimals
    return (input * scale).round() / scale


def entr(input: Tensor) -> Tensor:
    """-x log(x) for x > 0, 0 at 0, -inf below 0 (NaN stays NaN)."""
    x = input if input.dtype.is_floating_point else input.float()
    safe = x.where(x > 0, 1.0)
    out = (-safe * safe.log()).where(x > 0, 0.0)
    return out.where(~(x < 0), -math.inf).where(~x.isnan(), x)


def xlog1py(input: Tensor | Number, other: Tensor | Number) -> Tensor:
    """input * log1p(other), 0 where input is 0 (unless other is NaN); either may be a number."""
    if not isinstance(input, Tensor):
        from ._torch_special import _as_tensor

        input = _as_tensor(input, other)  # type: ignore[arg-type]
    if not isinstance(other, Tensor):
        other = _float_like(other, input)
    return (input * other.log1p()).where((input != 0) | other.isnan(), 0.0)


def _float_like(value: Number, like: Tensor) -> Tensor:
    """A number as a 0-d tensor next to ``like``: float64 beside floating data, so it keeps its value."""
    from genesis_autograd import float64, tensor

    if isinstance(value, float) and like.dtype.is_floating_point:
        return tensor(value, dtype=float64, device=like.device)
    return tensor(value, device=like.device)


def softmax(input: Tensor, dim: int, *, dtype: DType | None = None) -> Tensor:
    """Softmax along ``dim`` (computed in ``dtype`` when given)."""
    return (input if dtype is None else input.to(dtype)).softmax(dim)


def log_softmax(input: Tensor, dim: int, *, dtype: DType | None = None) -> Tensor:
    """log(softmax) along ``dim``, computed stably (in ``dtype`` when given)."""
    return (input if dtype is None else input.to(dtype)).log_softmax(dim)


def logsumexp(input: Tensor, dim: int | tuple[int, ...], keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``dim``, computed stably."""
    return input.logsumexp(dim, keepdim)
