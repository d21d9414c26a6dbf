"""Views and layout: reshape/view/permute/transpose/expand/squeeze/unsqueeze/flatten/narrow,
diagonal, unfold, as_strided, cat (and stack, built on it), the record of an in-place write
through a view (CopySlices); and ViewsMixin, their Tensor methods.

Views share their input's memory and version counter (``is_view``); their backward maps the
gradient back through the inverse layout. diagonal's and unfold's backward is a Function of
its own whose backward is the view again (torch's diagonal_backward and unfold_backward), so
second derivatives flow. as_strided and CopySlices work on the memory the views describe: a
gradient is written into a zero "storage" through one geometry (shape, strides, offset),
adding where that geometry repeats an element, and read back through another (``Restride``),
as torch's as_strided_backward does. That is what makes them right for any layout of the
base: transposed, sliced, overlapping windows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from genesis_ndarray import arange, empty, ones, promote_types, zeros
from genesis_ndarray.shape import movedim_order, normalize_dim, unflatten_shape

from .. import grad_mode
from ..tensor_base import TensorBase
from ._util import Primitive, backward_recorded, meta, reduce_to, wrap
from .getitem import scatter_into_zeros

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


def _reshaped(g, shape):
    """``g`` reshaped to ``shape``: the gradient of every view that only regroups dimensions."""
    return g.reshape(*shape) if backward_recorded(g) else wrap(g, g.data.reshape(*shape))


# ---------------------------------------------------------------- layout
class Reshape(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        if ctx.records:  # what only backward reads: not computed for a forward that records nothing
            ctx.in_shape = a.data.shape
        return a.data.reshape(*shape)

    @staticmethod
    def backward(ctx, g):
        return _reshaped(g, ctx.in_shape), None


class View(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        if ctx.records:  # what only backward reads: not computed for a forward that records nothing
            ctx.in_shape = a.data.shape
        return a.data.view(*shape)

    @staticmethod
    def backward(ctx, g):
        return _reshaped(g, ctx.in_shape), None


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
        return (g.permute(*inverse) if backward_recorded(g) else wrap(g, g.data.permute(*inverse))), None


class Transpose(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, d0, d1):
        ctx.dims = (d0, d1)
        return a.data.transpose(d0, d1)

    @staticmethod
    def backward(ctx, g):
        d0, d1 = ctx.dims
        return (g.transpose(d0, d1) if backward_recorded(g) else wrap(g, g.data.transpose(d0, d1))), None, None


class Expand(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        if ctx.records:
            ctx.target = meta(a)
        return a.data.expand(*shape)

    @staticmethod
    def backward(ctx, g):
        return reduce_to(g, ctx.target), None


class Squeeze(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, dim):
        if ctx.records:  # what only backward reads: not computed for a forward that records nothing
            ctx.in_shape = a.data.shape
        return a.data.squeeze(dim)

    @staticmethod
    def backward(ctx, g):
        return _reshaped(g, ctx.in_shape), None


class Unsqueeze(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, dim):
        if ctx.records:  # what only backward reads: not computed for a forward that records nothing
            ctx.in_shape = a.data.shape
        return a.data.unsqueeze(dim)

    @staticmethod
    def backward(ctx, g):
        return _reshaped(g, ctx.in_shape), None


class Flatten(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, start, end):
        if ctx.records:  # what only backward reads: not computed for a forward that records nothing
            ctx.in_shape = a.data.shape
        return a.data.flatten(start, end)

    @staticmethod
    def backward(ctx, g):
        return _reshaped(g, ctx.in_shape), None, None


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
        return scatter_into_zeros(g, shape, dtype, device, index), None, None, None


class Split(Primitive):
    """split / chunk: every piece a view of the input, one graph node for all of them (torch's
    SplitBackward0). Its backward writes the pieces' gradients into one buffer, where a node per
    piece would make a zero-filled input-sized gradient each and add them up."""

    is_view = True

    @staticmethod
    def forward(ctx, a, dim, sizes):
        data = a.data
        dim = normalize_dim(dim, data.ndim)
        ctx.split = (dim, tuple(data.shape), data.dtype, data.device)
        out, start = [], 0
        for size in sizes:
            out.append(data.narrow(dim, start, size))
            start += size
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):  # the engine makes a missing piece's gradient zeros
        dim, shape, dtype, device = ctx.split
        if backward_recorded(*grads):  # recorded: differentiable
            return Cat.apply(dim, *grads), None, None
        out = empty(*shape, dtype=dtype, device=device)
        start = 0
        for g in grads:
            size = g.data.shape[dim]
            out.narrow(dim, start, size).copy_(g.data)  # (a view's copy_: no index to interpret)
            start += size
        return wrap(grads[0], out), None, None


class Cat(Primitive):
    @staticmethod
    def forward(ctx, dim, *tensors):
        first = tensors[0]
        dim = normalize_dim(dim, first.ndim)
        for t in tensors[1:]:
            if t.ndim != first.ndim or any(s != f for i, (s, f) in enumerate(zip(t.shape, first.shape)) if i != dim):
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
            out.narrow(dim, start, size).copy_(t.data)
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


# ---------------------------------------------------------------- diagonal and unfold
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
            ctx.geoms = _shared_origin((tuple(base.shape), tuple(base.strides), 0), (tuple(shape), tuple(strides), rel))
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


# ---------------------------------------------------------------- the Tensor methods
def _shape(args) -> tuple[int, ...]:
    """view(2, 3) and view((2, 3)) alike."""
    if len(args) == 1 and isinstance(args[0], tuple | list):
        args = args[0]
    for a in args:  # plain ints (the common case) pass as they are; anything else goes through int()
        if a.__class__ is not int:
            return tuple([int(a) for a in args])
    return tuple(args)


class ViewsMixin(TensorBase):
    """Tensor's layout methods, and how a view follows in-place writes to its base's memory."""

    __slots__ = ()

    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        """The same elements in a new shape: a view when the strides allow, else a copy.

        Args:
            shape: the new sizes, as ``reshape(2, 3)`` or ``reshape((2, 3))``; one may be -1, inferred.
        """
        return Reshape.apply(self, _shape(shape))

    def view(self, *shape: int | Sequence[int]) -> Tensor:
        """A view of the same memory in a new shape (an error where the strides do not allow one).

        Args:
            shape: the new sizes, as ``view(2, 3)`` or ``view((2, 3))``; one may be -1, inferred.
        """
        return View.apply(self, _shape(shape))

    def view_as(self, other: Tensor) -> Tensor:
        """``self.view(*other.shape)``."""
        return self.view(*other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        """``self.reshape(*other.shape)``."""
        return self.reshape(*other.shape)

    def permute(self, *dims: int | Sequence[int]) -> Tensor:
        """A view with the dimensions reordered: dimension i of the result is dimension ``dims[i]`` of self.

        Args:
            dims: a permutation of the dimensions, as ``permute(2, 0, 1)`` or ``permute((2, 0, 1))``.
        """
        return Permute.apply(self, _shape(dims))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """A view with dimensions ``dim0`` and ``dim1`` swapped."""
        return Transpose.apply(self, dim0, dim1)

    def t(self) -> Tensor:
        """The transpose of a 2-D tensor (a view); a 0-D or 1-D tensor is returned as it is."""
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        # self is a Tensor: the mixins are only Tensor's bases
        return self.transpose(0, 1) if self.ndim == 2 else self  # type: ignore[return-value]

    @property
    def T(self) -> Tensor:
        """A view with the order of all dimensions reversed."""
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> Tensor:
        """A view with the last two dimensions swapped (a batch of matrices transposed)."""
        if self.ndim < 2:
            if self.ndim == 0:
                return self  # type: ignore[return-value]  # torch: deprecated, the identity (a Tensor)
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    def expand(self, *shape: int | Sequence[int]) -> Tensor:
        """A view repeating size-1 dimensions to ``shape`` without copying (stride 0).

        Args:
            shape: the new sizes; -1 keeps a dimension's size; new leading dimensions may be added.
        """
        return Expand.apply(self, _shape(shape))

    def expand_as(self, other: Tensor) -> Tensor:
        """``self.expand(*other.shape)``."""
        return self.expand(*other.shape)

    def broadcast_to(self, shape: Sequence[int]) -> Tensor:
        """``self.expand(*shape)``: a view broadcast to ``shape``."""
        return self.expand(*shape)

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """A view without size-1 dimensions: all of them, or those among ``dim``.

        Args:
            dim: a dimension or a tuple of dimensions to remove if their size is 1.
        """
        return Squeeze.apply(self, dim)

    def unsqueeze(self, dim: int) -> Tensor:
        """A view with a new size-1 dimension inserted at position ``dim`` (negative counts from the end)."""
        return Unsqueeze.apply(self, dim)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """The dimensions ``start_dim`` to ``end_dim`` merged into one (a view when the strides allow).

        Args:
            start_dim: the first dimension to merge.
            end_dim: the last dimension to merge (inclusive).
        """
        return Flatten.apply(self, start_dim, end_dim)

    # unflatten, movedim and swapaxes are view / permute / transpose, their geometry worked out in
    # genesis_ndarray.shape.
    def unflatten(self, dim: int, sizes: Sequence[int]) -> Tensor:
        """A view with dimension ``dim`` split into ``sizes`` (their product must be its size; one may be -1)."""
        return self.view(*unflatten_shape(self.shape, dim, sizes))

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        """A view with the dimensions at ``source`` moved to positions ``destination``, the others keeping
        their order.
        """
        return self.permute(*movedim_order(self.ndim, source, destination))

    moveaxis = movedim

    def swapaxes(self, axis0: int, axis1: int) -> Tensor:
        """Same as ``transpose(axis0, axis1)``."""
        return self.transpose(axis0, axis1)

    swapdims = swapaxes

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """A view of ``length`` elements of dimension ``dim``, from index ``start``."""
        return Narrow.apply(self, dim, start, length)

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """Views of consecutive pieces along ``dim``.

        Args:
            split_size: the size of each piece (the last may be smaller), or a list of sizes summing to
                the size of ``dim``.
            dim: the dimension to split.
        """
        size = self.shape[dim]
        if isinstance(split_size, int):
            if split_size < 0:
                raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
            if split_size == 0 and size:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
            sizes = [min(split_size, size - i) for i in range(0, size, split_size or 1)] or [0]
        else:
            sizes = list(split_size)
            if sum(sizes) != size:
                raise RuntimeError(
                    f"split_with_sizes expects split_sizes to sum exactly to {size} (input "
                    f"tensor's size at dimension {dim}), but got split_sizes={sizes}"
                )
        return Split.apply(self, dim, sizes)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """``chunks`` views of (nearly) equal size along ``dim``; the last may be smaller, and fewer may
        come back when the size does not divide.
        """
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        size = self.shape[dim]
        return self.split(max(1, -(-size // chunks)), dim)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """A view of the diagonal of the (``dim1``, ``dim2``) planes, as a new last dimension.

        Args:
            offset: 0 for the main diagonal, > 0 above it, < 0 below.
            dim1: the first dimension of the planes.
            dim2: the second dimension of the planes.
        """
        return Diagonal.apply(self, offset, dim1, dim2)

    def unfold(self, dimension: int, size: int, step: int) -> Tensor:
        """A view of all slices of length ``size`` along ``dimension``, ``step`` apart, in a new last
        dimension: shape (..., (n - size) // step + 1, ..., size).
        """
        return Unfold.apply(self, dimension, size, step)

    def as_strided(self, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
        """A view of this tensor's memory with the given sizes and strides (in elements).

        ``storage_offset`` counts from the storage's start, as torch; None keeps self's.
        """
        rel = 0 if storage_offset is None else storage_offset - self.data.storage_offset()
        return AsStrided.apply(self, (tuple(size), tuple(stride), rel))

    # ------------------------------------------------------------- copies that rearrange (composed of the above)
    def flip(self, dims: int | Sequence[int]) -> Tensor:
        """A copy with the elements in reverse order along each of ``dims`` (index_select with a reversed
        arange: its gradient is the same flip)."""
        dims = [normalize_dim(d, self.ndim) for d in ((dims,) if isinstance(dims, int) else dims)]
        for d in dims:
            if dims.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        if not dims:
            return self.clone()
        out = self.index_select(dims[0], self._result_type(arange(self.shape[dims[0]] - 1, -1, -1, device=self.device)))
        for d in dims[1:]:
            reverse = arange(self.shape[d] - 1, -1, -1, device=self.device)
            out = out.index_select(d, self._result_type(reverse))
        return out

    def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
        """A copy with the elements shifted ``shifts`` places along ``dims`` (those pushed past the end come
        back at the start); without dims, along the flattened tensor."""
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(tuple(self.shape))
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(shifts) != len(dims):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
        out = self.clone()
        for shift, d in zip(shifts, dims):
            n = out.shape[d]
            if n and shift % n:
                k = shift % n
                out = Cat.apply(d, out.narrow(d, n - k, k), out.narrow(d, 0, n - k))
        return out

    def repeat(self, *sizes: int | Sequence[int]) -> Tensor:
        """A copy tiled ``sizes[i]`` times along dim i (more sizes than dims add leading dims): expand
        then reshape, so the gradient sums over the repeats."""
        first = sizes[0] if len(sizes) == 1 else None
        reps = tuple(int(r) for r in first) if isinstance(first, Sequence) else tuple(int(r) for r in sizes)  # type: ignore[arg-type]
        if len(reps) < self.ndim:
            raise RuntimeError(
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
            )
        shape = (1,) * (len(reps) - self.ndim) + tuple(self.shape)
        result = [r * n for r, n in zip(reps, shape)]
        if any(r < 0 for r in reps):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(reps)}: {result}")
        interleaved = [x for n in shape for x in (1, n)]
        expanded = [x for r, n in zip(reps, shape) for x in (r, n)]
        return self.reshape(interleaved).expand(*expanded).reshape(result)

    def tile(self, dims: Sequence[int]) -> Tensor:
        """``repeat`` with ``dims`` padded with leading ones when it is shorter than the tensor's dims."""
        dims = tuple(dims)
        return self.repeat((1,) * (self.ndim - len(dims)) + dims)

    # ------------------------------------------------------------- views and in-place writes
    # Tensor._inplace calls these for a tensor that is a view (``_base`` set).
    def _view_region(self) -> tuple:
        """(shape, strides, offset from the base's offset): where this view lies in its base's memory."""
        base = self._base
        assert base is not None, "only a view has a region in its base"
        return (tuple(self.shape), tuple(self.stride()), self.data.storage_offset() - base.data.storage_offset())

    def _refresh_view(self) -> None:
        """A view whose base was written in place (through the base or another view) since this view's
        grad_fn was recorded reads the base's new history: its grad_fn becomes an AsStrided view of the
        base, as torch regenerates it."""
        self._view_version = self._version[0]
        base = self._base
        assert base is not None, "only a view is refreshed"
        if base.requires_grad:
            with grad_mode.enable_grad():
                view = AsStrided.apply(base, self._view_region())
            self.grad_fn, self._output_nr, self.requires_grad = view.grad_fn, 0, True

    def _rebase_view(self, result: Tensor) -> None:
        """After an in-place op wrote ``result`` through this view, give the base the new
        history (its old value with the view's region replaced by ``result``) and make
        this view a view of that new history, as torch does."""
        base = self._base
        assert base is not None, "only a view is rebased"
        region = self._view_region()
        new_base = CopySlices.apply(base, result, region)
        base.grad_fn, base._output_nr, base.requires_grad = new_base.grad_fn, 0, new_base.requires_grad
        view = AsStrided.apply(base, region)
        self.grad_fn, self._output_nr, self.requires_grad = view.grad_fn, 0, view.requires_grad
