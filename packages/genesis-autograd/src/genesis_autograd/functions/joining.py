"""Splitting, selecting, scattering into slices, diagonals, flips and repeats: JoiningMixin, the Tensor
methods torch has for them (select, tensor_split, hsplit, unbind, select_scatter, slice_scatter,
diagonal_scatter, as_strided_scatter, diag, diag_embed, diagflat, fliplr, rot90, msort, ravel,
repeat_interleave, ...).

Every method is a composition of ops that already record their gradients (views, ``x[index] = v``
on a fresh copy, ``index_select``, ``cat``, ``sort``), so it differentiates, on every device, with
no Function of its own. Arguments are checked first, with torch's error classes and messages.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import genesis_ndarray as nd
from genesis_ndarray.shape import normalize_dim

from ..tensor_base import TensorBase
from ._util import is_tensor, wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


def _tensor(x: Any) -> Tensor:
    """A mixin's ``self`` as the Tensor it is (the mixins are only Tensor's bases), for the type checker."""
    return cast("Tensor", x)


def _at(dim: int, index: Any) -> tuple:
    """The index tuple that applies ``index`` to dimension ``dim`` (every earlier dim taken whole)."""
    return (slice(None),) * dim + (index,)


def _check_src(src: Any, view: Any) -> None:
    if tuple(src.shape) != tuple(view.shape):
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. "
            f"src size = {list(src.shape)}, slice size = {list(view.shape)}"
        )


def _split_points(arg: Any) -> int | list[int]:
    """tensor_split's ``indices_or_sections``: an int (sections) or a list of indices; a 0-d integer Tensor
    is a number of sections, a 1-d one a list of indices (torch reads both from the cpu)."""
    if is_tensor(arg):
        if arg.dtype.is_floating_point or arg.dtype.name == "bool":
            raise RuntimeError(
                f"tensor_split expected tensor_indices_or_sections to have an integral dtype, but got {arg.dtype.name}"
            )
        if arg.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {arg.ndim} dims"
            )
        return int(arg.item()) if arg.ndim == 0 else [int(v) for v in arg.tolist()]
    return int(arg) if isinstance(arg, int) else [int(v) for v in arg]


class JoiningMixin(TensorBase):
    """Tensor's split / select / scatter-into-slice / diagonal / flip / repeat methods (compositions)."""

    __slots__ = ()

    # ------------------------------------------------------------- select and its scatters
    def select(self, dim: int, index: int) -> Tensor:
        """The view of self at position ``index`` of dimension ``dim`` (that dimension removed)."""
        d = normalize_dim(dim, self.ndim)
        size = self.shape[d]
        if not -size <= index < size:
            raise IndexError(
                f"select(): index {index} out of range for tensor of size {list(self.shape)} at dimension {dim}"
            )
        return _tensor(self)[_at(d, int(index))]

    def _scatter_into(self, index: tuple, src: Tensor) -> Tensor:
        """A copy of self with ``src`` written at ``index`` (src must have the indexed view's shape)."""
        _check_src(src, _tensor(self)[index])
        out = self.clone()
        out[index] = src
        return out

    def select_scatter(self, src: Tensor, dim: int, index: int) -> Tensor:
        """A copy of self with ``src`` written where ``select(dim, index)`` looks."""
        self.select(dim, index)  # torch's checks of dim and index
        return self._scatter_into(_at(normalize_dim(dim, self.ndim), int(index)), src)

    def slice_scatter(
        self, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
    ) -> Tensor:
        """A copy of self with ``src`` written into the slice ``start:end:step`` of dimension ``dim``."""
        if step <= 0:
            raise RuntimeError("slice step must be positive")
        return self._scatter_into(_at(normalize_dim(dim, self.ndim), slice(start, end, step)), src)

    def diagonal_scatter(self, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """A copy of self with ``src`` written onto the diagonal ``diagonal(offset, dim1, dim2)`` shows."""
        out = _tensor(self).clone()
        view = out.diagonal(offset, dim1, dim2)
        _check_src(src, view)
        view.copy_(src)  # an in-place write through a view: recorded for both inputs
        return out

    def as_strided_scatter(
        self, src: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None
    ) -> Tensor:
        """A (contiguous) copy of self with ``src`` written where ``as_strided(size, stride, storage_offset)``
        of that copy looks."""
        out = _tensor(self).contiguous().clone()
        view = out.as_strided(size, stride, 0 if storage_offset is None else storage_offset)
        _check_src(src, view)
        view.copy_(src)
        return out

    # ------------------------------------------------------------- splits
    def tensor_split(self, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
        """Views of self split along ``dim``: into ``n`` nearly equal pieces (the first ``size % n`` one
        larger), or at the given indices (Python slicing: ``[:i0], [i0:i1], ..., [ik:]``)."""
        if self.ndim == 0:
            raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
        d = normalize_dim(dim, self.ndim)
        points = _split_points(indices_or_sections)
        if isinstance(points, int):
            if points <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {points}")
            size = self.shape[d]
            base, extra = divmod(size, points)
            bounds, start = [], 0
            for i in range(points):
                start += base + (1 if i < extra else 0)
                bounds.append(start)
            points = bounds[:-1]
        edges = [None, *points, None]
        return tuple(_tensor(self)[_at(d, slice(a, b))] for a, b in itertools.pairwise(edges))

    def _directional_split(self, name: str, dim: int, min_dims: int, arg: Any) -> tuple[Tensor, ...]:
        if self.ndim < min_dims:
            raise RuntimeError(
                f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                f"{self.ndim} dimensions!"
            )
        if isinstance(arg, int) and not is_tensor(arg):
            size = self.shape[dim]
            if arg == 0 or size % arg:
                raise RuntimeError(
                    f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                    f"{size} is not divisible by the split_size {arg}!"
                )
        return self.tensor_split(arg, dim)

    def hsplit(self, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        """tensor_split along dim 1 (dim 0 for a 1-d tensor); a number of sections must divide the size."""
        dim = 1 if self.ndim >= 2 else 0
        return self._directional_split("hsplit", dim, 1, indices_or_sections)

    def vsplit(self, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        """tensor_split along dim 0 of a tensor of at least 2 dims; a number of sections must divide the size."""
        return self._directional_split("vsplit", 0, 2, indices_or_sections)

    def dsplit(self, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        """tensor_split along dim 2 of a tensor of at least 3 dims; a number of sections must divide the size."""
        return self._directional_split("dsplit", 2, 3, indices_or_sections)

    def split_with_sizes(self, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """Views of consecutive pieces of the given sizes (summing to the size of ``dim``) along ``dim``."""
        return _tensor(self).split(list(split_sizes), dim)

    def unsafe_split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """``split``; torch's unsafe form skips the view bookkeeping, which genesis's split needs no less."""
        return _tensor(self).split(split_size, dim)

    def unsafe_split_with_sizes(self, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """``split_with_sizes`` (see ``unsafe_split``)."""
        return self.split_with_sizes(split_sizes, dim)

    def unsafe_chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """``chunk`` (see ``unsafe_split``)."""
        return _tensor(self).chunk(chunks, dim)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        """Every slice along ``dim`` (that dimension removed), as views; one graph node for all of them."""
        d = normalize_dim(dim, self.ndim)
        if self.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if self.shape[d] == 0:
            return ()
        return tuple(p.squeeze(d) for p in _tensor(self).split(1, d))

    # ------------------------------------------------------------- diagonals
    def diag(self, diagonal: int = 0) -> Tensor:
        """A 1-d tensor made the ``diagonal``-th diagonal of a new square matrix, or a copy of a matrix's
        ``diagonal``-th diagonal."""
        if self.ndim == 1:
            n = self.shape[0] + abs(diagonal)
            out = wrap(self, nd.zeros(n, n, dtype=self.dtype, device=self.device))
            out.diagonal(diagonal).copy_(self)
            return out
        if self.ndim == 2:
            return _tensor(self).diagonal(diagonal).clone()
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        """Zeros with self's last dimension written onto the ``offset``-th diagonal of the planes (dim1, dim2)
        of the result (one dimension more than self)."""
        ndim = self.ndim + 1
        d1, d2 = normalize_dim(dim1, ndim), normalize_dim(dim2, ndim)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        n = self.shape[-1] + abs(offset)
        rest = iter(self.shape[:-1])
        shape = [n if d in (d1, d2) else next(rest) for d in range(ndim)]
        out = wrap(self, nd.zeros(*shape, dtype=self.dtype, device=self.device))
        out.diagonal(offset, d1, d2).copy_(self)
        return out

    def diagflat(self, offset: int = 0) -> Tensor:
        """The flattened tensor made the ``offset``-th diagonal of a new square matrix."""
        return _tensor(self).reshape(-1).diag(offset)

    # ------------------------------------------------------------- flips, rotation, sorting, flattening
    def fliplr(self) -> Tensor:
        """A copy with dimension 1 reversed (left / right)."""
        if self.ndim < 2:
            raise RuntimeError("Input must be >= 2-d.")
        return _tensor(self).flip([1])

    def flipud(self) -> Tensor:
        """A copy with dimension 0 reversed (up / down)."""
        if self.ndim < 1:
            raise RuntimeError("Input must be >= 1-d.")
        return _tensor(self).flip([0])

    def rot90(self, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
        """A copy rotated ``k`` quarter turns in the plane ``dims``, from the first toward the second."""
        dims = list(dims)
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.ndim < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
        d0, d1 = normalize_dim(dims[0], self.ndim), normalize_dim(dims[1], self.ndim)
        if d0 == d1:
            raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
        turns = k % 4
        if turns == 1:
            return _tensor(self).flip([d1]).transpose(d0, d1)
        if turns == 2:
            return _tensor(self).flip([d0, d1])
        if turns == 3:
            return _tensor(self).flip([d0]).transpose(d0, d1)
        return self.clone()

    def msort(self) -> Tensor:
        """The values sorted along dimension 0."""
        return _tensor(self).sort(0)[0]

    def ravel(self) -> Tensor:
        """The elements as a 1-d tensor (a view when the strides allow, else a copy)."""
        return _tensor(self).reshape(-1)

    # ------------------------------------------------------------- repeat_interleave
    def repeat_interleave(
        self, repeats: int | Tensor, dim: int | None = None, *, output_size: int | None = None
    ) -> Tensor:
        """Each element (or slice along ``dim``) repeated ``repeats`` times in place: ``[a, b]`` with 2 gives
        ``[a, a, b, b]``; ``repeats`` may be a tensor of one count per slice. Without ``dim``, of the flattened
        tensor."""
        x = _tensor(self).reshape(-1) if dim is None else _tensor(self)
        d = 0 if dim is None else normalize_dim(dim, x.ndim)
        if not is_tensor(repeats) or (repeats.numel() == 1 and repeats.ndim <= 1):
            count = int(repeats.item()) if is_tensor(repeats) else int(repeats)
            if count < 0:
                raise RuntimeError("Repeats must be non-negative")
            size = x.shape[d]
            if output_size is not None and output_size != size * count:
                raise RuntimeError("allocated size does not match required size")
            if count == 0 or size == 0:
                return x.narrow(d, 0, 0) if count == 0 else x
            shape = list(x.shape)
            expanded = x.unsqueeze(d + 1).expand(*shape[: d + 1], count, *shape[d + 1 :])
            return expanded.flatten(d, d + 1)
        if repeats.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if repeats.shape[0] != x.shape[d]:
            raise RuntimeError(
                "repeats must have the same size as input along dim, but got "
                f"repeats.size(0) = {repeats.shape[0]} and input.size({d}) = {x.shape[d]}"
            )
        index = repeated_positions(repeats, output_size)
        return x.index_select(d, index.to(x.device))


def repeated_positions(repeats: Any, output_size: int | None = None) -> Any:
    """``torch.repeat_interleave(repeats)``: each position ``i`` written ``repeats[i]`` times, in order
    (``[2, 0, 1]`` gives ``[0, 0, 2]``). A 1 is added at each run's end in a zero array one longer than the
    result, then a running sum numbers the runs: O(result + n) on every device."""
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype.is_floating_point or repeats.dtype.name == "bool":
        raise RuntimeError(f"repeats has to be Long or Int tensor, but got {repeats.dtype.name}")
    counts = repeats.data.astype(nd.int64)
    n = counts.shape[0]
    if n and bool(counts.min().item() < 0):
        raise RuntimeError("repeats can not be negative")
    total = int(counts.sum().item()) if n else 0
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    marks = nd.zeros(total + 1, dtype=nd.int64, device=counts.device)
    if n:
        ends = counts.cumsum(0)  # run i ends before ends[i]; empty runs end where the previous one did
        marks.index_add_(0, ends, nd.ones(n, dtype=nd.int64, device=counts.device))
    positions = marks.cumsum(0)[:total] if total else marks[:0]
    return wrap(repeats, positions)
