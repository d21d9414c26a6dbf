"""Views beyond reshape and permute: diagonal, unfold, as_strided, and the record of an
in-place write through a view (CopySlices).

diagonal and unfold share memory with their input (``is_view``). Their backward is a
Function of its own whose backward is the view again (torch's diagonal_backward and
unfold_backward), so second derivatives flow. as_strided and CopySlices work on the
memory the views describe: a gradient is written into a zero "storage" through one
geometry (shape, strides, offset), adding where that geometry repeats an element,
and read back through another (``Restride``), as torch's as_strided_backward does.
That is what makes them right for any layout of the base: transposed, sliced,
overlapping windows.
"""

from __future__ import annotations

import math

from genesis_ndarray import arange, ones, zeros
from genesis_ndarray.shape import normalize_dim

from ._util import Primitive


class Diagonal(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, offset, dim1, dim2):
        ctx.in_meta = (tuple(a.shape), a.dtype, a.device)
        ctx.args = (offset, dim1, dim2)
        return a.data.diagonal(offset, dim1, dim2)

    @staticmethod
    def backward(ctx, g):
        return DiagonalBackward.apply(g, ctx.in_meta, ctx.args), None, None, None


class DiagonalBackward(Primitive):
    """zeros of the input's shape with ``g`` written along the diagonal."""

    @staticmethod
    def forward(ctx, g, in_meta, args):
        shape, dtype, device = in_meta
        ctx.args = args
        out = zeros(*shape, dtype=dtype, device=device)
        out.diagonal(*args).copy_(g.data)
        return out

    @staticmethod
    def backward(ctx, gg):
        return Diagonal.apply(gg, *ctx.args), None, None


class Unfold(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, dim, size, step):
        ctx.in_meta = (tuple(a.shape), a.dtype, a.device)
        ctx.args = (normalize_dim(dim, a.ndim), size, step)
        return a.data.unfold(dim, size, step)

    @staticmethod
    def backward(ctx, g):
        return UnfoldBackward.apply(g, ctx.in_meta, ctx.args), None, None, None


class UnfoldBackward(Primitive):
    """zeros of the input's shape, each window of ``g`` added where it was read from."""

    @staticmethod
    def forward(ctx, g, in_meta, args):
        shape, dtype, device = in_meta
        ctx.args = args
        out = zeros(*shape, dtype=dtype, device=device)
        _add_windows(out, g.data, *args)
        return out

    @staticmethod
    def backward(ctx, gg):
        return Unfold.apply(gg, *ctx.args), None, None


def _add_windows(out, g, dim: int, size: int, step: int) -> None:
    """out.unfold(dim, size, step) += g, right where windows overlap (step < size)."""
    windows = out.unfold(dim, size, step)  # a view of out with g's shape
    if step >= size or out.ndim == 0:
        windows.copy_(g)  # no element is in two windows
        return
    n = windows.shape[dim]
    if size <= n:  # element k of every window at once: those never share an element
        for k in range(size):
            windows[..., k].add_(g[..., k])
    else:  # one window at a time
        for i in range(n):
            at = (slice(None),) * dim + (i,)
            windows[at].add_(g[at])


# ---------------------------------------------------------------- as_strided and in-place writes
def _extent(geom) -> int:
    """Elements a storage needs to hold geometry (shape, strides, offset)."""
    shape, strides, offset = geom
    if math.prod(shape) == 0:
        return offset
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def _may_overlap(shape, strides) -> bool:
    """True when two indices may reach one element (torch's _maybe_overlapping_memory)."""
    reach = 0
    for n, s in sorted(((n, s) for n, s in zip(shape, strides) if n > 1), key=lambda d: d[1]):
        if s <= reach:
            return True
        reach += s * (n - 1)
    return False


def _positions(geom, size: int, device):
    """The storage index of each element of ``geom``, flattened."""
    shape, strides, offset = geom
    return arange(size, device=device).as_strided(shape, strides, offset).reshape(-1)


def _scale_by_count(geom, size: int, dtype, device):
    """1 / (how often ``geom`` reads each storage element), 0 where it never does; None without overlap."""
    if not _may_overlap(geom[0], geom[1]):
        return None
    count = zeros(size, dtype=dtype, device=device)
    where = _positions(geom, size, device)
    count.index_put_((where,), ones(where.shape[0], dtype=dtype, device=device), accumulate=True)
    return (count > 0).astype(dtype) / count.maximum(ones((), dtype=dtype, device=device))


class Restride(Primitive):
    """Write ``x`` into a zero storage of ``size`` elements through ``write`` (adding repeats),
    scale by ``scale`` (or not), read it back through ``read``. Linear in x; its transpose is
    the same with ``write`` and ``read`` swapped."""

    @staticmethod
    def forward(ctx, x, write, read, size, scale):
        ctx.args = (write, read, size, scale)
        storage = zeros(size, dtype=x.dtype, device=x.device)
        if math.prod(write[0]):
            if _may_overlap(write[0], write[1]):
                storage.index_put_((_positions(write, size, x.device),), x.data.reshape(-1), accumulate=True)
            else:
                storage.as_strided(*write).copy_(x.data)
        if scale is not None:
            storage = storage * scale
        return storage.as_strided(*read).contiguous()

    @staticmethod
    def backward(ctx, g):
        write, read, size, scale = ctx.args
        return Restride.apply(g, read, write, size, scale), None, None, None, None


def _shared_origin(a, b):
    """Two geometries with offsets moved so that the lower one starts at 0, and the storage size."""
    low = min(a[2], b[2])
    a, b = (a[0], a[1], a[2] - low), (b[0], b[1], b[2] - low)
    return a, b, max(_extent(a), _extent(b))


def _region_of(nd, region):
    """The NDArray view of ``region`` (shape, strides, offset relative to nd's start) inside nd."""
    shape, strides, rel = region
    return nd.as_strided(shape, strides, nd.storage_offset() + rel)


class AsStrided(Primitive):
    """The view ``region`` = (shape, strides, offset relative to the input's own offset) of the
    input's memory. Its gradient goes back through that memory: elements the view repeats add
    up, and elements the input repeats share their gradient (torch's rule)."""

    is_view = True

    @staticmethod
    def forward(ctx, a, region):
        if ctx.records:
            shape, strides, rel = region
            ctx.geoms = _shared_origin((tuple(a.shape), tuple(a.strides), 0), (tuple(shape), tuple(strides), rel))
        return _region_of(a.data, region)

    @staticmethod
    def backward(ctx, g):
        inp, out, size = ctx.geoms
        return Restride.apply(g, out, inp, size, _scale_by_count(inp, size, g.dtype, g.device)), None


class CopySlices(Primitive):
    """base with the region written by an in-place op on one of its views replaced by ``value``.

    The write has already happened in memory; this node only records it: the region's
    gradient goes to ``value``, the rest to the base's earlier history. ``region`` is
    (shape, strides, offset relative to the base's offset), in the base's memory layout,
    which need not be contiguous.
    """

    @staticmethod
    def forward(ctx, base, value, region):
        if ctx.records:
            shape, strides, rel = region
            ctx.geoms = _shared_origin((tuple(base.shape), tuple(base.strides), 0),
                                       (tuple(shape), tuple(strides), rel))
        return base.data

    @staticmethod
    def backward(ctx, g):
        base, region, size = ctx.geoms
        g_base = g_value = None
        if ctx.needs_input_grad[0]:
            keep = ones(size, dtype=g.dtype, device=g.device)
            keep.as_strided(*region).fill_(0)
            g_base = g * keep.as_strided(*base)
        if ctx.needs_input_grad[1]:
            g_value = Restride.apply(g, base, region, size, None)
        return g_base, g_value, None
