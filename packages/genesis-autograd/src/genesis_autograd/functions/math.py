"""More elementwise math, ternary ops, products, scans and triangles.

Every backward is written with Tensor ops, so it can itself be differentiated
(create_graph=True). Formulas follow torch's derivatives.yaml.
"""

from __future__ import annotations

import math

from genesis_ndarray import arange, ones

from .. import grad_mode
from ._util import Primitive, data, meta, reduce_to, saved_output, wrap
from .shape import Cat

LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
INV_SQRT2 = 1.0 / math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_TANH_C = 0.044715


# ------------------------------------------------------------------ unary
class _Unary(Primitive):
    """y = op(x), with dy/dx = ``slope(x, y)``. ``uses_output``: the slope reads y, kept from forward
    (and recomputed from x when the backward itself is recorded)."""

    op = ""
    uses_output = False

    @classmethod
    def run(cls, a):
        return a.data.unary(cls.op)

    @classmethod
    def forward(cls, ctx, a):
        out = cls.run(a)
        if ctx.records:
            ctx.save_for_backward(a)
            if cls.uses_output:
                ctx.out = out
        return out

    @classmethod
    def backward(cls, ctx, g):
        y = saved_output(ctx, g, cls.apply) if cls.uses_output else None
        (a,) = ctx.saved_tensors
        return g * cls.slope(a, y)

    @staticmethod
    def slope(x, y):
        raise NotImplementedError


class Exp2(_Unary):
    op, uses_output = "exp2", True
    slope = staticmethod(lambda x, y: y * LN2)


class Expm1(_Unary):
    op, uses_output = "expm1", True
    slope = staticmethod(lambda x, y: y + 1)


class Log2(_Unary):
    op = "log2"
    slope = staticmethod(lambda x, y: 1 / (x * LN2))


class Log10(_Unary):
    op = "log10"
    slope = staticmethod(lambda x, y: 1 / (x * LN10))


class Log1p(_Unary):
    op = "log1p"
    slope = staticmethod(lambda x, y: 1 / (x + 1))


class Tan(_Unary):
    op, uses_output = "tan", True
    slope = staticmethod(lambda x, y: 1 + y * y)


class Rsqrt(_Unary):
    op, uses_output = "rsqrt", True
    slope = staticmethod(lambda x, y: y * y * y * -0.5)


class Reciprocal(_Unary):
    op, uses_output = "reciprocal", True
    slope = staticmethod(lambda x, y: -(y * y))


class Square(_Unary):
    op = "square"
    slope = staticmethod(lambda x, y: x * 2)


class Erf(_Unary):
    op = "erf"
    slope = staticmethod(lambda x, y: (-(x * x)).exp() * TWO_OVER_SQRT_PI)


class Silu(_Unary):
    op = "silu"

    @staticmethod
    def slope(x, y):
        s = x.sigmoid()
        return s * (1 + x * (1 - s))


class Gelu(_Unary):
    """x * Phi(x): slope Phi(x) + x * phi(x)."""

    op = "gelu"

    @staticmethod
    def slope(x, y):
        cdf = ((x * INV_SQRT2).erf() + 1) * 0.5
        pdf = (x * x * -0.5).exp() * INV_SQRT_2PI
        return cdf + x * pdf


class GeluTanh(_Unary):
    """0.5 x (1 + tanh(k (x + c x^3))), torch's approximate="tanh"."""

    op = "gelu_tanh"

    @staticmethod
    def slope(x, y):
        x2 = x * x
        t = ((x + x2 * x * GELU_TANH_C) * SQRT_2_OVER_PI).tanh()
        return (t + 1) * 0.5 + x * (1 - t * t) * (SQRT_2_OVER_PI * 0.5) * (x2 * (3 * GELU_TANH_C) + 1)


# ------------------------------------------------------------------ binary
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
        return (reduce_to(scale * b, ma) if ctx.needs_input_grad[0] else None,
                reduce_to(-scale * a, mb) if ctx.needs_input_grad[1] else None)


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
            ctx.save_for_backward(a if ctx.needs_input_grad[1] and meta(a) is not None else None,
                                  b if ctx.needs_input_grad[1] and meta(b) is not None else None)
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


# ------------------------------------------------------------------ ternary
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
        return (reduce_to(g * (1 - w), ma) if need[0] else None,
                reduce_to(g * w, mb) if need[1] else None,
                reduce_to(g * (b - a), mw) if need[2] else None)


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
        return (reduce_to(g, mx) if need[0] else None,
                reduce_to(g * t2 * ctx.value, m1) if need[1] else None,
                reduce_to(g * t1 * ctx.value, m2) if need[2] else None,
                None)


class Addcdiv(Primitive):
    @staticmethod
    def forward(ctx, x, t1, t2, value):
        if ctx.records:
            ctx.metas = (meta(x), meta(t1), meta(t2))
            ctx.value = value
            ctx.save_for_backward(t1 if ctx.needs_input_grad[2] else None,
                                  t2 if ctx.needs_input_grad[1] or ctx.needs_input_grad[2] else None)
        return x.data.addcdiv(t1.data, t2.data, value)

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        mx, m1, m2 = ctx.metas
        need = ctx.needs_input_grad
        return (reduce_to(g, mx) if need[0] else None,
                reduce_to(g * ctx.value / t2, m1) if need[1] else None,
                reduce_to(-g * ctx.value * t1 / (t2 * t2), m2) if need[2] else None,
                None)


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
        return tuple(reduce_to(g.where(mask, zero), m) if n else None
                     for mask, m, n in zip(masks, (ma, ml, mh), need))


# ------------------------------------------------------------------ products and scans
def _to(t, dtype):
    return t if dtype is None else t.to(dtype)


class Prod(Primitive):
    """prod over one dim (or all). Without zeros the gradient is prod / x; with zeros (found with one
    read-back, as torch does) it is the product of the other elements, as exclusive products from both
    ends: exact, and itself differentiable."""

    @staticmethod
    def forward(ctx, a, dim, keepdim, dtype):
        out = a.data.prod(dim, keepdim, dtype)
        if ctx.records:
            ctx.save_for_backward(a)
            ctx.args = (dim, keepdim, dtype)
            ctx.out = out
        return out

    @staticmethod
    def backward(ctx, g):
        dim, keepdim, dtype = ctx.args
        y = saved_output(ctx, g, lambda a: a.prod(dim, keepdim, dtype=dtype))
        (a,) = ctx.saved_tensors
        x = _to(a, dtype)
        if x.ndim == 0:
            return g.to(a.dtype), None, None, None
        if dim is None:
            x, dim, g, y = x.reshape(-1), 0, g.reshape(1), y.reshape(1)
        elif not keepdim:
            g, y = g.unsqueeze(dim), y.unsqueeze(dim)
        dim %= x.ndim
        if (x == 0).any().item():
            grad = g * _exclusive_prod(x, dim, reverse=False) * _exclusive_prod(x, dim, reverse=True)
        else:
            grad = g * y / x
        return grad.reshape(*a.shape).to(a.dtype), None, None, None


def _ones_slice(x, dim: int):
    """Ones shaped like one slice of x along dim (size 1 there)."""
    return wrap(x, ones(*[1 if d == dim else s for d, s in enumerate(x.shape)], dtype=x.dtype, device=x.device))


def _exclusive_prod(x, dim: int, reverse: bool):
    """The product of the elements before (or, with reverse, after) each position along dim."""
    n = x.shape[dim]
    if reverse:
        return _flip(_exclusive_prod(_flip(x, dim), dim, False), dim)
    return Cat.apply(dim, _ones_slice(x, dim), x.narrow(dim, 0, n - 1)).cumprod(dim)


def _flip(t, dim: int):
    """t reversed along dim (a gather, so it is recorded like any index)."""
    index = wrap(t, arange(t.shape[dim] - 1, -1, -1, device=t.device))
    return t[(slice(None),) * dim + (index,)]


def _reverse_cumsum(t, dim: int):
    return _flip(_flip(t, dim).cumsum(dim), dim)


class Cumsum(Primitive):
    @staticmethod
    def forward(ctx, a, dim, dtype):
        out = a.data.cumsum(dim, dtype)
        if ctx.records:
            ctx.args = (dim % max(a.ndim, 1), a.dtype)
        return out

    @staticmethod
    def backward(ctx, g):
        dim, dtype = ctx.args
        if g.ndim == 0:
            return g.to(dtype), None, None
        return _reverse_cumsum(g, dim).to(dtype), None, None


class Cumprod(Primitive):
    """Without zeros: revcumsum(g * y) / x. With zeros (found with one read-back, as torch does):
    before a slice's first zero the same; at it, revcumsum(g * y') with y' the cumprod with that zero
    set to 1; after it, 0. When the backward is itself recorded, the zero case instead sums
    g_i * prod_{j <= i, j != k} x_j one position k at a time, which is differentiable again (as torch)."""

    @staticmethod
    def forward(ctx, a, dim, dtype):
        out = a.data.cumprod(dim, dtype)
        if ctx.records:
            ctx.save_for_backward(a)
            ctx.args = (dim % max(a.ndim, 1), dtype)
            ctx.out = out
        return out

    @staticmethod
    def backward(ctx, g):
        dim, dtype = ctx.args
        y = saved_output(ctx, g, lambda a: a.cumprod(dim, dtype=dtype))
        (a,) = ctx.saved_tensors
        if g.ndim == 0:
            return g.to(a.dtype), None, None
        x = _to(a, dtype)
        zero = x == 0
        if not zero.any().item():
            grad = _reverse_cumsum(g * y, dim) / x
        elif grad_mode.is_grad_enabled():
            grad = _cumprod_backward_by_position(x, g, dim)
        else:
            zeros_so_far = zero.cumsum(dim)
            first = zero.logical_and(zeros_so_far == 1)
            grad_before = _reverse_cumsum(g * y, dim) / x.where(zero.logical_not(), 1.0)
            grad_first = _reverse_cumsum(g * x.where(first.logical_not(), 1.0).cumprod(dim), dim)
            grad = grad_before.where(zeros_so_far == 0, grad_first.where(first, 0.0))
        return grad.to(a.dtype), None, None


def _cumprod_backward_by_position(x, g, dim: int):
    """grad_k = prod_{j<k} x_j * sum_{i>=k} g_i prod_{k<j<=i} x_j, one k at a time (no division)."""
    n = x.shape[dim]
    before = _exclusive_prod(x, dim, reverse=False)
    columns = []
    for k in range(n):
        after = Cat.apply(dim, _ones_slice(x, dim), x.narrow(dim, k + 1, n - k - 1).cumprod(dim)) if k + 1 < n \
            else _ones_slice(x, dim)
        columns.append((g.narrow(dim, k, n - k) * after).sum(dim, keepdim=True))
    return before * Cat.apply(dim, *columns)


class _Triangle(Primitive):
    op = ""

    @classmethod
    def forward(cls, ctx, a, diagonal):
        if ctx.records:
            ctx.diagonal = diagonal
        return getattr(a.data, cls.op)(diagonal)

    @classmethod
    def backward(cls, ctx, g):
        return getattr(g, cls.op)(ctx.diagonal), None


class Tril(_Triangle):
    op = "tril"


class Triu(_Triangle):
    op = "triu"
