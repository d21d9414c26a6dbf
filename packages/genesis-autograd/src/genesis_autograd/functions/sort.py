"""Sorting: sort and topk (values and indices; each value's gradient goes back to where it came
from, by a scatter), argsort (no gradient); and SortMixin, their Tensor methods."""

from __future__ import annotations

from typing import TYPE_CHECKING

from genesis_ndarray.shape import normalize_dim

from ..tensor_base import TensorBase
from ._util import Primitive, ValuesIndices, meta, wrap
from .index import Scatter, zeros_like_input

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


class _Selection(Primitive):
    """sort / topk: (values, indices); each value's gradient goes back to where it came from."""

    @staticmethod
    def backward(ctx, g, _g_indices):
        target, device, dim = ctx.geometry
        grad = Scatter.apply(zeros_like_input(g, target, device), dim, wrap(g, ctx.indices), g)
        return (grad,) + (None,) * ctx.n_args


class Sort(_Selection):
    @staticmethod
    def forward(ctx, a, dim, descending, stable):
        values, indices = a.data.sort(dim, descending, stable)
        if ctx.records:
            ctx.geometry = (meta(a), a.device, normalize_dim(dim, a.ndim))
            ctx.indices, ctx.n_args = indices, 3
        ctx.mark_non_differentiable(1)
        return values, indices


class TopK(_Selection):
    @staticmethod
    def forward(ctx, a, k, dim, largest, sorted):
        values, indices = a.data.topk(k, dim, largest, sorted)
        if ctx.records:
            ctx.geometry = (meta(a), a.device, normalize_dim(dim, a.ndim))
            ctx.indices, ctx.n_args = indices, 4
        ctx.mark_non_differentiable(1)
        return values, indices


class SortMixin(TensorBase):
    __slots__ = ()

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> tuple[Tensor, Tensor]:
        """The elements sorted along ``dim``: the named tuple (values, indices), indices int64.

        Args:
            dim: the dimension to sort along.
            descending: largest first.
            stable: keep the order of equal elements.
        """
        return ValuesIndices(*Sort.apply(self, dim, descending, stable))

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        """The int64 indices that sort self along ``dim`` (see ``sort``)."""
        return self._result_type(self.data.argsort(dim, descending, stable))

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[Tensor, Tensor]:
        """The ``k`` largest (or smallest) elements along ``dim``: the named tuple (values, indices).

        Args:
            k: how many.
            dim: the dimension to search.
            largest: the largest (True) or the smallest (False).
            sorted: return them in sorted order.
        """
        return ValuesIndices(*TopK.apply(self, k, dim, largest, sorted))
