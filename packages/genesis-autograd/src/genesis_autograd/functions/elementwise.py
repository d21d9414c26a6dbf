"""Elementwise ops: unary math (one table of derivative rules), binary arithmetic with broadcasting,
comparisons, ternary ops and clamp; and ElementwiseMixin, their Tensor methods and operators.

Binary rules sum the gradient back over broadcast dims. Every backward is written with Tensor
ops, so it can itself be differentiated (create_graph=True). Formulas follow torch's derivatives.yaml.
"""

from __future__ import annotations

import math
from numbers import Number
from typing import TYPE_CHECKING, Any

from genesis_ndarray import DType, NDArray, full, get_default_dtype, int64, promote_types

from ..autocast import _state as _autocast_state
from ..function import _record
from ..grad_mode import _state as _grad_state
from ..tensor_base import Scalar, TensorBase
from ._util import Primitive, data, meta, reduce_to, saved_output
from .activation import Gelu, GeluTanh, Silu  # fused backward: activation.py

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


# torch's names for dtypes in its cast errors ("result type Float can't be cast to the desired output type Long").
_TORCH_DTYPE_NAMES = {
    "float64": "Double",
    "float32": "Float",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
}

# Unary ops whose result is floating for an integer or bool input: their in-place forms cannot write
# into an integer tensor.
_FLOAT_RESULT_UNARY = frozenset({"exp", "log", "sqrt", "sigmoid", "tanh"})


def _torch_dtype_name(dtype: DType) -> str:
    return _TORCH_DTYPE_NAMES.get(dtype.name, dtype.name.capitalize())


def refuse_narrowing(target: DType, result: DType) -> None:
    """Raise torch's RuntimeError when an in-place op's ``result`` dtype is of a higher category
    (bool < integer < floating) than the tensor written to; checked before anything is written,
    so the same check holds on every device."""
    if result.category > target.category:
        raise RuntimeError(
            f"result type {_torch_dtype_name(result)} can't be cast to the desired output type "
            f"{_torch_dtype_name(target)}"
        )


def _inplace_result_dtype(dtype: DType, other: Any, true_division: bool = False) -> DType:
    """The dtype of ``tensor <op> other`` for a tensor of ``dtype`` as far as its category goes: a
    Python number only counts when of a higher category (torch's rule); true division is floating."""
    if isinstance(other, TensorBase):
        result = promote_types(dtype, other.dtype)
    elif isinstance(other, bool) or not isinstance(other, Number):
        result = dtype
    elif isinstance(other, int):
        result = dtype if dtype.category >= 1 else int64
    else:
        result = dtype if dtype.category >= 2 else get_default_dtype()
    if true_division and result.category < 2:
        return get_default_dtype()
    return result


# A Python number of exactly these classes takes the operators' inline path (a subclass goes through _operand).
_PLAIN_SCALARS = frozenset({int, float, bool})

LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# ------------------------------------------------------------------ unary: one Function, a table of rules
class Unary(Primitive):
    """y = op(x), with the gradient ``rule(g, x, y)``. ``reads`` says what the rule needs: "x" (the
    input, saved), "y" (the output, kept from forward and recomputed from x when the backward itself
    is recorded) or "" (nothing). Each op is a subclass named after it (ExpBackward in a grad_fn)."""

    op = ""
    reads = ""

    @staticmethod
    def rule(g, x, y):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a):
        out = a.data.unary(cls.op)
        if ctx.records and cls.reads:
            ctx.save_for_backward(a)
            if cls.reads == "y":
                ctx.out = out
        return out

    @classmethod
    def backward(cls, ctx, g):
        if cls.reads == "y":
            return cls.rule(g, None, saved_output(ctx, g, cls.apply))
        if cls.reads == "x":
            return cls.rule(g, ctx.saved_tensors[0], None)
        return cls.rule(g, None, None)


def _unary(name: str, op: str, reads: str, rule) -> type[Unary]:
    return type(
        name,
        (Unary,),
        {"op": op, "reads": reads, "rule": staticmethod(rule), "__module__": __name__, "__qualname__": name},
    )


# The table:  Function = _unary(name, op, what the rule reads, rule(g, x, y) -> the input's gradient)
Neg = _unary("Neg", "neg", "", lambda g, x, y: -g)
Exp = _unary("Exp", "exp", "y", lambda g, x, y: g * y)
Exp2 = _unary("Exp2", "exp2", "y", lambda g, x, y: g * (y * LN2))
Expm1 = _unary("Expm1", "expm1", "y", lambda g, x, y: g * (y + 1))
Log = _unary("Log", "log", "x", lambda g, x, y: g / x)
Log2 = _unary("Log2", "log2", "x", lambda g, x, y: g * (1 / (x * LN2)))
Log10 = _unary("Log10", "log10", "x", lambda g, x, y: g * (1 / (x * LN10)))
Log1p = _unary("Log1p", "log1p", "x", lambda g, x, y: g * (1 / (x + 1)))
Sqrt = _unary("Sqrt", "sqrt", "y", lambda g, x, y: g / (y * 2))
Rsqrt = _unary("Rsqrt", "rsqrt", "y", lambda g, x, y: g * (y * y * y * -0.5))
Reciprocal = _unary("Reciprocal", "reciprocal", "y", lambda g, x, y: g * -(y * y))
Square = _unary("Square", "square", "x", lambda g, x, y: g * (x * 2))
Abs = _unary("Abs", "abs", "x", lambda g, x, y: g * x.sign())
Sin = _unary("Sin", "sin", "x", lambda g, x, y: g * x.cos())
Cos = _unary("Cos", "cos", "x", lambda g, x, y: -g * x.sin())
Tan = _unary("Tan", "tan", "y", lambda g, x, y: g * (1 + y * y))
Tanh = _unary("Tanh", "tanh", "y", lambda g, x, y: g * (1 - y * y))
Sigmoid = _unary("Sigmoid", "sigmoid", "y", lambda g, x, y: g * y * (1 - y))
# torch's threshold_backward: g where the input was positive, else 0 (two launches, no cast; 0 even where g is NaN)
ReLU = _unary("ReLU", "relu", "x", lambda g, x, y: g.where(x > 0, 0))
Erf = _unary("Erf", "erf", "x", lambda g, x, y: g * ((-(x * x)).exp() * TWO_OVER_SQRT_PI))
# piecewise constant: zero gradient, as torch
Sign = _unary("Sign", "sign", "", lambda g, x, y: g * 0)
Floor = _unary("Floor", "floor", "", lambda g, x, y: g * 0)
Ceil = _unary("Ceil", "ceil", "", lambda g, x, y: g * 0)
Round = _unary("Round", "round", "", lambda g, x, y: g * 0)
Trunc = _unary("Trunc", "trunc", "", lambda g, x, y: g * 0)


def _unary_method(fn: type[Unary], doc: str) -> Any:
    """The Tensor method of the unary Function ``fn``: ``fn.apply(self)``, with apply's common case inline.

    When nothing records a graph and no autocast region is active, apply would run ``fn.forward`` on a
    null ctx and wrap its one NDArray in the input's result type: the method does that itself, without
    apply's argument loops and two calls (relu on the fake GPU: 3.1 -> 2.6 us). Inside an autocast region
    it calls apply, which casts by the op's policy as resolved then (a policy may be set on any class);
    a recorded op goes to apply's recording step directly (outside autocast, apply's only other path)."""
    op = fn.op

    def method(self: Tensor) -> Tensor:
        if _autocast_state.active:
            return fn.apply(self)
        if _grad_state.enabled and self.requires_grad:
            return _record(fn, (self,))
        return self._result_type(self.data.unary(op))  # Unary.forward's unrecorded work

    method.__doc__ = doc
    method.__name__ = method.__qualname__ = "__neg__" if fn is Neg else fn.op
    return method


# ------------------------------------------------------------------ binary
class Add(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
        # data(a) + data(b), inline: the hottest ops of all
        return (a.data if hasattr(a, "grad_fn") else a) + (b.data if hasattr(b, "grad_fn") else b)

    @staticmethod
    def backward(ctx, g):
        ma, mb = ctx.metas
        return (
            reduce_to(g, ma) if ctx.needs_input_grad[0] else None,
            reduce_to(g, mb) if ctx.needs_input_grad[1] else None,
        )


class Sub(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
        # data(a) - data(b), inline: the hottest ops of all
        return (a.data if hasattr(a, "grad_fn") else a) - (b.data if hasattr(b, "grad_fn") else b)

    @staticmethod
    def backward(ctx, g):
        ma, mb = ctx.metas
        return (
            reduce_to(g, ma) if ctx.needs_input_grad[0] else None,
            reduce_to(-g, mb) if ctx.needs_input_grad[1] else None,
        )


class Mul(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:
            ma, mb = ctx.metas = (meta(a), meta(b))
            # Each operand is needed only for the other's gradient.
            ctx.save_for_backward(
                a if ma is not None and ctx.needs_input_grad[1] else None,
                b if mb is not None and ctx.needs_input_grad[0] else None,
            )
            ctx.scalars = (a if ma is None else None, b if mb is None else None)
        return (a.data if hasattr(a, "grad_fn") else a) * (b.data if hasattr(b, "grad_fn") else b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.scalars
        ma, mb = ctx.metas
        ga = reduce_to(g * (b if b is not None else sb), ma) if ctx.needs_input_grad[0] else None
        gb = reduce_to(g * (a if a is not None else sa), mb) if ctx.needs_input_grad[1] else None
        return ga, gb


class Div(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.metas = (meta(a), meta(b))
        ctx.save_for_backward(a if ctx.metas[0] is not None else None, b if ctx.metas[1] is not None else None)
        ctx.scalars = (a if ctx.metas[0] is None else None, b if ctx.metas[1] is None else None)
        return data(a) / data(b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.scalars
        a = a if a is not None else sa
        b = b if b is not None else sb
        ma, mb = ctx.metas
        ga = reduce_to(g / b, ma) if ctx.needs_input_grad[0] else None
        gb = reduce_to(-g * a / (b * b), mb) if ctx.needs_input_grad[1] else None
        return ga, gb


class Pow(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        if isinstance(b, int) and not isinstance(b, bool) and b < 0 and isinstance(a, TensorBase):
            if a.dtype.category < 2:  # checked before any backend: cuda's kernel would compute 1 // a^-b
                raise RuntimeError("Integers to negative integer powers are not allowed.")
        ctx.metas = (meta(a), meta(b))
        out = data(a) ** data(b)
        ctx.save_for_backward(a if ctx.metas[0] is not None else None, b if ctx.metas[1] is not None else None)
        ctx.scalars = (a if ctx.metas[0] is None else None, b if ctx.metas[1] is None else None)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.scalars
        a = a if a is not None else sa
        b = b if b is not None else sb
        ma, mb = ctx.metas
        ga = gb = None
        if ctx.needs_input_grad[0]:
            # b * a^(b-1), with the b == 0 case giving 0 even where a == 0 (as torch)
            ga = reduce_to(g * b * a ** (b - 1) if not (isinstance(b, int | float) and b == 0) else g * 0, ma)
        if ctx.needs_input_grad[1]:
            gb = reduce_to(g * (a**b) * _log(a), mb)
        return ga, gb


def _log(x):
    return x.log() if hasattr(x, "grad_fn") else math.log(x)


class _MaxMin(Primitive):
    """maximum / minimum: the pair share forward and backward, differing in the op and the comparison."""

    pick = ""

    @staticmethod
    def wins(a, b):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.metas = (meta(a), meta(b))
        ctx.save_for_backward(a, b)
        return getattr(data(a), cls.pick)(data(b))

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        ma, mb = ctx.metas
        # Ties split the gradient evenly between the operands, as torch does.
        share_a = cls.wins(a, b).to(g.dtype) + (a == b).to(g.dtype) * 0.5
        ga = reduce_to(g * share_a, ma) if ctx.needs_input_grad[0] else None
        gb = reduce_to(g * (1 - share_a), mb) if ctx.needs_input_grad[1] else None
        return ga, gb


class Maximum(_MaxMin):
    pick = "maximum"
    wins = staticmethod(lambda a, b: a > b)


class Minimum(_MaxMin):
    pick = "minimum"
    wins = staticmethod(lambda a, b: a < b)


class Atan2(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
            ctx.save_for_backward(a, b)
        return a.data.atan2(b.data)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ma, mb = ctx.metas
        scale = g / (a * a + b * b)
        return (
            reduce_to(scale * b, ma) if ctx.needs_input_grad[0] else None,
            reduce_to(-scale * a, mb) if ctx.needs_input_grad[1] else None,
        )


def _binary_data(op: str, a, b):
    """``a op b`` on NDArrays, either operand possibly a Python scalar."""
    if meta(a) is None:
        return data(b)._binary(op, a, reverse=True)
    return data(a)._binary(op, data(b))


class _Rounded(Primitive):
    """remainder / fmod: a - rounded(a / b) * b, so d/da = 1 and d/db = -rounded(a / b)."""

    op = ""
    rounding = ""

    @classmethod
    def forward(cls, ctx, a, b):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
            ctx.save_for_backward(
                a if ctx.needs_input_grad[1] and meta(a) is not None else None,
                b if ctx.needs_input_grad[1] and meta(b) is not None else None,
            )
            ctx.scalars = (a if meta(a) is None else None, b if meta(b) is None else None)
        return _binary_data(cls.op, a, b)

    @classmethod
    def backward(cls, ctx, g):
        ma, mb = ctx.metas
        ga = reduce_to(g, ma) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:
            a, b = ctx.saved_tensors
            sa, _ = ctx.scalars
            quotient = (a if a is not None else sa) / b
            gb = reduce_to(-g * getattr(quotient, cls.rounding)(), mb)
        return ga, gb


class Remainder(_Rounded):
    op, rounding = "remainder", "floor"


class Fmod(_Rounded):
    op, rounding = "fmod", "trunc"


class FloorDivide(Primitive):
    """torch records floor_divide but has no derivative for it: backward through it raises."""

    @staticmethod
    def forward(ctx, a, b):
        return _binary_data("floor_divide", a, b)

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("the derivative for 'floor_divide' is not implemented.")


# ------------------------------------------------------------------ ternary, clamp
class Where(Primitive):
    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.cond = cond
        ctx.metas = (meta(a), meta(b))
        if meta(a) is None:
            return _where_scalar_first(cond.data, a, data(b))
        return data(a).where(cond.data, data(b))

    @staticmethod
    def backward(ctx, g):
        ma, mb = ctx.metas
        zero = g * 0
        ga = reduce_to(g.where(ctx.cond, zero), ma) if ctx.needs_input_grad[1] else None
        gb = reduce_to(zero.where(ctx.cond, g), mb) if ctx.needs_input_grad[2] else None
        return None, ga, gb


def _where_scalar_first(cond, a, b):
    return full((), a, dtype=b.dtype, device=b.device).where(cond, b)


class Lerp(Primitive):
    """a + w (b - a): d/da = 1 - w, d/db = w, d/dw = b - a. ``w`` a Tensor or a Python scalar."""

    @staticmethod
    def forward(ctx, a, b, w):
        if ctx.records:
            ctx.metas = (meta(a), meta(b), meta(w))
            ctx.save_for_backward(a, b, w if meta(w) is not None else None)
            ctx.weight = w if meta(w) is None else None
        return a.data.lerp(b.data, data(w))

    @staticmethod
    def backward(ctx, g):
        a, b, w = ctx.saved_tensors
        w = w if w is not None else ctx.weight
        ma, mb, mw = ctx.metas
        need = ctx.needs_input_grad
        return (
            reduce_to(g * (1 - w), ma) if need[0] else None,
            reduce_to(g * w, mb) if need[1] else None,
            reduce_to(g * (b - a), mw) if need[2] else None,
        )


class Addcmul(Primitive):
    @staticmethod
    def forward(ctx, x, t1, t2, value):
        if ctx.records:
            ctx.metas = (meta(x), meta(t1), meta(t2))
            ctx.value = value
            ctx.save_for_backward(t1 if ctx.needs_input_grad[2] else None, t2 if ctx.needs_input_grad[1] else None)
        return x.data.addcmul(t1.data, t2.data, value)

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        mx, m1, m2 = ctx.metas
        need = ctx.needs_input_grad
        return (
            reduce_to(g, mx) if need[0] else None,
            reduce_to(g * t2 * ctx.value, m1) if need[1] else None,
            reduce_to(g * t1 * ctx.value, m2) if need[2] else None,
            None,
        )


class Addcdiv(Primitive):
    @staticmethod
    def forward(ctx, x, t1, t2, value):
        if ctx.records:
            ctx.metas = (meta(x), meta(t1), meta(t2))
            ctx.value = value
            ctx.save_for_backward(
                t1 if ctx.needs_input_grad[2] else None,
                t2 if ctx.needs_input_grad[1] or ctx.needs_input_grad[2] else None,
            )
        return x.data.addcdiv(t1.data, t2.data, value)

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        mx, m1, m2 = ctx.metas
        need = ctx.needs_input_grad
        return (
            reduce_to(g, mx) if need[0] else None,
            reduce_to(g * ctx.value / t2, m1) if need[1] else None,
            reduce_to(-g * ctx.value * t1 / (t2 * t2), m2) if need[2] else None,
            None,
        )


class Clamp(Primitive):
    @staticmethod
    def forward(ctx, a, lo, hi):
        ctx.save_for_backward(a)
        ctx.bounds = (lo, hi)
        return a.data.clamp(lo, hi)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        inside = None
        if lo is not None:
            inside = a >= lo
        if hi is not None:
            below = a <= hi
            inside = below if inside is None else inside.logical_and(below)
        return g * inside.to(g.dtype), None, None


class ClampTensor(Primitive):
    """clamp with Tensor bounds (either may be None); the gradient goes to whichever of x, min, max
    the output took its value from, as torch's clamp_backward_min_max."""

    @staticmethod
    def forward(ctx, a, lo, hi):
        if ctx.records:
            ctx.metas = (meta(a), meta(lo) if lo is not None else None, meta(hi) if hi is not None else None)
            ctx.save_for_backward(a, lo, hi)
        return a.data.clamp(None if lo is None else lo.data, None if hi is None else hi.data)

    @staticmethod
    def backward(ctx, g):
        a, lo, hi = ctx.saved_tensors
        ma, ml, mh = ctx.metas
        need = ctx.needs_input_grad
        if lo is not None and hi is not None:
            masks = ((a >= lo).logical_and(a <= hi), (a < lo).logical_and(lo < hi), (a > hi).logical_or(hi < lo))
        elif lo is not None:
            masks = (a >= lo, a < lo, None)
        else:
            masks = (a <= hi, None, a > hi)
        zero = g * 0
        return tuple(reduce_to(g.where(mask, zero), m) if n else None for mask, m, n in zip(masks, (ma, ml, mh), need))


# ------------------------------------------------------------------ the Tensor methods
class ElementwiseMixin(TensorBase):
    """Tensor's elementwise methods and operators. Comparisons and logic have no gradient and go
    straight to the NDArray. In-place forms go through Tensor._inplace (a graph node when gradients
    flow) or Tensor._math_inplace (the out-of-place op written back, with torch's dtype and shape checks).
    """

    __slots__ = ()

    def _operand(self, other: object) -> Any:
        """``other`` as a binary op's operand: a Tensor or a number (an NDArray is wrapped), else NotImplemented."""
        if isinstance(other, self._result_type) or isinstance(other, Number):
            return other
        if isinstance(other, NDArray):
            return self._result_type(other)
        return NotImplemented

    # ------------------------------------------------------------- arithmetic operators
    # The hot path of the framework: a Tensor of this class, the common operand, skips _operand's checks.
    # Add, Sub, Mul and Div have no autocast policy (test_ag_fast_paths checks it), so inside an autocast
    # region too, Function.apply would run them on their inputs as given; the operators do what it would:
    # when nothing records a graph (no operand requires grad, or grad mode is off), the operands' NDArray op
    # wrapped in this class's result type (no node, no ctx); when a graph is recorded between two Tensors,
    # apply's recording step itself. Anything else (other operand classes, number subclasses) takes apply.
    def __add__(self, other: Tensor | Scalar) -> Tensor:
        cls = other.__class__
        o: Any = other  # (the type checker does not narrow on a class test)
        if cls is self.__class__:
            if not (_grad_state.enabled and (self.requires_grad or o.requires_grad)):
                return self._result_type(self.data + o.data)  # Add's unrecorded forward, inline
            return _record(Add, (self, o))  # what Add.apply does here (it has no autocast policy)
        elif cls in _PLAIN_SCALARS:
            if not (_grad_state.enabled and self.requires_grad):
                return self._result_type(self.data + other)
        else:
            other = self._operand(other)
            if other is NotImplemented:
                return other
        return Add.apply(self, other)

    def __radd__(self, other: Scalar) -> Tensor:
        return Add.apply(other, self)

    def __sub__(self, other: Tensor | Scalar) -> Tensor:
        cls = other.__class__
        o: Any = other  # (the type checker does not narrow on a class test)
        if cls is self.__class__:
            if not (_grad_state.enabled and (self.requires_grad or o.requires_grad)):
                return self._result_type(self.data - o.data)  # Sub's unrecorded forward, inline
            return _record(Sub, (self, o))  # what Sub.apply does here (it has no autocast policy)
        elif cls in _PLAIN_SCALARS:
            if not (_grad_state.enabled and self.requires_grad):
                return self._result_type(self.data - other)
        else:
            other = self._operand(other)
            if other is NotImplemented:
                return other
        return Sub.apply(self, other)

    def __rsub__(self, other: Scalar) -> Tensor:
        return Sub.apply(other, self)

    def __mul__(self, other: Tensor | Scalar) -> Tensor:
        cls = other.__class__
        o: Any = other  # (the type checker does not narrow on a class test)
        if cls is self.__class__:
            if not (_grad_state.enabled and (self.requires_grad or o.requires_grad)):
                return self._result_type(self.data * o.data)  # Mul's unrecorded forward, inline
            return _record(Mul, (self, o))  # what Mul.apply does here (it has no autocast policy)
        elif cls in _PLAIN_SCALARS:
            if not (_grad_state.enabled and self.requires_grad):
                return self._result_type(self.data * other)
        else:
            other = self._operand(other)
            if other is NotImplemented:
                return other
        return Mul.apply(self, other)

    def __rmul__(self, other: Scalar) -> Tensor:
        return Mul.apply(other, self)

    def __truediv__(self, other: Tensor | Scalar) -> Tensor:
        cls = other.__class__
        o: Any = other  # (the type checker does not narrow on a class test)
        if cls is self.__class__:
            if not (_grad_state.enabled and (self.requires_grad or o.requires_grad)):
                return self._result_type(self.data / o.data)  # Div's unrecorded forward, inline
            return _record(Div, (self, o))  # what Div.apply does here (it has no autocast policy)
        elif cls in _PLAIN_SCALARS:
            if not (_grad_state.enabled and self.requires_grad):
                return self._result_type(self.data / other)
        else:
            other = self._operand(other)
            if other is NotImplemented:
                return other
        return Div.apply(self, other)

    def __rtruediv__(self, other: Scalar) -> Tensor:
        return Div.apply(other, self)

    def __pow__(self, other: Tensor | Scalar) -> Tensor:
        if other.__class__ is not self.__class__:
            other = self._operand(other)
            if other is NotImplemented:
                return other
        return Pow.apply(self, other)

    def __rpow__(self, other: Scalar) -> Tensor:
        return Pow.apply(other, self)

    __neg__ = _unary_method(Neg, "-x for each element x.")

    def add(self, other: Tensor | Scalar, *, alpha: Scalar = 1) -> Tensor:
        """self + alpha * other, broadcast, in the promoted dtype.

        Args:
            other: the tensor or number to add.
            alpha: the multiplier for ``other``.
        """
        return self + (other * alpha if alpha != 1 else other)

    def sub(self, other: Tensor | Scalar, *, alpha: Scalar = 1) -> Tensor:
        """self - alpha * other, broadcast, in the promoted dtype.

        Args:
            other: the tensor or number to subtract.
            alpha: the multiplier for ``other``.
        """
        return self - (other * alpha if alpha != 1 else other)

    def mul(self, other: Tensor | Scalar) -> Tensor:
        """self * other, broadcast, in the promoted dtype."""
        return self * other

    def div(self, other: Tensor | Scalar, *, rounding_mode: str | None = None) -> Tensor:
        """self / other, broadcast; true division (integer inputs give the default float dtype), or rounded
        as ``rounding_mode`` says ("trunc" / "floor": see divide)."""
        if rounding_mode is not None:
            return self.divide(other, rounding_mode=rounding_mode)  # type: ignore[attr-defined]  # MathMixin's
        return self / other

    def pow(self, exponent: Tensor | Scalar) -> Tensor:
        """self ** exponent, elementwise and broadcast."""
        return self**exponent

    def neg(self) -> Tensor:
        """-self, elementwise."""
        return -self

    def maximum(self, other: Tensor) -> Tensor:
        """The elementwise maximum of self and other (broadcast); NaN if either is NaN."""
        return Maximum.apply(self, other)

    def minimum(self, other: Tensor) -> Tensor:
        """The elementwise minimum of self and other (broadcast); NaN if either is NaN."""
        return Minimum.apply(self, other)

    # ------------------------------------------------------------- comparisons and logic: no gradient
    def _no_grad_binary(self, op: str, other: object) -> Tensor:
        other = self._operand(other)
        if other is NotImplemented:
            return other
        return self._result_type(self.data._binary(op, other.data if isinstance(other, self._result_type) else other))

    # == and != compare elementwise and give a bool Tensor, as torch's (object's give a bool): hence the ignores.
    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        return self._no_grad_binary("eq", other)

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        return self._no_grad_binary("ne", other)

    def __lt__(self, other: Tensor | Scalar) -> Tensor:
        return self._no_grad_binary("lt", other)

    def __le__(self, other: Tensor | Scalar) -> Tensor:
        return self._no_grad_binary("le", other)

    def __gt__(self, other: Tensor | Scalar) -> Tensor:
        return self._no_grad_binary("gt", other)

    def __ge__(self, other: Tensor | Scalar) -> Tensor:
        return self._no_grad_binary("ge", other)

    def __and__(self, other: Tensor | Scalar) -> Tensor:
        return self._no_grad_binary("bitwise_and", other)

    def __or__(self, other: Tensor | Scalar) -> Tensor:
        return self._no_grad_binary("bitwise_or", other)

    def __xor__(self, other: Tensor | Scalar) -> Tensor:
        return self._no_grad_binary("bitwise_xor", other)

    def __invert__(self) -> Tensor:
        return self._result_type(~self.data)

    __hash__ = object.__hash__  # defining __eq__ would otherwise make Tensors unhashable

    def eq(self, other: Tensor | Scalar) -> Tensor:
        """self == other, elementwise: a bool tensor (no gradient)."""
        return self.__eq__(other)

    def ne(self, other: Tensor | Scalar) -> Tensor:
        """self != other, elementwise: a bool tensor (no gradient)."""
        return self.__ne__(other)

    def lt(self, other: Tensor | Scalar) -> Tensor:
        """self < other, elementwise: a bool tensor (no gradient)."""
        return self.__lt__(other)

    def le(self, other: Tensor | Scalar) -> Tensor:
        """self <= other, elementwise: a bool tensor (no gradient)."""
        return self.__le__(other)

    def gt(self, other: Tensor | Scalar) -> Tensor:
        """self > other, elementwise: a bool tensor (no gradient)."""
        return self.__gt__(other)

    def ge(self, other: Tensor | Scalar) -> Tensor:
        """self >= other, elementwise: a bool tensor (no gradient)."""
        return self.__ge__(other)

    def logical_and(self, other: Tensor | Scalar) -> Tensor:
        """Elementwise logical AND (nonzero is True): a bool tensor."""
        return self._no_grad_binary("logical_and", other)

    def logical_or(self, other: Tensor | Scalar) -> Tensor:
        """Elementwise logical OR (nonzero is True): a bool tensor."""
        return self._no_grad_binary("logical_or", other)

    def logical_xor(self, other: Tensor | Scalar) -> Tensor:
        """Elementwise logical XOR (nonzero is True): a bool tensor."""
        return self._no_grad_binary("logical_xor", other)

    # NDArray makes its unary methods with setattr (genesis_ndarray/ndarray.py), out of the type checker's
    # sight: hence the four ignores below, to drop once NDArray declares those methods.
    def logical_not(self) -> Tensor:
        """Elementwise logical NOT (zero becomes True): a bool tensor."""
        return self._result_type(self.data.logical_not())

    def isnan(self) -> Tensor:
        """A bool tensor, True where an element is NaN."""
        return self._result_type(self.data.isnan())

    def isinf(self) -> Tensor:
        """A bool tensor, True where an element is +inf or -inf."""
        return self._result_type(self.data.isinf())

    def isfinite(self) -> Tensor:
        """A bool tensor, True where an element is neither NaN nor infinite."""
        return self._result_type(self.data.isfinite())

    # ------------------------------------------------------------- unary math
    exp = _unary_method(Exp, "e ** x for each element x.")
    exp2 = _unary_method(Exp2, "2 ** x for each element x.")
    expm1 = _unary_method(Expm1, "e ** x - 1 for each element x, accurate near 0.")
    log = _unary_method(Log, "The natural logarithm of each element.")
    log2 = _unary_method(Log2, "The base-2 logarithm of each element.")
    log10 = _unary_method(Log10, "The base-10 logarithm of each element.")
    log1p = _unary_method(Log1p, "log(1 + x) for each element x, accurate near 0.")
    sqrt = _unary_method(Sqrt, "The square root of each element.")
    rsqrt = _unary_method(Rsqrt, "1 / sqrt(x) for each element x.")
    reciprocal = _unary_method(Reciprocal, "1 / x for each element x (integer inputs give the default float dtype).")
    square = _unary_method(Square, "x * x for each element x.")
    abs = _unary_method(Abs, "The absolute value of each element.")
    sin = _unary_method(Sin, "The sine of each element (in radians).")
    cos = _unary_method(Cos, "The cosine of each element (in radians).")
    tan = _unary_method(Tan, "The tangent of each element (in radians).")
    tanh = _unary_method(Tanh, "The hyperbolic tangent of each element.")
    sigmoid = _unary_method(Sigmoid, "The logistic sigmoid 1 / (1 + e ** -x) of each element.")
    relu = _unary_method(ReLU, "max(x, 0) for each element x.")

    def silu(self) -> Tensor:
        """x * sigmoid(x) for each element x (SiLU, also called swish)."""
        return Silu.apply(self)

    erf = _unary_method(Erf, "The error function of each element.")
    sign = _unary_method(Sign, "-1, 0 or 1 for each element by its sign (0 for 0).")
    floor = _unary_method(Floor, "The largest integer <= x for each element x (the gradient is zero).")
    ceil = _unary_method(Ceil, "The smallest integer >= x for each element x (the gradient is zero).")
    round = _unary_method(Round, "Each element rounded to the nearest integer, halves to even (the gradient is zero).")
    trunc = _unary_method(Trunc, "Each element rounded toward zero (the gradient is zero).")

    def gelu(self, approximate: str = "none") -> Tensor:
        """GELU of each element: x * Phi(x), Phi the standard normal CDF.

        Args:
            approximate: ``"none"`` for the exact erf form, ``"tanh"`` for the tanh approximation.
        """
        if approximate not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        return Gelu.apply(self) if approximate == "none" else GeluTanh.apply(self)

    # ------------------------------------------------------------- more binary math
    def atan2(self, other: Tensor) -> Tensor:
        """The angle atan(self / other) of each point (other, self), in (-pi, pi], by quadrant.

        Args:
            other: the x coordinates, a Tensor that broadcasts with self.
        """
        if not isinstance(other, self._result_type):
            raise TypeError(f"atan2(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        return Atan2.apply(self, other)

    arctan2 = atan2

    def remainder(self, other: Tensor | Scalar) -> Tensor:
        """Python's modulus, elementwise: the result has the sign of ``other`` (torch.remainder).

        Args:
            other: the divisor, a tensor or a number.
        """
        other = self._operand(other)
        return other if other is NotImplemented else Remainder.apply(self, other)

    def fmod(self, other: Tensor | Scalar) -> Tensor:
        """C's fmod, elementwise: the result has the sign of self.

        Args:
            other: the divisor, a tensor or a number.
        """
        other = self._operand(other)
        return other if other is NotImplemented else Fmod.apply(self, other)

    def floor_divide(self, other: Tensor | Scalar) -> Tensor:
        """self // other rounded toward -inf, elementwise (Python's //).

        Recorded like torch, which has no derivative for it: backward through it raises.
        """
        other = self._operand(other)
        return other if other is NotImplemented else FloorDivide.apply(self, other)

    __mod__ = remainder
    __floordiv__ = floor_divide

    def __rmod__(self, other: Scalar) -> Tensor:
        return Remainder.apply(other, self)

    def __rfloordiv__(self, other: Scalar) -> Tensor:
        return FloorDivide.apply(other, self)

    # ------------------------------------------------------------- ternary, clamp
    def where(self, condition: Tensor, other: Tensor | Scalar) -> Tensor:
        """self where ``condition`` is True, else ``other`` (torch's ``x.where(condition, y)``).

        Args:
            condition: a bool tensor that broadcasts with self and other.
            other: the values taken where condition is False.
        """
        return Where.apply(condition, self, other)

    def lerp(self, end: Tensor, weight: Tensor | Scalar) -> Tensor:
        """Linear interpolation self + weight * (end - self).

        Args:
            end: the tensor to interpolate toward, of self's dtype.
            weight: a number, or a tensor of self's dtype that broadcasts.
        """
        return Lerp.apply(self, end, weight)

    def addcmul(self, tensor1: Tensor, tensor2: Tensor, *, value: Scalar = 1) -> Tensor:
        """self + value * tensor1 * tensor2, elementwise and broadcast."""
        return Addcmul.apply(self, tensor1, tensor2, value)

    def addcdiv(self, tensor1: Tensor, tensor2: Tensor, *, value: Scalar = 1) -> Tensor:
        """self + value * tensor1 / tensor2, elementwise and broadcast."""
        return Addcdiv.apply(self, tensor1, tensor2, value)

    def clamp(self, min: Tensor | Scalar | None = None, max: Tensor | Scalar | None = None) -> Tensor:
        """Each element limited to [min, max]; the gradient flows where the element was kept.

        Args:
            min: the lower bound, or None for none.
            max: the upper bound, or None for none. Both numbers (or None), or both Tensors
                (or None) that broadcast with self, as torch.
        """
        if isinstance(min, self._result_type) or isinstance(max, self._result_type):
            if isinstance(min, Number) or isinstance(max, Number):
                raise TypeError(
                    "clamp() received an invalid combination of arguments: min and max must both be "
                    "Tensors (or None) or both numbers (or None)"
                )
            if min is None and max is None:
                raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
            return ClampTensor.apply(self, min, max)
        return Clamp.apply(self, min, max)

    clip = clamp

    def clamp_min(self, min: Tensor | Scalar) -> Tensor:
        """clamp(min=min): each element at least ``min``."""
        return self.clamp(min=min)

    def clamp_max(self, max: Tensor | Scalar) -> Tensor:
        """clamp(max=max): each element at most ``max``."""
        return self.clamp(max=max)

    # ------------------------------------------------------------- in-place forms
    def _binary_inplace(self, fn, op: str, other) -> Tensor:
        if isinstance(other, NDArray):
            other = self._result_type(other)
        refuse_narrowing(self.dtype, _inplace_result_dtype(self.dtype, other, true_division=op == "div"))
        needs = isinstance(other, self._result_type) and other.requires_grad
        return self._inplace(
            lambda: fn(self._snapshot(), other),
            lambda: getattr(self.data, f"{op}_")(other.data if isinstance(other, self._result_type) else other),
            needs_graph=needs,
        )

    def add_(self, other, *, alpha=1):
        return self._binary_inplace(Add.apply, "add", other * alpha if alpha != 1 else other)

    def sub_(self, other, *, alpha=1):
        return self._binary_inplace(Sub.apply, "sub", other * alpha if alpha != 1 else other)

    def mul_(self, other):
        return self._binary_inplace(Mul.apply, "mul", other)

    def div_(self, other, *, rounding_mode: str | None = None):
        if rounding_mode is not None:
            return self.divide_(other, rounding_mode=rounding_mode)  # type: ignore[attr-defined]  # MathMixin's
        return self._binary_inplace(Div.apply, "div", other)

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def _unary_inplace(self, method: str) -> Tensor:
        if method in _FLOAT_RESULT_UNARY and self.dtype.category < 2:
            refuse_narrowing(self.dtype, get_default_dtype())
        return self._inplace(
            lambda: getattr(self._snapshot(), method)(), lambda: self.data.copy_(getattr(self.data, method)())
        )

    def exp_(self) -> Tensor:
        return self._unary_inplace("exp")

    def log_(self) -> Tensor:
        return self._unary_inplace("log")

    def sqrt_(self) -> Tensor:
        return self._unary_inplace("sqrt")

    def relu_(self) -> Tensor:
        return self._unary_inplace("relu")

    def sigmoid_(self) -> Tensor:
        return self._unary_inplace("sigmoid")

    def tanh_(self) -> Tensor:
        return self._unary_inplace("tanh")

    def neg_(self) -> Tensor:
        return self._unary_inplace("neg")

    def abs_(self) -> Tensor:
        return self._unary_inplace("abs")

    def exp2_(self) -> Tensor:
        return self._math_inplace("exp2")

    def expm1_(self) -> Tensor:
        return self._math_inplace("expm1")

    def log2_(self) -> Tensor:
        return self._math_inplace("log2")

    def log10_(self) -> Tensor:
        return self._math_inplace("log10")

    def log1p_(self) -> Tensor:
        return self._math_inplace("log1p")

    def sin_(self) -> Tensor:
        return self._math_inplace("sin")

    def cos_(self) -> Tensor:
        return self._math_inplace("cos")

    def tan_(self) -> Tensor:
        return self._math_inplace("tan")

    def rsqrt_(self) -> Tensor:
        return self._math_inplace("rsqrt")

    def reciprocal_(self) -> Tensor:
        return self._math_inplace("reciprocal")

    def square_(self) -> Tensor:
        return self._math_inplace("square")

    def erf_(self) -> Tensor:
        return self._math_inplace("erf")

    def sign_(self) -> Tensor:
        return self._math_inplace("sign")

    def floor_(self) -> Tensor:
        return self._math_inplace("floor")

    def ceil_(self) -> Tensor:
        return self._math_inplace("ceil")

    def round_(self) -> Tensor:
        return self._math_inplace("round")

    def trunc_(self) -> Tensor:
        return self._math_inplace("trunc")

    def atan2_(self, other) -> Tensor:
        return self._math_inplace("atan2", other)

    def remainder_(self, other) -> Tensor:
        return self._math_inplace("remainder", other)

    def fmod_(self, other) -> Tensor:
        return self._math_inplace("fmod", other)

    def floor_divide_(self, other) -> Tensor:
        return self._math_inplace("floor_divide", other)

    def lerp_(self, end, weight) -> Tensor:
        return self._math_inplace("lerp", end, weight)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self._math_inplace("addcmul", tensor1, tensor2, value=value)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return self._math_inplace("addcdiv", tensor1, tensor2, value=value)

    def clamp_(self, min=None, max=None) -> Tensor:
        return self._math_inplace("clamp", min, max)

    def clamp_min_(self, min) -> Tensor:
        return self._math_inplace("clamp", min, None)

    def clamp_max_(self, max) -> Tensor:
        return self._math_inplace("clamp", None, max)

    def pow_(self, exponent) -> Tensor:
        return self._math_inplace("pow", exponent)

    clip_ = clamp_
