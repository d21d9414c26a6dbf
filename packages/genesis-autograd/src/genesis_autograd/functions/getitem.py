"""Indexing with [] : x[index] (basic indices give a view, advanced ones a gathered copy) and
x[index] = value (an in-place write); and GetitemMixin, the two Tensor methods.

Both backwards send the gradient through the same index: a read's gradient is added into zeros
(repeated indices accumulate), a write's gradient is zero in the overwritten slots."""

from __future__ import annotations

from typing import TYPE_CHECKING

from genesis_ndarray import NDArray, zeros

from ..tensor_base import TensorBase
from ._util import Primitive, data, is_tensor, meta, reduce_to, wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


def scatter_into_zeros(g, shape, dtype, device, index):
    """zeros(shape) with g added at ``index`` (repeated indices accumulate)."""
    if g.requires_grad:  # differentiating the backward: stay inside the graph
        return SetItem.apply(wrap(g, zeros(*shape, dtype=dtype, device=device)), index, g)
    out = zeros(*shape, dtype=dtype, device=device)
    out.index_put_(index, g.data, accumulate=True)
    return wrap(g, out)


def _unwrap(index):
    if isinstance(index, tuple):
        return tuple(_unwrap(i) for i in index)
    return index.data if hasattr(index, "grad_fn") else index


class GetItem(Primitive):
    @staticmethod
    def forward(ctx, a, index):
        index = _unwrap(index)
        ctx.saved_meta = (tuple(a.shape), a.dtype, a.device)
        ctx.index = index
        return a.data[index]

    @staticmethod
    def backward(ctx, g):
        shape, dtype, device = ctx.saved_meta
        return scatter_into_zeros(g, shape, dtype, device, ctx.index), None


class BasicGetItem(GetItem):
    """x[ints, slices, None, ...]: a view of x."""

    is_view = True


class SetItem(Primitive):
    """out = a with out[index] = value. Overwritten slots of ``a`` get zero gradient."""

    @staticmethod
    def forward(ctx, a, index, value):
        index = _unwrap(index)
        ctx.index = index
        ctx.value_meta = meta(value)
        out = a.data.clone()
        out[index] = data(value)
        return out

    @staticmethod
    def backward(ctx, g):
        ga = gv = None
        if ctx.needs_input_grad[0]:
            ga = g.clone()
            ga.data[ctx.index] = 0
        if ctx.needs_input_grad[2]:
            gv = reduce_to(g[ctx.index], ctx.value_meta)
        return ga, None, gv


def _is_basic_index(index) -> bool:
    """ints, slices, None and Ellipsis only: the result is a view."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or (isinstance(i, int | slice) and not isinstance(i, bool)) for i in items)


class GetitemMixin(TensorBase):
    __slots__ = ()

    def __getitem__(self, index) -> Tensor:
        if _is_basic_index(index):
            return BasicGetItem.apply(self, index)
        return GetItem.apply(self, index)

    def __setitem__(self, index, value) -> None:
        if isinstance(value, NDArray):
            value = self._result_type(value)
        if is_tensor(value) and value.device != self.device:
            value = value.to(device=self.device)
        self._inplace(
            lambda: SetItem.apply(self._snapshot(), index, value),
            lambda: self.data.__setitem__(_unwrap(index), value.data if is_tensor(value) else value),
            needs_graph=is_tensor(value) and value.requires_grad,
        )
