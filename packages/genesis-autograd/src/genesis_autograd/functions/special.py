"""Special functions: erfc / erfinv / erfcx, the gamma family (lgamma, digamma, polygamma, mvlgamma,
igamma / igammac, zeta), the modified Bessel functions I0 / I1 (and scaled), the normal distribution's
ndtri / log_ndtr, and the everyday math around them (sinc, xlogy, logit, nan_to_num, copysign, heaviside,
float_power, frexp, ldexp, gcd, lcm, nextafter, logaddexp2, signbit); and SpecialMixin, their Tensor methods.

The functions with a kernel of their own (genesis_kernels/special_math.py) are Functions here, with
torch's derivatives (derivatives.yaml); where torch has none (zeta, igamma's first input), backward raises
its NotImplementedError. The rest are compositions of differentiable ops, as torch composes them.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import TYPE_CHECKING, Any

from genesis_ndarray import float32, float64, full, get_default_dtype, int32

from ..tensor_base import Scalar, TensorBase
from ._util import Primitive, is_tensor, meta, reduce_to, wrap
from .elementwise import TWO_OVER_SQRT_PI, Unary, _torch_dtype_name, _unary, _unary_method

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor

SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2
SQRT_2PI = math.sqrt(2 * math.pi)
LN2 = math.log(2.0)
# The largest finite value of each floating dtype: nan_to_num's default for +-inf.
_FLOAT_MAX = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38, "float16": 65504.0}
_FLOAT_MAX["bfloat16"] = 3.3895313892515355e38

Frexp = namedtuple("Frexp", ["mantissa", "exponent"])
Frexp.__doc__ = "(mantissa, exponent) of frexp, like torch.return_types.frexp."


# ------------------------------------------------------------------ unary: kernels with derivative rules
def _nonzero(x):
    """x with its zeros replaced by 1: the other branch of a ``where`` at 0 then stays finite (no NaN gradient)."""
    return x.where(x != 0, 1.0)


Erfc: type[Unary] = _unary("Erfc", "erfc", "x", lambda g, x, y: g * ((-(x * x)).exp() * -TWO_OVER_SQRT_PI))
Erfinv: type[Unary] = _unary("Erfinv", "erfinv", "y", lambda g, x, y: g * ((y * y).exp() * SQRT_PI_OVER_2))
Erfcx: type[Unary] = _unary("Erfcx", "erfcx", "x", lambda g, x, y: g * (x * Erfcx.apply(x) * 2 - TWO_OVER_SQRT_PI))
Lgamma: type[Unary] = _unary("Lgamma", "lgamma", "x", lambda g, x, y: g * Digamma.apply(x))
Digamma: type[Unary] = _unary("Digamma", "digamma", "x", lambda g, x, y: g * Polygamma.apply(x, 1))
Ndtri: type[Unary] = _unary("Ndtri", "ndtri", "y", lambda g, x, y: g * ((y * y * 0.5).exp() * SQRT_2PI))
LogNdtr: type[Unary] = _unary(
    "LogNdtr", "log_ndtr", "x", lambda g, x, y: g * ((x * x * -0.5 - LogNdtr.apply(x)).exp() * (1 / SQRT_2PI))
)
I0: type[Unary] = _unary("I0", "i0", "x", lambda g, x, y: g * I1.apply(x))
I0e: type[Unary] = _unary("I0e", "i0e", "x", lambda g, x, y: g * (I1e.apply(x) - x.sign() * I0e.apply(x)))
# d/dx I1 = I0 - I1 / x, 1/2 at 0; d/dx I1e = I0e - I1e (sign(x) + 1/x), 1/2 at 0 (torch's formulas)
I1: type[Unary] = _unary(
    "I1", "i1", "x", lambda g, x, y: g * (I0.apply(x) - I1.apply(x) / _nonzero(x)).where(x != 0, 0.5)
)
I1e: type[Unary] = _unary(
    "I1e",
    "i1e",
    "x",
    lambda g, x, y: g * (I0e.apply(x) - I1e.apply(x) * (x.sign() + 1 / _nonzero(x))).where(x != 0, 0.5),
)


class Polygamma(Primitive):
    """psi^(n)(x): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x), computed in float32 at least."""

    @staticmethod
    def forward(ctx, x, n):
        if ctx.records:
            ctx.save_for_backward(x)
            ctx.n = n
        if n == 0:
            return x.data.unary("digamma")
        nd = x.data
        out_dtype = nd.dtype if nd.dtype.is_floating_point else get_default_dtype()
        work = float64 if out_dtype is float64 else float32
        s = full((), float(n + 1), dtype=work, device=nd.device)
        z = s.binary("zeta", nd.astype(work) if nd.dtype is not work else nd)
        r = z * float((-1) ** (n + 1) * math.factorial(n))
        return r if work is out_dtype else r.astype(out_dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * Polygamma.apply(x, ctx.n + 1), None


# ------------------------------------------------------------------ binary kernels
class _Binary(Primitive):
    """out = a <op> b over broadcast tensors (Python numbers are made 0-d tensors first, by the caller)."""

    op = ""

    @classmethod
    def forward(cls, ctx, a, b):
        if ctx.records:
            ctx.save_for_backward(a, b)
            ctx.metas = (meta(a), meta(b))
        return a.data.binary(cls.op, b.data)


class Zeta(_Binary):
    op = "zeta"

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")


class Igamma(_Binary):
    """The regularised lower incomplete gamma function P(a, x); ``upper`` Q = 1 - P in Igammac."""

    op = "igamma"
    sign = 1.0

    @classmethod
    def backward(cls, ctx, g):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{cls.op}: input' is not implemented.")
        a, x = ctx.saved_tensors
        # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
        density = ((a - 1) * x.log() - x - Lgamma.apply(a)).exp()
        return None, reduce_to(g * density * cls.sign, ctx.metas[1])


class Igammac(Igamma):
    op = "igammac"
    sign = -1.0


class Nextafter(_Binary):
    op = "nextafter"

    @staticmethod
    def backward(ctx, g):
        ma, mb = ctx.metas
        return reduce_to(g, ma), reduce_to(g * 0, mb)


class Heaviside(Primitive):
    """0 below 0, ``values`` at 0, 1 above; torch records it but has no derivative."""

    @staticmethod
    def forward(ctx, x, values):
        nd = x.data
        return (nd > 0).astype(nd.dtype).where(nd != 0, values.data)

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("derivative for aten::heaviside is not implemented")


# ------------------------------------------------------------------ Tensor methods
def _tensor_pair(self, other: Any) -> tuple[Any, Any]:
    """(self, other) with a Python number made a 0-d tensor on self's device: float64 next to a floating
    tensor, so that it keeps its value (a 0-d tensor does not widen the result, as a Python number does not)."""
    if is_tensor(other):
        return self, other
    if isinstance(other, float) and self.dtype.is_floating_point:
        return self, wrap(self, full((), other, dtype=float64, device=self.device))
    return self, wrap(self, full((), other, device=self.device))


def _require_tensor(op: str, other: Any) -> None:
    """torch's TypeError for a number where its signature takes only a tensor."""
    if not is_tensor(other):
        raise TypeError(f"{op}(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")


def _refuse_dtype(op: str, t: Any, floating: bool) -> None:
    """torch's NotImplementedError for an op with no kernel for this dtype category."""
    if t.dtype.is_floating_point != floating:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{_torch_dtype_name(t.dtype)}'")


class SpecialMixin(TensorBase):
    __slots__ = ()

    erfc = _unary_method(Erfc, "The complementary error function 1 - erf(x) of each element.")
    erfinv = _unary_method(Erfinv, "The inverse error function of each element (+-inf at +-1, NaN outside).")
    lgamma = _unary_method(Lgamma, "log |Gamma(x)| of each element.")
    digamma = _unary_method(Digamma, "The logarithmic derivative of Gamma, psi(x), of each element.")
    i0 = _unary_method(I0, "The modified Bessel function of the first kind of order 0 of each element.")

    def erfc_(self: Any) -> Tensor:
        return self._math_inplace("erfc")

    def erfinv_(self: Any) -> Tensor:
        return self._math_inplace("erfinv")

    def lgamma_(self: Any) -> Tensor:
        return self._math_inplace("lgamma")

    def digamma_(self: Any) -> Tensor:
        return self._math_inplace("digamma")

    def i0_(self: Any) -> Tensor:
        return self._math_inplace("i0")

    def polygamma(self: Any, n: int) -> Tensor:
        """The n-th derivative of digamma at each element (n >= 0)."""
        if n < 0:
            raise RuntimeError("polygamma(n, x) does not support negative n.")
        return Polygamma.apply(self, n)

    def polygamma_(self: Any, n: int) -> Tensor:
        return self._math_inplace("polygamma", n)

    def mvlgamma(self: Any, p: int) -> Tensor:
        """The log of the multivariate gamma function of dimension ``p``:
        sum_i lgamma(x - i/2) + p (p-1)/4 log(pi)."""
        if p < 1:
            raise RuntimeError("p has to be greater than or equal to 1")
        x = self if self.dtype.is_floating_point else self.to(get_default_dtype())
        total = (x - 0.0).lgamma()
        for i in range(1, p):
            total = total + (x - i / 2).lgamma()
        return total + p * (p - 1) / 4 * math.log(math.pi)

    def mvlgamma_(self: Any, p: int) -> Tensor:
        return self._math_inplace("mvlgamma", p)

    def sinc(self: Any) -> Tensor:
        """sin(pi x) / (pi x) of each element, 1 at 0."""
        x = self if self.dtype.is_floating_point else self.to(get_default_dtype())
        px = _nonzero(x) * math.pi
        return (px.sin() / px).where(x != 0, 1.0)

    def sinc_(self: Any) -> Tensor:
        return self._math_inplace("sinc")

    def xlogy(self: Any, other: Tensor | Scalar) -> Tensor:
        """self * log(other), 0 where self is 0 (unless other is NaN)."""
        x, y = _tensor_pair(self, other)
        return (x * y.log()).where((x != 0) | y.isnan(), 0.0)

    def xlogy_(self: Any, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("xlogy", other)

    def logit(self: Any, eps: float | None = None) -> Tensor:
        """log(x / (1 - x)) of each element; with ``eps``, x clamped to [eps, 1 - eps] first."""
        x = self if self.dtype.is_floating_point else self.to(get_default_dtype())
        if eps is not None:
            x = x.clamp(eps, 1 - eps)
        return x.log() - (-x).log1p()

    def logit_(self: Any, eps: float | None = None) -> Tensor:
        return self._math_inplace("logit", eps)

    def nan_to_num(self: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
        """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default the dtype's
        largest and lowest finite values)."""
        if not self.dtype.is_floating_point:
            return self.clone()
        big = _FLOAT_MAX[self.dtype.name]
        hi = big if posinf is None else posinf
        lo = -big if neginf is None else neginf
        out = self.where(~self.isnan(), nan)
        out = out.where(self != math.inf, hi)
        return out.where(self != -math.inf, lo)

    def nan_to_num_(self: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
        return self._math_inplace("nan_to_num", nan, posinf, neginf)

    def signbit(self: Any) -> Tensor:
        """A bool tensor: whether each element's sign bit is set (True for -0.0)."""
        return self._result_type(self.data.unary("signbit"))

    def copysign(self: Any, other: Tensor | Scalar) -> Tensor:
        """|self| with the sign of ``other`` (its sign bit: -0.0 counts as negative), floating."""
        x = self if self.dtype.is_floating_point else self.to(get_default_dtype())
        if not is_tensor(other):
            return x.abs() * math.copysign(1.0, other)
        ax = x.abs()
        return ax.where(~other.signbit(), -ax)

    def copysign_(self: Any, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("copysign", other)

    def heaviside(self: Any, values: Tensor) -> Tensor:
        """The Heaviside step: 0 below 0, ``values`` at 0, 1 above (both of one dtype; no gradient, as torch)."""
        if values.dtype != self.dtype:
            raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
        return Heaviside.apply(self, values)

    def heaviside_(self: Any, values: Tensor) -> Tensor:
        return self._math_inplace("heaviside", values)

    def float_power(self: Any, exponent: Tensor | Scalar) -> Tensor:
        """self ** exponent computed in float64."""
        e = exponent.to(float64) if is_tensor(exponent) else exponent
        return self.to(float64).pow(e)

    def float_power_(self: Any, exponent: Tensor | Scalar) -> Tensor:
        if self.dtype is not float64:
            raise RuntimeError(
                f"the base given to float_power_ has dtype {_torch_dtype_name(self.dtype)} but the operation's "
                "result requires dtype Double"
            )
        return self._math_inplace("float_power", exponent)

    def frexp(self: Any) -> Frexp:
        """(mantissa, exponent): self = mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1 (int32 exponent)."""
        if not self.dtype.is_floating_point:
            raise RuntimeError("torch.frexp() only supports floating-point dtypes")
        x = self.detach()
        a = x.abs()
        finite = (a != 0) & a.isfinite()
        e = a.where(finite, 1.0).log2().floor() + 1
        # log2 may round across a power of two: put the mantissa back in [0.5, 1) with a scaled check
        e = e + (_scale(a, e) >= 1).to(e.dtype) - (_scale(a, e) < 0.5).to(e.dtype)
        e = e.where(finite, 0.0)
        return Frexp(_scale(self, e), e.to(int32))

    def ldexp(self: Any, other: Tensor) -> Tensor:
        """self * 2 ** other (floating)."""
        return self * (2.0 ** (other.to(get_default_dtype()) if not other.dtype.is_floating_point else other))

    def ldexp_(self: Any, other: Tensor) -> Tensor:
        return self._math_inplace("ldexp", other)

    def gcd(self: Any, other: Tensor) -> Tensor:
        """The non-negative greatest common divisor of each pair (integers only)."""
        _refuse_dtype("gcd", self, False)
        return self._result_type(self.data.binary("gcd", _tensor_pair(self, other)[1].data))

    def gcd_(self: Any, other: Tensor) -> Tensor:
        return self._math_inplace("gcd", other)

    def lcm(self: Any, other: Tensor) -> Tensor:
        """The non-negative least common multiple of each pair (integers only)."""
        _refuse_dtype("lcm", self, False)
        return self._result_type(self.data.binary("lcm", _tensor_pair(self, other)[1].data))

    def lcm_(self: Any, other: Tensor) -> Tensor:
        return self._math_inplace("lcm", other)

    def nextafter(self: Any, other: Tensor) -> Tensor:
        """The next floating-point value after each element towards ``other`` (float32 / float64)."""
        _refuse_dtype("nextafter", self, True)
        if self.dtype.name in ("float16", "bfloat16"):
            raise NotImplementedError(f"nextafter is not implemented in genesis for {self.dtype.name}")
        return Nextafter.apply(*_tensor_pair(self, other))

    def nextafter_(self: Any, other: Tensor) -> Tensor:
        return self._math_inplace("nextafter", other)

    def logaddexp2(self: Any, other: Tensor) -> Tensor:
        """log2(2 ** self + 2 ** other), without overflow."""
        a, b = _tensor_pair(self, other)
        m = a.maximum(b)
        d = -(a - b).abs()
        d = d.where(a != b, 0.0)  # equal infinities: no NaN from inf - inf
        return m + (d.exp2().log1p() * (1 / LN2))

    def igamma(self: Any, other: Tensor) -> Tensor:
        """The regularised lower incomplete gamma function P(self, other)."""
        _require_tensor("igamma", other)
        return Igamma.apply(self, other)

    def igamma_(self: Any, other: Tensor) -> Tensor:
        return self._math_inplace("igamma", other)

    def igammac(self: Any, other: Tensor) -> Tensor:
        """The regularised upper incomplete gamma function Q(self, other) = 1 - P(self, other)."""
        _require_tensor("igammac", other)
        return Igammac.apply(self, other)

    def igammac_(self: Any, other: Tensor) -> Tensor:
        return self._math_inplace("igammac", other)


def _scale(x: Any, e: Any) -> Any:
    """x * 2 ** -e in two halves, so that 2 ** -e itself never overflows (denormal x)."""
    h = (e * 0.5).floor()
    return x * (-h).exp2() * (h - e).exp2()


# The functions torch.special has without a Tensor method: the kernels' Functions, called by genesis.special.
def erfcx(x: Tensor) -> Tensor:
    """exp(x^2) erfc(x), accurate where erfc underflows."""
    return Erfcx.apply(x)


def ndtri(x: Tensor) -> Tensor:
    """The standard normal quantile (inverse of ndtr)."""
    return Ndtri.apply(x)


def log_ndtr(x: Tensor) -> Tensor:
    """log of the standard normal CDF, accurate in both tails."""
    return LogNdtr.apply(x)


def i0e(x: Tensor) -> Tensor:
    """exp(-|x|) I0(x)."""
    return I0e.apply(x)


def i1(x: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1."""
    return I1.apply(x)


def i1e(x: Tensor) -> Tensor:
    """exp(-|x|) I1(x)."""
    return I1e.apply(x)


def zeta(x: Tensor | Scalar, q: Tensor | Scalar) -> Tensor:
    """The Hurwitz zeta function sum_k (k + q)^-x (no gradient, as torch)."""
    if not is_tensor(x):
        q, x = _tensor_pair(q, x)
    else:
        x, q = _tensor_pair(x, q)
    return Zeta.apply(x, q)
