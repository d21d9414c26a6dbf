"""torch.X functions that reshape, join, split and select: atleast_*d, the stacks (hstack, vstack, dstack,
column_stack), block_diag, broadcast_shapes / broadcast_tensors, meshgrid, cartesian_prod, combinations,
and the top-level spellings of the Tensor methods of genesis_autograd's functions/joining.py.

Each composes ops that already record their gradients (views, cat, index_select), so the results
differentiate on every device; arguments are checked as torch does, with its error classes and messages.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import Any

from genesis_autograd import Tensor, cat, int64, promote_types, tensor, zeros

Tensors = Tensor | Sequence[Tensor]


def _tensor_list(tensors: tuple[Any, ...]) -> list[Tensor]:
    """``f(a, b)`` and ``f([a, b])`` alike."""
    if len(tensors) == 1 and not isinstance(tensors[0], Tensor):
        return list(tensors[0])
    return list(tensors)


def _one_or_tuple(inputs: tuple[Any, ...], out: list[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """torch.atleast_*d's return: the tensor for one tensor argument, else a tuple."""
    return out[0] if len(inputs) == 1 and isinstance(inputs[0], Tensor) else tuple(out)


def _at_least(name: str, inputs: tuple[Any, ...], shape_of: Any) -> Any:
    tensors = _tensor_list(inputs)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}() received an invalid combination of arguments - got ({type(t).__name__})")
    return _one_or_tuple(inputs, [t if t.ndim >= len(shape_of(t)) else t.reshape(shape_of(t)) for t in tensors])


def atleast_1d(*tensors: Tensors) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least one dimension (a 0-d tensor becomes shape (1,))."""
    return _at_least("atleast_1d", tensors, lambda t: (1,) if t.ndim == 0 else tuple(t.shape))


def atleast_2d(*tensors: Tensors) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least two dimensions (0-d -> (1, 1), (n,) -> (1, n))."""
    return _at_least("atleast_2d", tensors, lambda t: (1,) * (2 - t.ndim) + tuple(t.shape) if t.ndim < 2 else t.shape)


def atleast_3d(*tensors: Tensors) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least three dimensions (0-d -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1))."""

    def shape_of(t: Tensor) -> tuple[int, ...]:
        if t.ndim == 0:
            return (1, 1, 1)
        if t.ndim == 1:
            return (1, t.shape[0], 1)
        return (*t.shape, 1) if t.ndim == 2 else tuple(t.shape)

    return _at_least("atleast_3d", tensors, shape_of)


def _non_empty(name: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined column-wise: along dim 0 when they are 1-d, else along dim 1."""
    parts: list[Tensor] = list(atleast_1d(_non_empty("hstack", tensors)))  # type: ignore[arg-type]  # a list in, a tuple out
    return cat(parts, 0 if parts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors (made at least 2-d) joined row-wise, along dim 0."""
    return cat(list(atleast_2d(_non_empty("vstack", tensors))), 0)  # type: ignore[arg-type]  # a list in, a tuple out


row_stack = vstack


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors (made at least 3-d) joined depth-wise, along dim 2."""
    return cat(list(atleast_3d(_non_empty("dstack", tensors))), 2)  # type: ignore[arg-type]  # a list in, a tuple out


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined as columns: a 0-d or 1-d tensor is one column (n, 1); others join along dim 1."""
    parts = _non_empty("column_stack", tensors)
    return cat([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in parts], 1)


def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """``cat``."""
    return cat(tensors, dim)


def concatenate(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """``cat`` with numpy's ``axis`` spelling."""
    return cat(tensors, axis)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-d, 1-d as one row, or 2-d) as the blocks of a block-diagonal matrix, zeros elsewhere;
    the dtype is the promotion of theirs."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {t.ndim} dimensions"
            )
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return zeros(1, 0)
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = promote_types(dtype, b.dtype)
    device = blocks[0].device
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        n, m = b.shape
        pieces = [
            zeros(n, left, dtype=dtype, device=device),
            b.to(dtype),
            zeros(n, width - left - m, dtype=dtype, device=device),
        ]
        rows.append(cat(pieces, 1))
        left += m
    return cat(rows, 0)


def broadcast_shapes(*shapes: int | Sequence[int]) -> Any:
    """The shape that tensors of the given shapes broadcast to (a ``genesis.Size``)."""
    from genesis_autograd import Size

    sizes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    ndim = max((len(s) for s in sizes), default=0)
    out = [1] * ndim
    for i, s in enumerate(sizes):
        for k, n in enumerate(s):
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(s)}")
            pos = ndim - len(s) + k
            if n != 1 and out[pos] != 1 and n != out[pos]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {n} at {pos - ndim}! Mismatching argument at "
                    f"index {i} had {tuple(s)}; but expected shape should be broadcastable to {out}"
                )
            if n != 1:
                out[pos] = n
    return Size(out)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded (as views) to their common broadcast shape."""
    ts = _tensor_list(tensors)
    shape: list[int] = []
    for t in ts:
        s = list(t.shape)
        a, b = (
            ([1] * (len(s) - len(shape)) + shape, s)
            if len(s) > len(shape)
            else (shape, [1] * (len(shape) - len(s)) + s)
        )
        for k, (x, y) in enumerate(zip(a, b)):
            if x != y and x != 1 and y != 1:
                raise RuntimeError(
                    f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {k}"
                )
        shape = [max(x, y) if 1 in (x, y) else x for x, y in zip(a, b)]
    return tuple(t.expand(*shape) for t in ts)


def meshgrid(*tensors: Tensors, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids: the k-th output holds the k-th input along its own dimension, broadcast over the
    others. ``indexing='ij'`` (the default, with torch's warning when not given) puts input k on dim k;
    ``'xy'`` swaps the first two dims (numpy's / matlab's Cartesian order)."""
    ts = _tensor_list(tensors)
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    swap = indexing == "xy" and len(ts) >= 2
    order = [1, 0, *range(2, len(ts))] if swap else list(range(len(ts)))
    sizes = [ts[k].numel() for k in order]
    grids = []
    for k, t in enumerate(ts):
        place = order.index(k)
        shape = [1] * len(ts)
        shape[place] = t.numel()
        grids.append(t.reshape(shape).expand(*sizes))
    return tuple(grids)


def _vector(name: str, t: Tensor) -> None:
    if t.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element from each 1-d tensor, as rows (itertools.product's order); one
    tensor comes back as it is."""
    for t in tensors:
        _vector("cartesian_prod", t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return cat([g.reshape(-1, 1) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the elements of a 1-d tensor, as rows (itertools.combinations' order,
    or combinations_with_replacement's)."""
    _vector("combinations", input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    index = tensor(rows, dtype=int64, device=input.device).reshape(-1)  # (combinations * r,)
    return input.index_select(0, index).reshape(len(rows), r)


# ------------------------------------------------------------------ the Tensor methods' top-level spellings
def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """A view of ``input``'s memory with the given sizes and strides (in elements)."""
    return input.as_strided(size, stride, storage_offset)


def as_strided_scatter(
    input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None
) -> Tensor:
    """A copy of ``input`` with ``src`` written where ``as_strided(size, stride, storage_offset)`` looks."""
    return input.as_strided_scatter(src, size, stride, storage_offset)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The view of ``input`` at ``index`` of dimension ``dim`` (that dimension removed)."""
    return input.select(dim, index)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``index`` of dimension ``dim``."""
    return input.select_scatter(src, dim, index)


def slice_scatter(
    input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Tensor:
    """A copy of ``input`` with ``src`` written into the slice ``start:end:step`` of dimension ``dim``."""
    return input.slice_scatter(src, dim, start, end, step)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written onto a diagonal."""
    return input.diagonal_scatter(src, offset, dim1, dim2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector made a diagonal matrix, or a copy of a matrix's diagonal."""
    return input.diag(diagonal)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Zeros with ``input``'s last dimension written onto diagonals of new (dim1, dim2) planes."""
    return input.diag_embed(offset, dim1, dim2)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened ``input`` as the diagonal of a square matrix."""
    return input.diagflat(offset)


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of ``input`` split into sections or at indices along ``dim``."""
    return input.tensor_split(indices_or_sections, dim)


def hsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """tensor_split along dim 1 (dim 0 of a 1-d tensor)."""
    return input.hsplit(indices_or_sections)


def vsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """tensor_split along dim 0 (at least 2-d)."""
    return input.vsplit(indices_or_sections)


def dsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """tensor_split along dim 2 (at least 3-d)."""
    return input.dsplit(indices_or_sections)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Views of consecutive pieces of the given sizes along ``dim``."""
    return input.split_with_sizes(split_sizes, dim)


def unsafe_split(input: Tensor, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``split``."""
    return input.unsafe_split(split_size, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``split_with_sizes``."""
    return input.unsafe_split_with_sizes(split_sizes, dim)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunk``."""
    return input.unsafe_chunk(chunks, dim)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Every slice of ``input`` along ``dim``, that dimension removed."""
    return input.unbind(dim)


def fliplr(input: Tensor) -> Tensor:
    """A copy with dimension 1 reversed."""
    return input.fliplr()


def flipud(input: Tensor) -> Tensor:
    """A copy with dimension 0 reversed."""
    return input.flipud()


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """A copy rotated ``k`` quarter turns in the plane ``dims``."""
    return input.rot90(k, dims)


def moveaxis(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """``movedim``: a view with dims moved from ``source`` to ``destination``."""
    return input.movedim(source, destination)


def msort(input: Tensor) -> Tensor:
    """The values of ``input`` sorted along dimension 0."""
    return input.msort()


def ravel(input: Tensor) -> Tensor:
    """The elements of ``input`` as a 1-d tensor."""
    return input.ravel()


def repeat_interleave(
    input: Tensor, repeats: int | Tensor | None = None, dim: int | None = None, *, output_size: int | None = None
) -> Tensor:
    """Each element (or slice along ``dim``) repeated ``repeats`` times; ``repeat_interleave(counts)`` alone
    gives each position of ``counts`` repeated that many times."""
    if repeats is None:
        from genesis_autograd.functions.joining import repeated_positions

        return repeated_positions(input, output_size)
    return input.repeat_interleave(repeats, dim, output_size=output_size)


__all__ = [
    "as_strided",
    "as_strided_scatter",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "block_diag",
    "broadcast_shapes",
    "broadcast_tensors",
    "cartesian_prod",
    "column_stack",
    "combinations",
    "concat",
    "concatenate",
    "diag",
    "diag_embed",
    "diagflat",
    "diagonal_scatter",
    "dsplit",
    "dstack",
    "fliplr",
    "flipud",
    "hsplit",
    "hstack",
    "meshgrid",
    "moveaxis",
    "msort",
    "ravel",
    "repeat_interleave",
    "rot90",
    "row_stack",
    "select",
    "select_scatter",
    "slice_scatter",
    "split_with_sizes",
    "tensor_split",
    "unbind",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
    "vsplit",
    "vstack",
]
