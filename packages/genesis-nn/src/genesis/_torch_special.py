"""torch.X special functions and the everyday math around them: erfc, erfinv, lgamma, digamma, polygamma,
mvlgamma, i0, sinc, xlogy, logit, nan_to_num, signbit, copysign, heaviside, float_power, frexp, ldexp, gcd,
lcm, nextafter, logaddexp2, igamma, igammac (and torch's top-level in-place forms of some).

Each forwards to its Tensor method (genesis_autograd/functions/special.py), where the kernels, the
derivatives and torch's checks live; torch.special's spellings are in genesis.special.
"""

from __future__ import annotations

from typing import Any

from genesis_autograd import Tensor, float64, tensor

Number = int | float | bool

__all__ = [
    "erfc",
    "erfc_",
    "erfinv",
    "lgamma",
    "digamma",
    "polygamma",
    "mvlgamma",
    "i0",
    "i0_",
    "sinc",
    "sinc_",
    "xlogy",
    "xlogy_",
    "logit",
    "logit_",
    "nan_to_num",
    "nan_to_num_",
    "signbit",
    "copysign",
    "heaviside",
    "float_power",
    "frexp",
    "ldexp",
    "ldexp_",
    "gcd",
    "gcd_",
    "lcm",
    "lcm_",
    "nextafter",
    "logaddexp2",
    "igamma",
    "igammac",
]


def _as_tensor(x: Any, like: Tensor) -> Tensor:
    """A Python number as a 0-d tensor on ``like``'s device (xlogy's first argument may be one)."""
    if isinstance(x, Tensor):
        return x
    return tensor(x, device=like.device)


def erfc(input: Tensor) -> Tensor:
    """The complementary error function 1 - erf(x)."""
    return input.erfc()


def erfc_(input: Tensor) -> Tensor:
    """erfc in place."""
    return input.erfc_()


def erfinv(input: Tensor) -> Tensor:
    """The inverse error function (+-inf at +-1, NaN outside [-1, 1])."""
    return input.erfinv()


def lgamma(input: Tensor) -> Tensor:
    """log |Gamma(x)|."""
    return input.lgamma()


def digamma(input: Tensor) -> Tensor:
    """psi(x) = d/dx log Gamma(x) (-inf at 0, NaN at the negative integers)."""
    return input.digamma()


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma."""
    return input.polygamma(n)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``."""
    return input.mvlgamma(p)


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0."""
    return input.i0()


def i0_(input: Tensor) -> Tensor:
    """i0 in place."""
    return input.i0_()


def sinc(input: Tensor) -> Tensor:
    """The normalised sinc sin(pi x) / (pi x), 1 at 0."""
    return input.sinc()


def sinc_(input: Tensor) -> Tensor:
    """sinc in place."""
    return input.sinc_()


def xlogy(input: Tensor | Number, other: Tensor | Number) -> Tensor:
    """input * log(other), 0 where input is 0 (unless other is NaN); either may be a number."""
    if not isinstance(input, Tensor):
        input = _as_tensor(input, other)  # type: ignore[arg-type]
    return input.xlogy(other)


def xlogy_(input: Tensor, other: Tensor | Number) -> Tensor:
    """xlogy in place."""
    return input.xlogy_(other)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)); with ``eps``, x clamped to [eps, 1 - eps] first."""
    return input.logit(eps)


def logit_(input: Tensor, eps: float | None = None) -> Tensor:
    """logit in place."""
    return input.logit_(eps)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """NaN, +inf, -inf replaced (by default by 0 and the dtype's largest / lowest finite values)."""
    return input.nan_to_num(nan, posinf, neginf)


def nan_to_num_(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """nan_to_num in place."""
    return input.nan_to_num_(nan, posinf, neginf)


def signbit(input: Tensor) -> Tensor:
    """Whether each element's sign bit is set (True for -0.0)."""
    return input.signbit()


def copysign(input: Tensor, other: Tensor | Number) -> Tensor:
    """|input| with the sign of ``other``."""
    return input.copysign(other)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The Heaviside step: 0 below 0, ``values`` at 0, 1 above."""
    return input.heaviside(values)


def float_power(input: Tensor | Number, exponent: Tensor | Number) -> Tensor:
    """input ** exponent in float64."""
    if not isinstance(input, Tensor):
        return tensor(input, dtype=float64, device=exponent.device).float_power(exponent)  # type: ignore[union-attr]
    return input.float_power(exponent)


def frexp(input: Tensor) -> Any:
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1."""
    return input.frexp()


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """input * 2 ** other."""
    return input.ldexp(other)


def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """ldexp in place."""
    return input.ldexp_(other)


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor of each pair of integers."""
    return input.gcd(other)


def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """gcd in place."""
    return input.gcd_(other)


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple of each pair of integers."""
    return input.lcm(other)


def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """lcm in place."""
    return input.lcm_(other)


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after input towards other."""
    return input.nextafter(other)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """log2(2 ** input + 2 ** other)."""
    return input.logaddexp2(other)


def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularised lower incomplete gamma function P(input, other)."""
    return input.igamma(other)


def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularised upper incomplete gamma function Q(input, other)."""
    return input.igammac(other)
