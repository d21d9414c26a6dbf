"""Layout ops. Views share their input's memory and version counter (``is_view``);
their backward maps the gradient back through the inverse layout."""

from __future__ import annotations

from genesis_ndarray import empty, promote_types, zeros
from genesis_ndarray.shape import normalize_dim

from ._util import Primitive, data, meta, reduce_to, wrap


class Reshape(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = tuple(a.shape)
        return a.data.reshape(*shape)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(*ctx.in_shape), None


class View(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = tuple(a.shape)
        return a.data.view(*shape)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(*ctx.in_shape), None


class Permute(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, dims):
        nd = a.ndim
        ctx.dims = tuple(normalize_dim(d, nd) for d in dims)
        return a.data.permute(*dims)

    @staticmethod
    def backward(ctx, g):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return g.permute(*inverse), None


class Transpose(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, d0, d1):
        ctx.dims = (d0, d1)
        return a.data.transpose(d0, d1)

    @staticmethod
    def backward(ctx, g):
        return g.transpose(*ctx.dims), None, None


class Expand(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        ctx.target = meta(a)
        return a.data.expand(*shape)

    @staticmethod
    def backward(ctx, g):
        return reduce_to(g, ctx.target), None


class Squeeze(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, dim):
        ctx.in_shape = tuple(a.shape)
        return a.data.squeeze(dim)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(*ctx.in_shape), None


class Unsqueeze(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, dim):
        ctx.in_shape = tuple(a.shape)
        return a.data.unsqueeze(dim)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(*ctx.in_shape), None


class Flatten(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, start, end):
        ctx.in_shape = tuple(a.shape)
        return a.data.flatten(start, end)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(*ctx.in_shape), None, None


class Narrow(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, dim, start, length):
        ctx.saved_meta = (tuple(a.shape), a.dtype, a.device)
        ctx.args = (normalize_dim(dim, a.ndim), start, length)
        return a.data.narrow(dim, start, length)

    @staticmethod
    def backward(ctx, g):
        shape, dtype, device = ctx.saved_meta
        dim, start, length = ctx.args
        index = (slice(None),) * dim + (slice(start, start + length),)
        return _scatter_into_zeros(g, shape, dtype, device, index), None, None, None


def _scatter_into_zeros(g, shape, dtype, device, index):
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
        return _scatter_into_zeros(g, shape, dtype, device, ctx.index), None


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


class Cat(Primitive):
    @staticmethod
    def forward(ctx, dim, *tensors):
        first = tensors[0]
        dim = normalize_dim(dim, first.ndim)
        for t in tensors[1:]:
            if t.ndim != first.ndim or any(
                s != f for i, (s, f) in enumerate(zip(t.shape, first.shape)) if i != dim
            ):
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size "
                    f"{list(first.shape)} but got size {list(t.shape)} for a tensor in the list"
                )
            if t.device != first.device:
                raise RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two devices, "
                    f"{first.device} and {t.device}!"
                )
        sizes = [t.shape[dim] for t in tensors]
        shape = list(first.shape)
        shape[dim] = sum(sizes)
        dtype = first.dtype
        for t in tensors[1:]:
            dtype = promote_types(dtype, t.dtype)
        out = empty(*shape, dtype=dtype, device=first.device)
        start = 0
        for t, size in zip(tensors, sizes):
            out[(slice(None),) * dim + (slice(start, start + size),)] = t.data
            start += size
        ctx.split = (dim, sizes, [t.dtype for t in tensors])
        return out

    @staticmethod
    def backward(ctx, g):
        dim, sizes, dtypes = ctx.split
        grads, start = [None], 0
        for size, dtype in zip(sizes, dtypes):
            grads.append(g.narrow(dim, start, size).to(dtype))
            start += size
        return tuple(grads)

