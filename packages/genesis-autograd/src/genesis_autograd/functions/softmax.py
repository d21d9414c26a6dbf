"""softmax and log_softmax, and SoftmaxMixin, their Tensor methods.

The plain backward is one fused NDArray op (softmax_backward); a backward that is itself recorded
(create_graph=True, or a gradient that requires grad) is written with Tensor ops instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..tensor_base import TensorBase
from ._util import Primitive, backward_recorded, check_output_version, saved_output, wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


class Softmax(Primitive):
    @staticmethod
    def forward(ctx, a, dim):
        ctx.save_for_backward(a)
        ctx.dim = dim
        ctx.out = a.data.softmax(dim)
        return ctx.out

    @staticmethod
    def backward(ctx, g):
        if backward_recorded(g):
            y = saved_output(ctx, g, lambda a: a.softmax(ctx.dim))
            return y * (g - (g * y).sum(ctx.dim, keepdim=True)), None
        check_output_version(ctx)
        return wrap(g, ctx.out.softmax_backward(g.data, ctx.dim, log=False)), None


class LogSoftmax(Primitive):
    @staticmethod
    def forward(ctx, a, dim):
        ctx.save_for_backward(a)
        ctx.dim = dim
        ctx.out = a.data.log_softmax(dim)
        return ctx.out

    @staticmethod
    def backward(ctx, g):
        if backward_recorded(g):
            y = saved_output(ctx, g, lambda a: a.log_softmax(ctx.dim))
            return g - y.exp() * g.sum(ctx.dim, keepdim=True), None
        check_output_version(ctx)
        return wrap(g, ctx.out.softmax_backward(g.data, ctx.dim, log=True)), None


class SoftmaxMixin(TensorBase):
    __slots__ = ()

    def softmax(self, dim: int) -> Tensor:
        """exp(x) / sum(exp(x)) along ``dim``, computed without overflow."""
        return Softmax.apply(self, dim)

    def log_softmax(self, dim: int) -> Tensor:
        """log(softmax(x)) along ``dim``, computed stably (x - logsumexp(x))."""
        return LogSoftmax.apply(self, dim)
