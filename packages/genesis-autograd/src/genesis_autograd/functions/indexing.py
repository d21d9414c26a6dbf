"""Indexing, selection and sorting. Each backward sends the gradient back through the same
indices with the dual op (gather <-> scatter_add, index_select <-> index_add, masked_select ->
a masked write into zeros, sort / topk -> a scatter), written with Tensor ops so that it can
itself be differentiated. Index tensors, masks and sort indices carry no gradient; they are
saved with save_for_backward, so an in-place change to them before backward raises."""

from __future__ import annotations

import math

from genesis_ndarray import zeros
from genesis_ndarray.shape import broadcast_shapes, normalize_dim

from ._util import Primitive, data, meta, reduce_to, wrap


def _zeros(like, target, device):
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
            pad = _zeros(g, target, g.device)
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
        return ScatterAdd.apply(_zeros(g, target, device), dim, index, g), None, None


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
        return IndexAdd.apply(_zeros(g, target, device), dim, index, g, 1), None, None


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
        out = _zeros(g, (shape, target[1]), device)
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
            flat = _zeros(g, ((math.prod(shape),), target[1]), device)
            return ScatterAdd.apply(flat, 0, indices.reshape(-1), g.reshape(-1)).reshape(shape), None, None
        # the broadcast shapes of the forward's gather: g's, with dim's size of a and of indices
        broadcast = tuple(g.shape[:dim]) + (shape[dim],) + tuple(g.shape[dim + 1:])
        index = wrap(g, indices.data.expand(*g.shape))
        grad = ScatterAdd.apply(_zeros(g, (broadcast, target[1]), device), dim, index, g)
        return reduce_to(grad, target), None, None


class _Selection(Primitive):
    """sort / topk: (values, indices); each value's gradient goes back to where it came from."""

    @staticmethod
    def backward(ctx, g, _g_indices):
        target, device, dim = ctx.geometry
        grad = Scatter.apply(_zeros(g, target, device), dim, wrap(g, ctx.indices), g)
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
