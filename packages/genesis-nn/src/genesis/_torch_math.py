"""torch.X elementwise functions of issue #30: inverse trigonometric and hyperbolic functions and their arc*
aliases, frac / fix / deg2rad / rad2deg, hypot, logaddexp, fmax / fmin, the infinity predicates, the long
comparison spellings, the bitwise functions, rsub, and the top-level in-place forms torch has (``abs_``,
``cos_``, ``clamp_``, ``fill_``, ``zero_``, ``detach_``, ...).

Each is its Tensor method called as a function (the methods, in genesis_autograd, carry the gradients).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from genesis_autograd import Tensor

Number = int | float | bool


def _function(method: str, doc: str | None = None) -> Callable[..., Any]:
    """``genesis.<method>(input, *args, **kwargs)``: ``input.<method>(*args, **kwargs)``, with the method's
    docstring (or ``doc``)."""

    def function(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, method)(*args, **kwargs)

    target = getattr(Tensor, method)
    function.__name__ = function.__qualname__ = method
    text = doc or inspect.getdoc(target) or f"In-place version of :func:`{method[:-1]}`."
    function.__doc__ = f"{text}\n\nThe function form of ``Tensor.{method}``."
    return function


# The unary functions: input.<name>().
acos = _function("acos")
asin = _function("asin")
atan = _function("atan")
acosh = _function("acosh")
asinh = _function("asinh")
atanh = _function("atanh")
cosh = _function("cosh")
sinh = _function("sinh")
arccos, arcsin, arctan, arccosh, arcsinh, arctanh = acos, asin, atan, acosh, asinh, atanh
absolute = _function("absolute")
positive = _function("positive")
frac = _function("frac")
fix = _function("fix")
deg2rad = _function("deg2rad")
rad2deg = _function("rad2deg")
isposinf = _function("isposinf")
isneginf = _function("isneginf")
isreal = _function("isreal")
bitwise_not = _function("bitwise_not")


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """sqrt(input^2 + other^2), elementwise and broadcast (floating dtypes)."""
    return input.hypot(other)


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """log(e^input + e^other), elementwise and broadcast, without overflow (floating dtypes)."""
    return input.logaddexp(other)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum ignoring NaN (NaN only where both are)."""
    return input.fmax(other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum ignoring NaN (NaN only where both are)."""
    return input.fmin(other)


def greater(input: Tensor, other: Tensor | Number) -> Tensor:
    """input > other, elementwise (torch's alias of gt)."""
    return input.greater(other)


def greater_equal(input: Tensor, other: Tensor | Number) -> Tensor:
    """input >= other, elementwise (torch's alias of ge)."""
    return input.greater_equal(other)


def less(input: Tensor, other: Tensor | Number) -> Tensor:
    """input < other, elementwise (torch's alias of lt)."""
    return input.less(other)


def less_equal(input: Tensor, other: Tensor | Number) -> Tensor:
    """input <= other, elementwise (torch's alias of le)."""
    return input.less_equal(other)


def not_equal(input: Tensor, other: Tensor | Number) -> Tensor:
    """input != other, elementwise (torch's alias of ne)."""
    return input.not_equal(other)


def _bitwise(op: str, input: Tensor | Number, other: Tensor | Number) -> Tensor:
    """torch's bitwise functions take a number first too (``torch.bitwise_and(3, t)``)."""
    if isinstance(input, Tensor):
        return getattr(input, op)(other)
    if not isinstance(other, Tensor):
        raise TypeError(f"{op}() received an invalid combination of arguments: two numbers, no Tensor")
    reflected = {"bitwise_left_shift": "__rlshift__", "bitwise_right_shift": "__rrshift__"}
    return getattr(other, reflected.get(op, op))(input)


def bitwise_and(input: Tensor | Number, other: Tensor | Number) -> Tensor:
    """Elementwise AND of integers (logical AND of bools)."""
    return _bitwise("bitwise_and", input, other)


def bitwise_or(input: Tensor | Number, other: Tensor | Number) -> Tensor:
    """Elementwise OR of integers (logical OR of bools)."""
    return _bitwise("bitwise_or", input, other)


def bitwise_xor(input: Tensor | Number, other: Tensor | Number) -> Tensor:
    """Elementwise XOR of integers (logical XOR of bools)."""
    return _bitwise("bitwise_xor", input, other)


def bitwise_left_shift(input: Tensor | Number, other: Tensor | Number) -> Tensor:
    """input << other, elementwise on integers (counts past the width give 0)."""
    return _bitwise("bitwise_left_shift", input, other)


def bitwise_right_shift(input: Tensor | Number, other: Tensor | Number) -> Tensor:
    """input >> other, arithmetic, elementwise on integers (counts past the width give 0 or -1)."""
    return _bitwise("bitwise_right_shift", input, other)


def rsub(input: Tensor, other: Tensor | Number, *, alpha: Number = 1) -> Tensor:
    """other - alpha * input: sub with the operands swapped."""
    scaled = input if alpha == 1 else input * alpha
    return other - scaled


def fill(input: Tensor, value: Number) -> Tensor:
    """A new tensor of input's shape, dtype and device, filled with ``value``."""
    return input.clone().detach().fill_(value)


# The top-level in-place forms torch has: input.<name>_().
_INPLACE = (
    "abs_ acos_ acosh_ asin_ asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ "
    "erf_ exp2_ exp_ expm1_ fill_ floor_ frac_ log10_ log1p_ log2_ log_ neg_ rad2deg_ reciprocal_ relu_ round_ "
    "rsqrt_ sigmoid_ sin_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ zero_ detach_ "
    "arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ fix_ negative_"
).split()
for _name in _INPLACE:
    globals()[_name] = _function(_name)
del _name

__all__ = [
    "acos",
    "asin",
    "atan",
    "acosh",
    "asinh",
    "atanh",
    "cosh",
    "sinh",
    "arccos",
    "arcsin",
    "arctan",
    "arccosh",
    "arcsinh",
    "arctanh",
    "absolute",
    "positive",
    "frac",
    "fix",
    "deg2rad",
    "rad2deg",
    "isposinf",
    "isneginf",
    "isreal",
    "hypot",
    "logaddexp",
    "fmax",
    "fmin",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "rsub",
    "fill",
    *_INPLACE,
]
