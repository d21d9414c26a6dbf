"""Views on CUDA: new shape / strides / offset over the same storage, never a copy (except
reshape, which copies exactly where torch does). Indexing (x[index]) is getitem.py."""

from __future__ import annotations

import math

from genesis_storage import contiguous_strides

from ...shape import (
    diagonal_view,
    infer_shape,
    normalize_dim,
    unfold_view,
    view_strides,
)
from .common import View, reg
from .memory import clone


@reg("view")
def view(input: View, shape) -> View:
    shape = infer_shape(shape, math.prod(input.shape))
    strides = view_strides(input.shape, input.strides, shape)
    if strides is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension "
            "spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return input.reshaped(shape, strides)  # the same elements: no bounds to check again


@reg("reshape")
def reshape(input: View, shape) -> View:
    shape = infer_shape(shape, math.prod(input.shape))
    strides = view_strides(input.shape, input.strides, shape)
    if strides is None:
        input = clone(input)
        strides = contiguous_strides(shape)
    return input.reshaped(shape, strides)


@reg("permute")
def permute(input: View, dims) -> View:
    nd = len(input.shape)
    dims = tuple(normalize_dim(d, nd) for d in dims)
    if len(dims) != nd or sorted(dims) != list(range(nd)):
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of "
            f"the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {len(dims)}"
            if len(dims) != nd
            else f"permute(): duplicate dims are not allowed: {dims}"
        )
    return input.permuted(dims)


@reg("transpose")
def transpose(input: View, dim0: int, dim1: int) -> View:
    nd = len(input.shape)
    if nd == 0:
        return input
    order = list(range(nd))
    a, b = normalize_dim(dim0, nd), normalize_dim(dim1, nd)
    order[a], order[b] = order[b], order[a]
    return input.permuted(order)


@reg("expand")
def expand(input: View, shape) -> View:
    shape = tuple(shape)
    if len(shape) < len(input.shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(shape)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(input.shape)})"
        )
    pad = len(shape) - len(input.shape)
    out_shape, out_strides = [], []
    for i, target in enumerate(shape):
        if i < pad:
            if target < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension {i}")
            out_shape.append(target)
            out_strides.append(0)
            continue
        size, stride = input.shape[i - pad], input.strides[i - pad]
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
                f"non-singleton dimension {i}.  Target sizes: {list(shape)}.  Tensor sizes: {list(input.shape)}"
            )
    return input.as_strided(tuple(out_shape), tuple(out_strides), input.offset)


@reg("squeeze")
def squeeze(input: View, dim) -> View:
    nd = len(input.shape)
    if dim is None:
        dims = {i for i, s in enumerate(input.shape) if s == 1}
    else:
        dims = {normalize_dim(d, nd) for d in ((dim,) if isinstance(dim, int) else dim)}
        dims = {d for d in dims if input.shape[d] == 1}
    keep = [i for i in range(nd) if i not in dims]
    return input.as_strided(tuple(input.shape[i] for i in keep), tuple(input.strides[i] for i in keep), input.offset)


@reg("unsqueeze")
def unsqueeze(input: View, dim: int) -> View:
    nd = len(input.shape)
    dim = normalize_dim(dim, nd + 1)
    stride = input.shape[dim] * input.strides[dim] if dim < nd else 1
    shape = input.shape[:dim] + (1,) + input.shape[dim:]
    strides = input.strides[:dim] + (stride,) + input.strides[dim:]
    return input.as_strided(shape, strides, input.offset)


@reg("flatten")
def flatten(input: View, start_dim: int, end_dim: int) -> View:
    nd = len(input.shape)
    if nd == 0:
        return reshape(input, (1,))
    start_dim, end_dim = normalize_dim(start_dim, nd), normalize_dim(end_dim, nd)
    if start_dim > end_dim:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape[:start_dim] + (math.prod(input.shape[start_dim : end_dim + 1]),) + input.shape[end_dim + 1 :]
    return reshape(input, shape)


@reg("narrow")
def narrow(input: View, dim: int, start: int, length: int) -> View:
    dim = normalize_dim(dim, len(input.shape))
    size = input.shape[dim]
    if start < 0:
        start += size
    if not (0 <= start <= size and 0 <= length and start + length <= size):
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return input.narrowed(dim, start, length)


def _check_geometry(input: View, size: tuple[int, ...], stride: tuple[int, ...], offset: int) -> None:
    """torch's checks of an as_strided geometry, as RuntimeErrors naming the sizes: the storage layer
    refuses the same views with its own IndexError / ValueError, which a torch user does not expect."""
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    needed = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed * input.itemsize > input.storage.nbytes:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{input.itemsize} requiring a storage size of {needed * input.itemsize} are out of bounds for "
            f"storage of size {input.storage.nbytes}"
        )


@reg("as_strided")
def as_strided(input: View, size, stride, storage_offset) -> View:
    offset = input.offset if storage_offset is None else storage_offset
    _check_geometry(input, tuple(size), tuple(stride), offset)
    return input.as_strided(tuple(size), tuple(stride), offset)


@reg("diagonal")
def diagonal(input: View, offset: int, dim1: int, dim2: int) -> View:
    shape, strides, start = diagonal_view(input.shape, input.strides, input.offset, offset, dim1, dim2)
    return input.as_strided(shape, strides, start)


@reg("unfold")
def unfold(input: View, dimension: int, size: int, step: int) -> View:
    shape, strides = unfold_view(input.shape, input.strides, dimension, size, step)
    return input.as_strided(shape, strides, input.offset)
