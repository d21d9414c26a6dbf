"""Scans: cumsum and cumprod, and ScanMixin, their Tensor methods.

The exclusive products here also serve prod's backward (reduce.py) where the input holds zeros.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from genesis_ndarray import arange, as_dtype, ones

from .. import grad_mode
from ..tensor_base import TensorBase
from ._util import Primitive, saved_output, wrap
from .views import Cat

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from genesis_ndarray import DType

    from ..tensor import Tensor


def to_dtype(t, dtype):
    """t in ``dtype``; t itself for None."""
    return t if dtype is None else t.to(dtype)


def _ones_slice(x, dim: int):
    """Ones shaped like one slice of x along dim (size 1 there)."""
    return wrap(x, ones(*[1 if d == dim else s for d, s in enumerate(x.shape)], dtype=x.dtype, device=x.device))


def exclusive_prod(x, dim: int, reverse: bool):
    """The product of the elements before (or, with reverse, after) each position along dim."""
    n = x.shape[dim]
    if reverse:
        return _flip(exclusive_prod(_flip(x, dim), dim, False), dim)
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
        x = to_dtype(a, dtype)
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
    before = exclusive_prod(x, dim, reverse=False)
    columns = []
    for k in range(n):
        after = (
            Cat.apply(dim, _ones_slice(x, dim), x.narrow(dim, k + 1, n - k - 1).cumprod(dim))
            if k + 1 < n
            else _ones_slice(x, dim)
        )
        columns.append((g.narrow(dim, k, n - k) * after).sum(dim, keepdim=True))
    return before * Cat.apply(dim, *columns)


class ScanMixin(TensorBase):
    """Tensor's scans; the in-place forms write the out-of-place result back (Tensor._math_inplace)."""

    __slots__ = ()

    def cumsum(self, dim: int, dtype: DType | str | None = None) -> Tensor:
        """The cumulative sum along ``dim``: out[i] = self[0] + ... + self[i]; ``dtype`` to compute in."""
        return Cumsum.apply(self, dim, None if dtype is None else as_dtype(dtype))

    def cumprod(self, dim: int, dtype: DType | str | None = None) -> Tensor:
        """The cumulative product along ``dim``: out[i] = self[0] * ... * self[i]; ``dtype`` to compute in."""
        return Cumprod.apply(self, dim, None if dtype is None else as_dtype(dtype))

    def cumsum_(self, dim, dtype=None) -> Tensor:
        return self._math_inplace("cumsum", dim, dtype)

    def cumprod_(self, dim, dtype=None) -> Tensor:
        return self._math_inplace("cumprod", dim, dtype)
