"""Triangles: tril and triu (the gradient keeps the same triangle), and CreationMixin, their Tensor
methods. The factories (zeros, arange, eye, ...) make leaves and live in genesis_autograd/factories.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..tensor_base import TensorBase
from ._util import Primitive

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


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


class CreationMixin(TensorBase):
    __slots__ = ()

    def tril(self, diagonal: int = 0) -> Tensor:
        """A copy with the elements above the ``diagonal``-th diagonal of the last two dimensions zeroed."""
        return Tril.apply(self, diagonal)

    def triu(self, diagonal: int = 0) -> Tensor:
        """A copy with the elements below the ``diagonal``-th diagonal of the last two dimensions zeroed."""
        return Triu.apply(self, diagonal)

    def tril_(self, diagonal=0) -> Tensor:
        return self._math_inplace("tril", diagonal)

    def triu_(self, diagonal=0) -> Tensor:
        return self._math_inplace("triu", diagonal)
