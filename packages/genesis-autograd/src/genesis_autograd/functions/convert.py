"""dtype casts and device moves: the gradient goes back the same way."""

from __future__ import annotations

from ._util import Primitive, meta, reduce_to


class Cast(Primitive):
    @staticmethod
    def forward(ctx, a, dtype):
        ctx.dtype = a.dtype
        return a.data.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype), None


class ToDevice(Primitive):
    @staticmethod
    def forward(ctx, a, device, non_blocking):
        ctx.device = a.device
        return a.data.to(device, non_blocking=non_blocking)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.device), None, None


class Clone(Primitive):
    @staticmethod
    def forward(ctx, a):
        return a.data.clone()

    @staticmethod
    def backward(ctx, g):
        return g


class Contiguous(Primitive):
    @staticmethod
    def forward(ctx, a):
        return a.data.contiguous()

    @staticmethod
    def backward(ctx, g):
        return g


class Fill(Primitive):
    """out = a filled with a constant: nothing of ``a`` survives, so its gradient is zero."""

    @staticmethod
    def forward(ctx, a, value):
        return a.data.clone().fill_(value)

    @staticmethod
    def backward(ctx, g):
        return g * 0, None


class Copy(Primitive):
    """out = src broadcast into dst's shape and dtype (dst.copy_(src) as a graph node)."""

    @staticmethod
    def forward(ctx, dst, src):
        ctx.src_meta = meta(src)
        out = dst.data.clone()
        out.copy_(src.data)
        return out

    @staticmethod
    def backward(ctx, g):
        return (g * 0 if ctx.needs_input_grad[0] else None,
                reduce_to(g, ctx.src_meta) if ctx.needs_input_grad[1] else None)
