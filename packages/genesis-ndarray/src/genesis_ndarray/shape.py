"""Device-independent geometry: broadcasting, strides of views, dims.

The CPU backend gets these answers from torch; the CUDA backend computes them
here, with torch's rules and torch's error messages, so both devices agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from genesis_storage import contiguous_strides  # one implementation, shared by the layers above storage

Shape = tuple[int, ...]


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> Shape:
    """The broadcast of two shapes; RuntimeError (torch's message) when they clash."""
    if tuple(a) == tuple(b):
        return tuple(a)
    n = max(len(a), len(b))
    out = []
    for i in range(n):
        da = a[len(a) - n + i] if len(a) - n + i >= 0 else 1
        db = b[len(b) - n + i] if len(b) - n + i >= 0 else 1
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise RuntimeError(
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            )
    return tuple(out)


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    step = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 0:
            return True
        if size != 1 and stride != step:
            return False
        step *= size
    return True


def normalize_dim(dim: int, ndim: int) -> int:
    """Wrap a negative dim; IndexError with torch's message when out of range."""
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + max(ndim, 1) if dim < 0 else dim


def normalize_dims(dims, ndim: int) -> tuple[int, ...]:
    """None means every dim; an int or a sequence is wrapped and checked for repeats."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(normalize_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out} appears multiple times in the list of dims")
    return out


def infer_shape(shape: Sequence[int], numel: int) -> Shape:
    """Resolve one -1 in a requested shape; RuntimeError when the sizes disagree."""
    # Every reshape / view asks this: the usual shape (a tuple of ints, non-negative but for at most one -1,
    # that matches) in one loop; anything else takes the general path below, which raises torch's errors.
    if type(shape) is tuple:
        known, inferred = 1, -1
        for i in range(len(shape)):
            s = shape[i]
            if s.__class__ is not int or s < 0:
                if s != -1 or inferred >= 0 or s.__class__ is not int:
                    break
                inferred = i
                continue
            known *= s
        else:
            if inferred < 0:
                if known == numel:
                    return shape
            elif known and numel % known == 0:
                return shape[:inferred] + (numel // known,) + shape[inferred + 1 :]
    shape = tuple(int(s) for s in shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        if known == 0 or numel % known != 0:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[: unknown[0]] + (numel // known,) + shape[unknown[0] + 1 :]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def view_strides(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> Shape | None:
    """Strides that present (shape, strides) as new_shape without copying, or None.

    torch's rule: dims of the old shape can be merged only where they are laid out
    contiguously with respect to each other, and split freely.
    """
    numel = math.prod(shape)
    if numel == 0 or not shape:  # nothing to lay out, or one element (a 0-d array seen as (1, 1), ...)
        return contiguous_strides(tuple(new_shape))
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1] if strides else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        # At a chunk boundary (the start, or a non-contiguous junction), lay out the view dims.
        if tensor_d == 0 or (shape[tensor_d - 1] != 1 and strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def basic_index(shape: Shape, strides: Shape, offset: int, index) -> tuple[Shape, Shape, int]:
    """Geometry of x[index] for ints, slices, None and Ellipsis (a view, no copy)."""
    if not isinstance(index, tuple):
        index = (index,)
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    if consumed > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    expanded = []
    for item in index:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - consumed))
        else:
            expanded.append(item)
    expanded.extend([slice(None)] * (len(shape) - sum(1 for i in expanded if i is not None)))
    new_shape, new_strides = [], []
    dim = 0
    for item in expanded:
        if item is None:
            # torch's stride for an inserted dim: what the next dim would need to step over.
            new_shape.append(1)
            new_strides.append(shape[dim] * strides[dim] if dim < len(shape) else 1)
            continue
        size, stride = shape[dim], strides[dim]
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            length = max(0, (stop - start + step - 1) // step)
            offset += start * stride  # torch moves the offset even for an empty slice
            new_shape.append(length)
            new_strides.append(stride * step)
        else:
            i = int(item)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            offset += (i + size if i < 0 else i) * stride
        dim += 1
    return tuple(new_shape), tuple(new_strides), offset


# ---------------------------------------------------------------- diagonal, unfold, unflatten, movedim
def diagonal_view(
    shape: Shape, strides: Shape, offset: int, diag: int, dim1: int, dim2: int
) -> tuple[Shape, Shape, int]:
    """Geometry of x.diagonal(diag, dim1, dim2): dim1 and dim2 dropped, the diagonal appended last."""
    nd = len(shape)
    d1, d2 = normalize_dim(dim1, nd), normalize_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if diag >= 0:
        size = max(min(shape[d1], shape[d2] - diag), 0)
    else:
        size = max(min(shape[d1] + diag, shape[d2]), 0)
    if size:  # torch leaves the offset alone for an empty diagonal "off the end"
        offset += diag * strides[d2] if diag >= 0 else -diag * strides[d1]
    keep = [i for i in range(nd) if i not in (d1, d2)]
    return (
        tuple(shape[i] for i in keep) + (size,),
        tuple(strides[i] for i in keep) + (strides[d1] + strides[d2],),
        offset,
    )


def unfold_view(shape: Shape, strides: Shape, dim: int, size: int, step: int) -> tuple[Shape, Shape]:
    """Geometry of x.unfold(dim, size, step): windows along dim, each window a new last dim."""
    nd = len(shape)
    d = normalize_dim(dim, nd)
    max_size = shape[d] if nd else 1
    if size > max_size:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {max_size} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    new_shape, new_strides = list(shape) + [size], list(strides) + [strides[d] if nd else 1]
    if nd:
        new_shape[d] = (shape[d] - size) // step + 1
        new_strides[d] = strides[d] * step
    return tuple(new_shape), tuple(new_strides)


def unflatten_shape(shape: Shape, dim: int, sizes: Sequence[int]) -> Shape:
    """The shape of x.unflatten(dim, sizes) (one -1 allowed in sizes)."""
    d = normalize_dim(dim, len(shape))
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sum(1 for s in sizes if s == -1) > 1:
        raise RuntimeError("unflatten: only one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    size = shape[d]
    if -1 in sizes:
        if known == 0 or size % known:
            raise RuntimeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                f"{d} ({size}) in the input tensor"
            )
        sizes = tuple(size // known if s == -1 else s for s in sizes)
    elif known != size:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
            f"({size}) in the input tensor"
        )
    return tuple(shape[:d]) + sizes + tuple(shape[d + 1 :])


def movedim_order(ndim: int, source, destination) -> tuple[int, ...]:
    """The permutation that x.movedim(source, destination) applies (torch's rules and messages)."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)"
        )
    src = tuple(normalize_dim(d, ndim) for d in src)
    dst = tuple(normalize_dim(d, ndim) for d in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if ndim == 0:
        return ()
    order = [-1] * ndim
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(d for d in range(ndim) if d not in src)
    return tuple(o if o != -1 else next(rest) for o in order)
