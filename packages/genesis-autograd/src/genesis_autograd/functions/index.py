"""Index ops: gather, scatter, scatter_add, index_select, index_add, masked_fill, masked_select,
take_along_dim (nonzero has no gradient); and IndexMixin, their Tensor methods and in-place forms.

Each backward sends the gradient back through the same indices with the dual op (gather <->
scatter_add, index_select <-> index_add, masked_select -> a masked write into zeros), written
with Tensor ops so that it can itself be differentiated. Index tensors and masks carry no
gradient; they are saved with save_for_backward, so an in-place change to them before backward
raises. Index and mask arguments are Tensors on the indexed tensor's device.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from genesis_ndarray import NDArray, zeros
from genesis_ndarray.shape import broadcast_shapes, normalize_dim

from ..tensor_base import Scalar, TensorBase
from ._util import Primitive, data, meta, plain, reduce_to, requires_grad, tensor_arg, wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


def zeros_like_input(like, target, device):
    """A zero Tensor (of ``like``'s class) of an input's (shape, dtype), outside the graph."""
    shape, dtype = target
    return wrap(like, zeros(*shape, dtype=dtype, device=device))


def _src_grad(g, dim, index, target):
    """gather(g, dim, index) as the gradient of a scatter's src: src may be larger than index
    (only its leading block is read), so the rest of its gradient is zero."""
    got = Gather.apply(g, dim, index)
    shape = target[0]
    if tuple(got.shape) != shape:
        if got.numel() == math.prod(shape):  # a 0-d src with a one-element index
            got = got.reshape(shape)
        else:
            pad = zeros_like_input(g, target, g.device)
            pad[tuple(slice(0, s) for s in got.shape)] = got
            got = pad
    return reduce_to(got, target)


class Gather(Primitive):
    """out[..., i, ...] = a[..., index[..., i, ...], ...] along dim."""

    @staticmethod
    def forward(ctx, a, dim, index):
        if ctx.records:
            ctx.geometry = (meta(a), a.device, dim)
            ctx.save_for_backward(index)
        return a.data.gather(dim, index.data)

    @staticmethod
    def backward(ctx, g):
        target, device, dim = ctx.geometry
        (index,) = ctx.saved_tensors
        return ScatterAdd.apply(zeros_like_input(g, target, device), dim, index, g), None, None


class Scatter(Primitive):
    """out = a with out[..., index[i], ...] = src[i] along dim (src a Tensor or a scalar).
    The overwritten slots of ``a`` get zero gradient; src[i] gets the gradient of its slot."""

    @staticmethod
    def forward(ctx, a, dim, index, src):
        if ctx.records:
            ctx.geometry = (dim, meta(src))
            ctx.save_for_backward(index)
        return a.data.scatter(dim, index.data, data(src))

    @staticmethod
    def backward(ctx, g):
        dim, src_meta = ctx.geometry
        (index,) = ctx.saved_tensors
        ga = Scatter.apply(g, dim, index, 0) if ctx.needs_input_grad[0] else None
        gs = _src_grad(g, dim, index, src_meta) if ctx.needs_input_grad[3] else None
        return ga, None, None, gs


class ScatterAdd(Primitive):
    """out = a with out[..., index[i], ...] += src[i] along dim (repeated indices add up)."""

    @staticmethod
    def forward(ctx, a, dim, index, src):
        if ctx.records:
            ctx.geometry = (dim, meta(src))
            ctx.save_for_backward(index)
        return a.data.scatter_add(dim, index.data, src.data)

    @staticmethod
    def backward(ctx, g):
        dim, src_meta = ctx.geometry
        (index,) = ctx.saved_tensors
        gs = _src_grad(g, dim, index, src_meta) if ctx.needs_input_grad[3] else None
        return g, None, None, gs


class IndexSelect(Primitive):
    """Slices of ``a`` along dim picked by a 1-d index; a repeated index sums its gradients."""

    @staticmethod
    def forward(ctx, a, dim, index):
        if ctx.records:
            ctx.geometry = (meta(a), a.device, dim)
            ctx.save_for_backward(index)
        return a.data.index_select(dim, index.data)

    @staticmethod
    def backward(ctx, g):
        target, device, dim = ctx.geometry
        (index,) = ctx.saved_tensors
        return IndexAdd.apply(zeros_like_input(g, target, device), dim, index, g, 1), None, None


class IndexAdd(Primitive):
    """out = a with out[..., index[j], ...] += alpha * source[..., j, ...]."""

    @staticmethod
    def forward(ctx, a, dim, index, source, alpha):
        if ctx.records:
            ctx.geometry = (dim, alpha)
            ctx.save_for_backward(index)
        return a.data.index_add(dim, index.data, source.data, alpha)

    @staticmethod
    def backward(ctx, g):
        dim, alpha = ctx.geometry
        (index,) = ctx.saved_tensors
        gs = None
        if ctx.needs_input_grad[3]:
            gs = IndexSelect.apply(g, dim, index)
            if alpha != 1:
                gs = gs * alpha
        return g, None, None, gs, None


class MaskedFill(Primitive):
    """out = a with ``value`` where mask holds. Out of place, a and mask broadcast together;
    ``inplace`` keeps a's shape (the mask must broadcast to it), as masked_fill_. A 0-d value
    Tensor gets the sum of the gradient over the filled slots."""

    @staticmethod
    def forward(ctx, a, mask, value, inplace):
        if ctx.records:
            ctx.metas = (meta(a), meta(value))
            ctx.value_device = getattr(value, "device", None)  # a 0-d cpu value may fill a cuda tensor
            ctx.save_for_backward(mask)
        if inplace:
            return a.data.clone().masked_fill_(mask.data, data(value))
        return a.data.masked_fill(mask.data, data(value))

    @staticmethod
    def backward(ctx, g):
        ma, mv = ctx.metas
        (mask,) = ctx.saved_tensors
        ga = reduce_to(MaskedFill.apply(g, mask, 0, True), ma) if ctx.needs_input_grad[0] else None
        gv = None
        if ctx.needs_input_grad[2]:
            gv = reduce_to(MaskedFill.apply(g, ~mask, 0, True).sum(), mv).to(device=ctx.value_device)
        return ga, None, gv, None


class MaskedSelect(Primitive):
    """The elements of ``a`` where mask holds (both broadcast), as a 1-d tensor."""

    @staticmethod
    def forward(ctx, a, mask):
        if ctx.records:
            ctx.geometry = (meta(a), a.device, broadcast_shapes(a.shape, mask.shape))
            ctx.save_for_backward(mask)
        return a.data.masked_select(mask.data)

    @staticmethod
    def backward(ctx, g):
        target, device, shape = ctx.geometry
        (mask,) = ctx.saved_tensors
        out = zeros_like_input(g, (shape, target[1]), device)
        out[mask.expand(*shape)] = g  # row-major, the order masked_select read in
        return reduce_to(out, target), None


class TakeAlongDim(Primitive):
    """gather with index broadcast against ``a`` (over every dim but ``dim``; or flattened)."""

    @staticmethod
    def forward(ctx, a, indices, dim):
        out = a.data.take_along_dim(indices.data, dim)
        if ctx.records:
            ctx.geometry = (meta(a), a.device, None if dim is None else normalize_dim(dim, a.ndim))
            ctx.save_for_backward(indices)
        return out

    @staticmethod
    def backward(ctx, g):
        target, device, dim = ctx.geometry
        (indices,) = ctx.saved_tensors
        shape = target[0]
        if dim is None or not shape:
            flat = zeros_like_input(g, ((math.prod(shape),), target[1]), device)
            return ScatterAdd.apply(flat, 0, indices.reshape(-1), g.reshape(-1)).reshape(shape), None, None
        # the broadcast shapes of the forward's gather: g's, with dim's size of a and of indices
        broadcast = tuple(g.shape[:dim]) + (shape[dim],) + tuple(g.shape[dim + 1 :])
        index = wrap(g, indices.data.expand(*g.shape))
        grad = ScatterAdd.apply(zeros_like_input(g, (broadcast, target[1]), device), dim, index, g)
        return reduce_to(grad, target), None, None


def _scatter_src(self, src, value, reduce):
    """scatter's source: ``src`` (a Tensor or a scalar) or ``value=`` (a scalar)."""
    if reduce is not None:
        raise NotImplementedError("scatter with reduce= is not supported (use scatter_add)")
    if (src is None) == (value is None):
        raise TypeError("scatter() needs exactly one of src and value")
    src = value if src is None else src
    return self._result_type(src) if isinstance(src, NDArray) else src


def _fill_value(self, value):
    """masked_fill's value: a number, or a 0-d Tensor (an NDArray is wrapped), which then gets a gradient."""
    return self._result_type(value) if isinstance(value, NDArray) else value


class IndexMixin(TensorBase):
    """Tensor's index ops. In-place forms go through Tensor._inplace like add_."""

    __slots__ = ()

    def gather(self, dim: int, index: Tensor) -> Tensor:
        """Values picked along ``dim`` by ``index``: out[i][j] = self[index[i][j]][j] for dim=0.

        Args:
            dim: the dimension to index along.
            index: an int64 tensor with as many dimensions as self; the output has its shape.
        """
        return Gather.apply(self, dim, tensor_arg(self, index, "gather", "index"))

    def scatter(
        self,
        dim: int,
        index: Tensor,
        src: Tensor | Scalar | None = None,
        *,
        value: Scalar | None = None,
        reduce: str | None = None,
    ) -> Tensor:
        """A copy of self with values written along ``dim`` at ``index``: out[index[i][j]][j] = src[i][j]
        for dim=0.

        Args:
            dim: the dimension to index along.
            index: an int64 tensor with as many dimensions as self.
            src: the values to write (a tensor, read where index has elements, or a number).
            value: a number to write, instead of ``src``.
            reduce: not supported (must be None; use scatter_add to add).
        """
        return Scatter.apply(
            self, dim, tensor_arg(self, index, "scatter", "index"), _scatter_src(self, src, value, reduce)
        )

    def scatter_(
        self,
        dim: int,
        index: Tensor,
        src: Tensor | Scalar | None = None,
        *,
        value: Scalar | None = None,
        reduce: str | None = None,
    ) -> Tensor:
        """In-place version of :meth:`scatter`."""
        index, src = tensor_arg(self, index, "scatter_", "index"), _scatter_src(self, src, value, reduce)
        return self._inplace(
            lambda: Scatter.apply(self._snapshot(), dim, index, src),
            lambda: self.data.scatter_(dim, index.data, plain(src)),
            needs_graph=requires_grad(src),
        )

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """A copy of self with ``src`` added along ``dim`` at ``index`` (repeated indices add up):
        out[index[i][j]][j] += src[i][j] for dim=0.
        """
        return ScatterAdd.apply(
            self, dim, tensor_arg(self, index, "scatter_add", "index"), tensor_arg(self, src, "scatter_add", "src")
        )

    def scatter_add_(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """In-place version of :meth:`scatter_add`."""
        index, src = tensor_arg(self, index, "scatter_add_", "index"), tensor_arg(self, src, "scatter_add_", "src")
        return self._inplace(
            lambda: ScatterAdd.apply(self._snapshot(), dim, index, src),
            lambda: self.data.scatter_add_(dim, index.data, src.data),
            needs_graph=src.requires_grad,
        )

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        """The slices of self at the positions ``index`` (a 1-D int64 tensor) along ``dim``."""
        return IndexSelect.apply(self, dim, tensor_arg(self, index, "index_select", "index"))

    def index_add(self, dim: int, index: Tensor, source: Tensor, *, alpha: Scalar = 1) -> Tensor:
        """A copy of self with ``alpha * source`` added to the slices at ``index`` (1-D, int64) along ``dim``;
        repeated indices add up.
        """
        return IndexAdd.apply(
            self,
            dim,
            tensor_arg(self, index, "index_add", "index"),
            tensor_arg(self, source, "index_add", "source"),
            alpha,
        )

    def index_add_(self, dim: int, index: Tensor, source: Tensor, *, alpha: Scalar = 1) -> Tensor:
        """In-place version of :meth:`index_add`."""
        index = tensor_arg(self, index, "index_add_", "index")
        source = tensor_arg(self, source, "index_add_", "source")
        return self._inplace(
            lambda: IndexAdd.apply(self._snapshot(), dim, index, source, alpha),
            lambda: self.data.index_add_(dim, index.data, source.data, alpha),
            needs_graph=source.requires_grad,
        )

    def masked_fill(self, mask: Tensor, value: Tensor | Scalar) -> Tensor:
        """A copy of self with ``value`` where ``mask`` (a bool tensor that broadcasts) is True.

        ``value`` is a number, or a 0-d tensor, which then gets a gradient.
        """
        return MaskedFill.apply(self, tensor_arg(self, mask, "masked_fill", "mask"), _fill_value(self, value), False)

    def masked_fill_(self, mask: Tensor, value: Tensor | Scalar) -> Tensor:
        """In-place version of :meth:`masked_fill`."""
        mask, value = tensor_arg(self, mask, "masked_fill_", "mask"), _fill_value(self, value)
        return self._inplace(
            lambda: MaskedFill.apply(self._snapshot(), mask, value, True),
            lambda: self.data.masked_fill_(mask.data, plain(value)),
            needs_graph=requires_grad(value),
        )

    def masked_select(self, mask: Tensor) -> Tensor:
        """The elements where ``mask`` (a bool tensor that broadcasts) is True, as a 1-D tensor."""
        return MaskedSelect.apply(self, tensor_arg(self, mask, "masked_select", "mask"))

    def nonzero(self, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
        """The indices of the nonzero elements: an int64 tensor of shape (n, ndim), or with
        ``as_tuple=True`` one 1-D tensor per dimension.
        """
        out = self.data.nonzero(as_tuple)
        return tuple(self._result_type(o) for o in out) if as_tuple else self._result_type(out)

    def take_along_dim(self, indices: Tensor, dim: int | None = None) -> Tensor:
        """Values picked along ``dim`` by ``indices`` (which broadcast with self), as numpy's
        take_along_axis; without ``dim``, from the flattened tensor.
        """
        return TakeAlongDim.apply(self, tensor_arg(self, indices, "take_along_dim", "indices"), dim)
