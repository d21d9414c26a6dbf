"""Elementwise ops. Binary rules sum the gradient back over broadcast dims."""

from __future__ import annotations

import math

from genesis_ndarray import full

from ._util import Primitive, data, meta, reduce_to, saved_output


class Add(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
        return data(a) + data(b)

    @staticmethod
    def backward(ctx, g):
        ma, mb = ctx.metas
        return (reduce_to(g, ma) if ctx.needs_input_grad[0] else None,
                reduce_to(g, mb) if ctx.needs_input_grad[1] else None)


class Sub(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:
            ctx.metas = (meta(a), meta(b))
        return data(a) - data(b)

    @staticmethod
    def backward(ctx, g):
        ma, mb = ctx.metas
        return (reduce_to(g, ma) if ctx.needs_input_grad[0] else None,
                reduce_to(-g, mb) if ctx.needs_input_grad[1] else None)


class Mul(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:
            ma, mb = ctx.metas = (meta(a), meta(b))
            # Each operand is needed only for the other's gradient.
            ctx.save_for_backward(a if ma is not None and ctx.needs_input_grad[1] else None,
                                  b if mb is not None and ctx.needs_input_grad[0] else None)
            ctx.scalars = (a if ma is None else None, b if mb is None else None)
        return data(a) * data(b)

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
            gb = reduce_to(g * (a ** b) * _log(a), mb)
        return ga, gb


def _log(x):
    return x.log() if hasattr(x, "grad_fn") else math.log(x)


class Neg(Primitive):
    @staticmethod
    def forward(ctx, a):
        return -a.data

    @staticmethod
    def backward(ctx, g):
        return -g


class Exp(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        ctx.out = a.data.exp()
        return ctx.out

    @staticmethod
    def backward(ctx, g):
        return g * saved_output(ctx, g, lambda a: a.exp())


class Log(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.data.log()

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / a


class Sqrt(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        ctx.out = a.data.sqrt()
        return ctx.out

    @staticmethod
    def backward(ctx, g):
        return g / (saved_output(ctx, g, lambda a: a.sqrt()) * 2)


class Tanh(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        ctx.out = a.data.tanh()
        return ctx.out

    @staticmethod
    def backward(ctx, g):
        y = saved_output(ctx, g, lambda a: a.tanh())
        return g * (1 - y * y)


class Sigmoid(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        ctx.out = a.data.sigmoid()
        return ctx.out

    @staticmethod
    def backward(ctx, g):
        y = saved_output(ctx, g, lambda a: a.sigmoid())
        return g * y * (1 - y)


class ReLU(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.data.relu()

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * (a > 0).to(g.dtype)


class Abs(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.data.abs()

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * a.sign()


class Sin(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.data.sin()

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * a.cos()


class Cos(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.data.cos()

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return -g * a.sin()


class Unary(Primitive):
    """Piecewise-constant ops (sign, floor, ceil, round, trunc): zero gradient, as torch."""

    @staticmethod
    def forward(ctx, a, op):
        return a.data.unary(op)

    @staticmethod
    def backward(ctx, g):
        return g * 0, None


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
