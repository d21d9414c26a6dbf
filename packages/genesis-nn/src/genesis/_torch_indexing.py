"""torch.X indexing functions: isin, unravel_index, tril_indices / triu_indices, and the top-level spellings
of the Tensor methods of genesis_autograd's functions/index_write.py, index_reduce.py and unique.py (take,
put, index_copy, index_fill, index_put, index_reduce, masked_scatter, scatter_reduce, unique, argwhere, ...).

Everything is composed of Tensor ops both devices have; arguments are checked as torch does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genesis_autograd import Tensor, arange, bool_, cat, int64, promote_types, tensor

Number = int | float | bool
_ISIN_CHUNK = 1 << 22  # comparisons per block of isin's all-pairs test: bounds its temporary memory


def isin(
    elements: Tensor | Number, test_elements: Tensor | Number, *, assume_unique: bool = False, invert: bool = False
) -> Tensor:
    """Whether each of ``elements`` occurs among ``test_elements`` (either may be a number), as a bool tensor
    of ``elements``' shape; ``invert`` asks whether it does not. The values are compared in their promoted
    dtype, block by block over ``elements``."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: at least one Tensor is needed")
    device = elements.device if isinstance(elements, Tensor) else test_elements.device  # type: ignore[union-attr]
    elems = elements if isinstance(elements, Tensor) else tensor(elements, device=device)
    tests = test_elements if isinstance(test_elements, Tensor) else tensor(test_elements, device=device)
    dtype = promote_types(elems.dtype, tests.dtype)
    flat, pool = elems.reshape(-1).to(dtype), tests.reshape(-1).to(dtype)
    step = max(1, _ISIN_CHUNK // max(pool.numel(), 1))
    if pool.numel() == 0 or flat.numel() == 0:
        found = flat.new_zeros(tuple(flat.shape), dtype=bool_)
    else:
        blocks = range(0, flat.numel(), step)
        parts = [(flat[i : i + step].unsqueeze(1) == pool.unsqueeze(0)).any(1) for i in blocks]
        found = cat(parts, 0) if len(parts) > 1 else parts[0]
    found = found.reshape(tuple(elems.shape))
    return found.logical_not() if invert else found


def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of ``shape`` of the flat (row-major) ``indices``: one int64 tensor per
    dimension, each of ``indices``' shape (floor division and remainder, as torch: no bounds check)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a tensor, but got {type(indices).__name__}")
    if indices.dtype.is_floating_point or indices.dtype.name == "bool":
        raise TypeError(f"expected 'indices' to be integer dtype, but got genesis.{indices.dtype.name}")
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(d < 0 for d in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {dims}")
    flat = indices.to(int64)
    out, inner = [], 1
    for d in reversed(dims):
        out.append(flat.floor_divide(inner).remainder(d) if d else flat * 0)
        inner *= d
    return tuple(reversed(out))


def _triangle_indices(name: str, row: int, col: int, offset: int, dtype: Any, device: Any, lower: bool) -> Tensor:
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    rows = arange(row, device=device).reshape(-1, 1)
    cols = arange(col, device=device).reshape(1, -1)
    keep = (cols - rows <= offset) if lower else (cols - rows >= offset)
    return keep.argwhere().t().contiguous().to(int64 if dtype is None else dtype)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, n) coordinates of the lower triangle (up to diagonal ``offset``) of a row x col matrix, row
    by row."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, lower=True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, n) coordinates of the upper triangle (from diagonal ``offset``) of a row x col matrix, row
    by row."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, lower=False)


# ------------------------------------------------------------------ the Tensor methods' top-level spellings
def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of the flattened ``input`` at ``index``."""
    return input.take(index)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source`` written (or added) at flat positions ``index``."""
    return input.put(index, source, accumulate)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` written at ``index`` along ``dim``."""
    return input.index_copy(dim, index, source)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Number | Tensor) -> Tensor:
    """A copy of ``input`` with ``value`` in the slices at ``index`` along ``dim``."""
    return input.index_fill(dim, index, value)


def index_put(input: Tensor, indices: Sequence[Tensor | None], values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` written (or added) at ``input[indices]``."""
    return input.index_put(indices, values, accumulate)


def index_put_(input: Tensor, indices: Sequence[Tensor | None], values: Tensor, accumulate: bool = False) -> Tensor:
    """``input.index_put_(indices, values, accumulate)``: the write in place."""
    return input.index_put_(indices, values, accumulate)


def index_reduce(
    input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` reduced into the slices at ``index``."""
    return input.index_reduce(dim, index, source, reduce, include_self=include_self)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with ``source``'s first elements written where ``mask`` holds."""
    return input.masked_scatter(mask, source)


def scatter_reduce(
    input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """A copy of ``input`` with ``src`` reduced into the positions ``index`` names along ``dim``."""
    return input.scatter_reduce(dim, index, src, reduce, include_self=include_self)


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Tensor | tuple[Tensor, ...]:
    """The distinct elements (or slices along ``dim``) of ``input``, ascending; optionally inverse and counts."""
    return input.unique(sorted, return_inverse, return_counts, dim)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Tensor | tuple[Tensor, ...]:
    """Each run of equal consecutive elements (or slices) of ``input`` kept once."""
    return input.unique_consecutive(return_inverse, return_counts, dim)


def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements of ``input``, shape (count, ndim)."""
    return input.argwhere()


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero(input)`` with exactly ``size`` rows (cut, or padded with ``fill_value``)."""
    return input.nonzero_static(size=size, fill_value=fill_value)


__all__ = [
    "argwhere",
    "index_copy",
    "index_fill",
    "index_put",
    "index_put_",
    "index_reduce",
    "isin",
    "masked_scatter",
    "nonzero_static",
    "put",
    "scatter_reduce",
    "take",
    "tril_indices",
    "triu_indices",
    "unique",
    "unique_consecutive",
    "unravel_index",
]
