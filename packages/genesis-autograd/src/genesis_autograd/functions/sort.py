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

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False):
        """(values, indices), named like torch.return_types.sort."""
        return ValuesIndices(*Sort.apply(self, dim, descending, stable))

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        return self._result_type(self.data.argsort(dim, descending, stable))

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        """(values, indices) of the k largest (or smallest) along dim, named like torch.return_types.topk."""
        return ValuesIndices(*TopK.apply(self, k, dim, largest, sorted))
