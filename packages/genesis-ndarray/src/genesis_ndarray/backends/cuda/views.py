"""Views on CUDA: new shape / strides / offset over the same storage, never a copy
(except reshape, which copies exactly where torch does)."""

from __future__ import annotations

import math

from ...shape import (
    basic_index,
    contiguous_strides,
    diagonal_view,
    infer_shape,
    normalize_dim,
    unfold_view,
    view_strides,
)
from . import indexing
from .common import View, reg
from .memory import clone, copy_, fill_


@reg("view")
def view(v: View, shape) -> View:
    shape = infer_shape(shape, math.prod(v.shape))
    strides = view_strides(v.shape, v.strides, shape)
    if strides is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension "
            "spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return v.as_strided(shape, strides, v.offset)


@reg("reshape")
def reshape(v: View, shape) -> View:
    shape = infer_shape(shape, math.prod(v.shape))
    strides = view_strides(v.shape, v.strides, shape)
    if strides is None:
        v = clone(v)
        strides = contiguous_strides(shape)
    return v.as_strided(shape, strides, v.offset)


@reg("permute")
def permute(v: View, dims) -> View:
    nd = len(v.shape)
    dims = tuple(normalize_dim(d, nd) for d in dims)
    if len(dims) != nd or sorted(dims) != list(range(nd)):
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of "
            f"the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {len(dims)}"
            if len(dims) != nd else f"permute(): duplicate dims are not allowed: {dims}"
        )
    return v.as_strided(tuple(v.shape[d] for d in dims), tuple(v.strides[d] for d in dims), v.offset)


@reg("transpose")
def transpose(v: View, d0: int, d1: int) -> View:
    nd = len(v.shape)
    if nd == 0:
        return v
    order = list(range(nd))
    a, b = normalize_dim(d0, nd), normalize_dim(d1, nd)
    order[a], order[b] = order[b], order[a]
    return permute(v, order)


@reg("expand")
def expand(v: View, shape) -> View:
    shape = tuple(shape)
    if len(shape) < len(v.shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(shape)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(v.shape)})"
        )
    pad = len(shape) - len(v.shape)
    out_shape, out_strides = [], []
    for i, target in enumerate(shape):
        if i < pad:
            if target < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension {i}")
            out_shape.append(target)
            out_strides.append(0)
            continue
        size, stride = v.shape[i - pad], v.strides[i - pad]
        if target == -1:
            target = size
        if size == target:
            out_shape.append(size)
            out_strides.append(stride)
        elif size == 1:
            out_shape.append(target)
            out_strides.append(0)
        else:
            raise RuntimeError(
                f"The expanded size of the tensor ({target}) must match the existing size ({size}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(shape)}.  Tensor sizes: {list(v.shape)}"
            )
    return v.as_strided(tuple(out_shape), tuple(out_strides), v.offset)


@reg("squeeze")
def squeeze(v: View, dim) -> View:
    nd = len(v.shape)
    if dim is None:
        dims = {i for i, s in enumerate(v.shape) if s == 1}
    else:
        dims = {normalize_dim(d, nd) for d in ((dim,) if isinstance(dim, int) else dim)}
        dims = {d for d in dims if v.shape[d] == 1}
    keep = [i for i in range(nd) if i not in dims]
    return v.as_strided(tuple(v.shape[i] for i in keep), tuple(v.strides[i] for i in keep), v.offset)


@reg("unsqueeze")
def unsqueeze(v: View, dim: int) -> View:
    nd = len(v.shape)
    dim = normalize_dim(dim, nd + 1)
    stride = v.shape[dim] * v.strides[dim] if dim < nd else 1
    shape = v.shape[:dim] + (1,) + v.shape[dim:]
    strides = v.strides[:dim] + (stride,) + v.strides[dim:]
    return v.as_strided(shape, strides, v.offset)


@reg("flatten")
def flatten(v: View, start: int, end: int) -> View:
    nd = len(v.shape)
    if nd == 0:
        return reshape(v, (1,))
    start, end = normalize_dim(start, nd), normalize_dim(end, nd)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = v.shape[:start] + (math.prod(v.shape[start : end + 1]),) + v.shape[end + 1 :]
    return reshape(v, shape)


@reg("narrow")
def narrow(v: View, dim: int, start: int, length: int) -> View:
    dim = normalize_dim(dim, len(v.shape))
    size = v.shape[dim]
    if start < 0:
        start += size
    if not (0 <= start <= size and 0 <= length and start + length <= size):
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    index = tuple(slice(None) for _ in range(dim)) + (slice(start, start + length),)
    return getitem(v, index)


@reg("as_strided")
def as_strided(v: View, shape, strides, offset) -> View:
    return v.as_strided(tuple(shape), tuple(strides), v.offset if offset is None else offset)


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or (isinstance(i, int | slice) and not isinstance(i, bool)) for i in items)


@reg("getitem")
def getitem(v: View, index) -> View:
    if not _is_basic(index):  # advanced indices: the IndexPlan's gather
        return indexing.getitem(v, index)
    shape, strides, offset = basic_index(v.shape, v.strides, v.offset, index)
    return v.as_strided(shape, strides, offset)


@reg("index_put_")
def index_put_(v: View, index, value, accumulate: bool) -> None:
    indexing.setitem(v, index, value, accumulate)


@reg("setitem")
def setitem(v: View, index, value) -> None:
    if not _is_basic(index):
        indexing.setitem(v, index, value)
        return
    target = getitem(v, index)
    if isinstance(value, View):
        copy_(target, value)
    else:
        fill_(target, value)


@reg("diagonal")
def diagonal(v: View, offset: int, dim1: int, dim2: int) -> View:
    shape, strides, start = diagonal_view(v.shape, v.strides, v.offset, offset, dim1, dim2)
    return v.as_strided(shape, strides, start)


@reg("unfold")
def unfold(v: View, dim: int, size: int, step: int) -> View:
    shape, strides = unfold_view(v.shape, v.strides, dim, size, step)
    return v.as_strided(shape, strides, v.offset)
