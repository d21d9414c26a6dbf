"""More elementwise math (issue #30): inverse trigonometric and hyperbolic functions, frac, fix, deg2rad /
rad2deg, hypot, logaddexp, fmax / fmin, the infinity predicates, division with a rounding mode, and the
alias spellings torch has for them (arcsin, absolute, multiply, ...); MathMixin holds their Tensor methods.

The unary rules extend elementwise.py's table (the same Unary Function, one subclass per op); the binary
ones are small Functions of their own. Every backward is written with Tensor ops (differentiable again).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from genesis_ndarray import get_default_dtype

from ..tensor_base import Scalar, TensorBase
from ._util import Primitive, data, meta, reduce_to, saved_output
from .elementwise import _binary_data, _unary, _unary_method

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor

# The table, as elementwise.py's:  Function = _unary(name, op, what the rule reads, rule(g, x, y) -> gradient)
Asin = _unary("Asin", "asin", "x", lambda g, x, y: g * (1 - x * x).rsqrt())
Acos = _unary("Acos", "acos", "x", lambda g, x, y: -g * (1 - x * x).rsqrt())
Atan = _unary("Atan", "atan", "x", lambda g, x, y: g / (x * x + 1))
Sinh = _unary("Sinh", "sinh", "x", lambda g, x, y: g * x.cosh())
Cosh = _unary("Cosh", "cosh", "x", lambda g, x, y: g * x.sinh())
Asinh = _unary("Asinh", "asinh", "x", lambda g, x, y: g * (x * x + 1).rsqrt())
Acosh = _unary("Acosh", "acosh", "x", lambda g, x, y: g * (x * x - 1).rsqrt())
Atanh = _unary("Atanh", "atanh", "x", lambda g, x, y: g / (1 - x * x))
Frac = _unary("Frac", "frac", "", lambda g, x, y: g)  # x - trunc(x): trunc's gradient is zero


def _me(x: object) -> Any:
    """A mixin's self as the Tensor it is part of, for the type checker (which sees the mixin alone)."""
    return x


class Hypot(Primitive):
    """sqrt(a^2 + b^2): d/da = a / out, d/db = b / out (torch's derivatives.yaml)."""

    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
            ctx.save_for_backward(a, b)
        ctx.out = _binary_data("hypot", a, b)
        return ctx.out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ma, mb = ctx.metas
        out = saved_output(ctx, g, lambda x: x.hypot(b))
        return (
            reduce_to(g * a / out, ma) if ctx.needs_input_grad[0] else None,
            reduce_to(g * b / out, mb) if ctx.needs_input_grad[1] else None,
        )


class Logaddexp(Primitive):
    """log(e^a + e^b): d/da = 1 / (1 + e^(b - a)), d/db = 1 / (1 + e^(a - b))."""

    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
            ctx.save_for_backward(a, b)
        return _binary_data("logaddexp", a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ma, mb = ctx.metas
        return (
            reduce_to(g / ((b - a).exp() + 1), ma) if ctx.needs_input_grad[0] else None,
            reduce_to(g / ((a - b).exp() + 1), mb) if ctx.needs_input_grad[1] else None,
        )


class _FmaxFmin(Primitive):
    """fmax / fmin: the gradient goes to the operand picked, ``a`` on ties and where ``b`` is NaN (as torch)."""

    op = ""

    @staticmethod
    def picks_a(a, b):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a, b):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
            ctx.save_for_backward(a, b)
        return _binary_data(cls.op, a, b)

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        ma, mb = ctx.metas
        to_a = cls.picks_a(a, b).logical_or(b.isnan())
        return (
            reduce_to(g.where(to_a, 0), ma) if ctx.needs_input_grad[0] else None,
            reduce_to((g * 0).where(to_a, g), mb) if ctx.needs_input_grad[1] else None,
        )


class Fmax(_FmaxFmin):
    op = "fmax"
    picks_a = staticmethod(lambda a, b: a >= b)


class Fmin(_FmaxFmin):
    op = "fmin"
    picks_a = staticmethod(lambda a, b: a <= b)


class RoundedDivide(Primitive):
    """torch.div with rounding_mode "trunc" or "floor": a step function, so both gradients are zero."""

    @staticmethod
    def forward(ctx, a, b, rounding_mode):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
        if rounding_mode == "floor":
            return _binary_data("floor_divide", a, b)
        if _integral(a) and _integral(b):  # exact: a - fmod(a, b) is a multiple of b
            return (data(a) - _binary_data("fmod", a, b))._binary("floor_divide", data(b))
        return _binary_data("div", a, b).unary("trunc")

    @staticmethod
    def backward(ctx, g):
        ma, mb = ctx.metas
        zero = g * 0
        return (
            reduce_to(zero, ma) if ctx.needs_input_grad[0] else None,
            reduce_to(zero, mb) if ctx.needs_input_grad[1] else None,
            None,
        )


def _integral(x) -> bool:
    """Whether an operand is an integer / bool tensor or a Python int (a float quotient is then not wanted)."""
    if meta(x) is not None:
        return not x.dtype.is_floating_point
    return isinstance(x, int)


class MathMixin(TensorBase):
    """Tensor methods of this module's ops, their in-place forms and torch's alias spellings."""

    __slots__ = ()

    asin = _unary_method(Asin, "The arcsine of each element, in [-pi/2, pi/2] (NaN outside [-1, 1]).")
    acos = _unary_method(Acos, "The arccosine of each element, in [0, pi] (NaN outside [-1, 1]).")
    atan = _unary_method(Atan, "The arctangent of each element, in (-pi/2, pi/2).")
    sinh = _unary_method(Sinh, "The hyperbolic sine of each element.")
    cosh = _unary_method(Cosh, "The hyperbolic cosine of each element.")
    asinh = _unary_method(Asinh, "The inverse hyperbolic sine of each element.")
    acosh = _unary_method(Acosh, "The inverse hyperbolic cosine of each element (NaN below 1).")
    atanh = _unary_method(Atanh, "The inverse hyperbolic tangent of each element (NaN outside [-1, 1]).")
    frac = _unary_method(Frac, "The fractional part x - trunc(x) of each element (floating dtypes only).")
    arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh

    def fix(self) -> Tensor:
        """Each element rounded toward zero: torch's alias of trunc."""
        return _me(self).trunc()

    def absolute(self) -> Tensor:
        """The absolute value of each element: torch's alias of abs."""
        return _me(self).abs()

    def negative(self) -> Tensor:
        """-self, elementwise: torch's alias of neg."""
        return _me(self).neg()

    def positive(self) -> Tensor:
        """self itself, as torch's (a bool tensor is refused, as torch refuses unary ``+`` on it)."""
        if self.dtype.name == "bool":
            raise RuntimeError(
                "The `+` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
                "use the `~` or `logical_not()` operator instead."
            )
        return _me(self)

    __pos__ = positive

    def multiply(self, other: Tensor | Scalar) -> Tensor:
        """self * other: torch's alias of mul."""
        return _me(self) * other

    def subtract(self, other: Tensor | Scalar, *, alpha: Scalar = 1) -> Tensor:
        """self - alpha * other: torch's alias of sub."""
        return _me(self).sub(other, alpha=alpha)

    def true_divide(self, other: Tensor | Scalar) -> Tensor:
        """self / other, true division: torch's alias of div."""
        return _me(self) / other

    def divide(self, other: Tensor | Scalar, *, rounding_mode: str | None = None) -> Tensor:
        """self / other; ``rounding_mode`` "trunc" rounds the quotient toward zero, "floor" toward -inf
        (integer operands then give an integer result), as torch.div.

        Args:
            other: the divisor, a tensor or a number.
            rounding_mode: None (true division), "trunc" or "floor".
        """
        if rounding_mode is None:
            return _me(self) / other
        if rounding_mode not in ("trunc", "floor"):
            raise RuntimeError(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '"
                + str(rounding_mode)
                + "'"
            )
        return RoundedDivide.apply(self, other, rounding_mode)

    def deg2rad(self) -> Tensor:
        """Each element converted from degrees to radians (integers give the default float dtype)."""
        return self._as_float() * (math.pi / 180.0)

    def rad2deg(self) -> Tensor:
        """Each element converted from radians to degrees (integers give the default float dtype)."""
        return self._as_float() * (180.0 / math.pi)

    def _as_float(self) -> Tensor:
        return _me(self) if self.dtype.is_floating_point else self.to(get_default_dtype())

    def hypot(self, other: Tensor) -> Tensor:
        """sqrt(self^2 + other^2), elementwise and broadcast, without overflow in between (floating dtypes)."""
        _need_tensor("hypot", other)
        return Hypot.apply(self, other)

    def logaddexp(self, other: Tensor) -> Tensor:
        """log(e^self + e^other), elementwise and broadcast, computed without overflow (floating dtypes)."""
        _need_tensor("logaddexp", other)
        return Logaddexp.apply(self, other)

    def fmax(self, other: Tensor) -> Tensor:
        """The elementwise maximum, ignoring NaN: NaN only where both are (unlike maximum)."""
        _need_tensor("fmax", other)
        return Fmax.apply(self, other)

    def fmin(self, other: Tensor) -> Tensor:
        """The elementwise minimum, ignoring NaN: NaN only where both are (unlike minimum)."""
        _need_tensor("fmin", other)
        return Fmin.apply(self, other)

    def isposinf(self) -> Tensor:
        """A bool tensor, True where an element is +inf."""
        return self._result_type(self.data.unary("isposinf"))

    def isneginf(self) -> Tensor:
        """A bool tensor, True where an element is -inf."""
        return self._result_type(self.data.unary("isneginf"))

    def isreal(self) -> Tensor:
        """A bool tensor, True everywhere: genesis has no complex dtypes, so every element is real."""
        return self._result_type(self.data.unary("isfinite")).logical_or(True)

    # ------------------------------------------------------------- in-place forms
    def asin_(self) -> Tensor:
        return self._math_inplace("asin")

    def acos_(self) -> Tensor:
        return self._math_inplace("acos")

    def atan_(self) -> Tensor:
        return self._math_inplace("atan")

    def sinh_(self) -> Tensor:
        return self._math_inplace("sinh")

    def cosh_(self) -> Tensor:
        return self._math_inplace("cosh")

    def asinh_(self) -> Tensor:
        return self._math_inplace("asinh")

    def acosh_(self) -> Tensor:
        return self._math_inplace("acosh")

    def atanh_(self) -> Tensor:
        return self._math_inplace("atanh")

    def frac_(self) -> Tensor:
        return self._math_inplace("frac")

    def fix_(self) -> Tensor:
        return self._math_inplace("trunc")

    def deg2rad_(self) -> Tensor:
        return self._math_inplace("deg2rad")

    def rad2deg_(self) -> Tensor:
        return self._math_inplace("rad2deg")

    def hypot_(self, other: Tensor) -> Tensor:
        return self._math_inplace("hypot", other)

    def absolute_(self) -> Tensor:
        return self._math_inplace("abs")

    def negative_(self) -> Tensor:
        return self._math_inplace("neg")

    def multiply_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("mul", other)

    def subtract_(self, other: Tensor | Scalar, *, alpha: Scalar = 1) -> Tensor:
        return self._math_inplace("sub", other, alpha=alpha)

    def true_divide_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("div", other)

    def divide_(self, other: Tensor | Scalar, *, rounding_mode: str | None = None) -> Tensor:
        return self._math_inplace("divide", other, rounding_mode=rounding_mode)

    arcsin_, arccos_, arctan_, arcsinh_, arccosh_, arctanh_ = asin_, acos_, atan_, asinh_, acosh_, atanh_


def _need_tensor(op: str, other: object) -> None:
    """torch's TypeError for a Python number where its binary function takes a Tensor only."""
    if not isinstance(other, TensorBase):
        raise TypeError(f"{op}(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
