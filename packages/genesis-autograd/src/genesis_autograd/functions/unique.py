"""Distinct values and where the nonzeros are: unique, unique_consecutive, argwhere, nonzero_static; and
UniqueMixin, their Tensor methods. None of them has a gradient (torch's have none either).

unique sorts (stably), marks where a run of equal values starts, and numbers the runs with a running sum:
the values are the run starts, the inverse is each element's run number written back through the sort's
permutation, the counts are the run lengths (an accumulating index_put). With ``dim``, the slices along
``dim`` are compared whole: a lexicographic order from one stable sort per column, last column first.
unique_consecutive is the same without the sort. Every step is an op both devices have.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import genesis_ndarray as nd
from genesis_ndarray.shape import normalize_dim

from ..tensor_base import TensorBase
from ._util import wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


def _lexicographic_order(rows: nd.NDArray) -> nd.NDArray:
    """The permutation that sorts the rows of a 2-d array lexicographically (stable)."""
    perm = nd.arange(rows.shape[0], device=rows.device)
    for col in reversed(range(rows.shape[1])):
        key = rows[(perm, col)]
        perm = perm[(key.argsort(0, False, True),)]
    return perm


def _run_starts(rows: nd.NDArray) -> nd.NDArray:
    """Whether each row (of a 2-d array) differs from the row before it; the first row always does."""
    n = rows.shape[0]
    first = nd.ones(n, dtype=nd.bool_, device=rows.device)
    if n > 1:
        differs = rows[1:] != rows[:-1]
        first[1:] = differs.any(1) if rows.shape[1] else differs.reshape(n - 1, -1).any(1)
    return first


def _unique_rows(rows: nd.NDArray, sort: bool) -> tuple[nd.NDArray, nd.NDArray, nd.NDArray]:
    """(distinct rows, the run number of each input row, each run's length) of a 2-d array."""
    n = rows.shape[0]
    perm = _lexicographic_order(rows) if sort and n else nd.arange(n, device=rows.device)
    ordered = rows[(perm,)] if sort else rows
    first = _run_starts(ordered)
    run = first.astype(nd.int64).cumsum(0) - 1 if n else nd.zeros(0, dtype=nd.int64, device=rows.device)
    keep = first.nonzero(True)[0]
    distinct = ordered[(keep,)]
    inverse = nd.zeros(n, dtype=nd.int64, device=rows.device)
    inverse[(perm,)] = run
    counts = nd.zeros(keep.shape[0], dtype=nd.int64, device=rows.device)
    counts.index_put_((run,), nd.ones(n, dtype=nd.int64, device=rows.device), accumulate=True)
    return distinct, inverse, counts


def _unique(x: Any, sort: bool, return_inverse: bool, return_counts: bool, dim: int | None) -> Any:
    data = x.data
    if dim is None:
        flat = data.reshape(-1)
        if sort and flat.shape[0]:
            values, perm = flat.sort(0, False, True)
        else:
            values, perm = flat, nd.arange(flat.shape[0], device=flat.device)
        first = _run_starts(values.reshape(-1, 1))
        run = first.astype(nd.int64).cumsum(0) - 1
        distinct = values.masked_select(first)
        inverse = nd.zeros(flat.shape[0], dtype=nd.int64, device=flat.device)
        inverse[(perm,)] = run
        counts = nd.zeros(distinct.shape[0], dtype=nd.int64, device=flat.device)
        counts.index_put_((run,), nd.ones(flat.shape[0], dtype=nd.int64, device=flat.device), accumulate=True)
        inverse = inverse.reshape(*data.shape)
    else:
        d = normalize_dim(dim, data.ndim)
        moved = data.movedim(d, 0)
        rows = moved.reshape(moved.shape[0], -1)
        distinct_rows, inverse, counts = _unique_rows(rows, sort)
        distinct = distinct_rows.reshape(distinct_rows.shape[0], *moved.shape[1:]).movedim(0, d).contiguous()
    out = [wrap(x, distinct)]
    if return_inverse:
        out.append(wrap(x, inverse))
    if return_counts:
        out.append(wrap(x, counts))
    return out[0] if len(out) == 1 else tuple(out)


class UniqueMixin(TensorBase):
    """Tensor's unique, unique_consecutive, argwhere and nonzero_static."""

    __slots__ = ()

    def unique(
        self, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
    ) -> Tensor | tuple[Tensor, ...]:
        """The distinct elements (or, with ``dim``, the distinct slices along ``dim``), in ascending order;
        with ``return_inverse`` also where each element went, with ``return_counts`` how often each occurs.
        The order is ascending even with ``sorted=False``, which torch leaves unspecified."""
        return _unique(self, True, return_inverse, return_counts, dim)

    def unique_consecutive(
        self, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
    ) -> Tensor | tuple[Tensor, ...]:
        """Each run of equal consecutive elements (or slices along ``dim``) kept once; optionally the run
        number of each element and each run's length."""
        return _unique(self, False, return_inverse, return_counts, dim)

    def argwhere(self) -> Tensor:
        """The indices of the nonzero elements, an int64 tensor of shape (count, ndim)."""
        return wrap(self, self.data.nonzero(False))

    def nonzero_static(self, *, size: int, fill_value: int = -1) -> Tensor:
        """``nonzero()`` with exactly ``size`` rows: cut off after ``size``, or padded with ``fill_value``."""
        if not isinstance(size, int) or size < 0:
            raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
        found = self.data.nonzero(False)
        ndim = max(self.ndim, 0)
        if found.shape[0] >= size:
            return wrap(self, found[:size].contiguous())
        out = nd.full((size, ndim), fill_value, dtype=nd.int64, device=self.device)
        out[: found.shape[0]] = found
        return wrap(self, out)
