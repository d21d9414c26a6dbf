"""Reductions through indices: scatter_reduce ('sum', 'prod', 'mean', 'amax', 'amin') and index_reduce
('prod', 'mean', 'amax', 'amin'), with or without self's own values (``include_self``); and
IndexReduceMixin, their Tensor methods and in-place forms.

index_reduce is scatter_reduce with its 1-d index spread over ``source``'s shape. The forward composes
ops every device has: 'sum' and 'mean' are one accumulating index_put; 'prod', 'amax' and 'amin' sort the
target positions (stable) and number each element's rank within its position, then apply one round per
rank, whose positions are all distinct, so each round is a plain gather / combine / write (the rounds are
as many as the most elements any one position receives). The backward is torch's: sum and mean route the
gradient back through a gather (mean divided by the count), amax / amin share it evenly among the
elements equal to the result, prod multiplies by the product of the others (zeros handled exactly).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import genesis_ndarray as nd
from genesis_ndarray.shape import normalize_dim

from ..tensor_base import TensorBase
from ._util import Primitive, tensor_arg, wrap
from .index_write import check_long_index, torch_name

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor

_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _lowest(dtype: Any) -> float:
    return -math.inf if dtype.is_floating_point else -(2 ** (8 * dtype.itemsize - 1)) if dtype.is_signed else 0


def _highest(dtype: Any) -> float:
    if dtype.is_floating_point:
        return math.inf
    return 2 ** (8 * dtype.itemsize - (1 if dtype.is_signed else 0)) - 1


_IDENTITY = {"sum": lambda dt: 0, "mean": lambda dt: 0, "prod": lambda dt: 1, "amax": _lowest, "amin": _highest}


def _flat_positions(index: nd.NDArray, dim: int, shape: tuple[int, ...]) -> nd.NDArray:
    """For each element of ``index`` (at coordinates c), the row-major position in a tensor of ``shape``
    of the element c with c[dim] replaced by the index value (negative values wrapped)."""
    ndim = len(shape)
    positions = nd.zeros(*index.shape, dtype=nd.int64, device=index.device)
    for d in range(ndim):
        stride = math.prod(shape[d + 1 :])
        if d == dim:
            coord = index.astype(nd.int64)
            coord = coord + (coord < 0).astype(nd.int64) * shape[d]
        else:
            along = [1] * ndim
            along[d] = index.shape[d]
            coord = nd.arange(index.shape[d], device=index.device).reshape(*along)
        positions = positions + coord * stride
    return positions.reshape(-1)


def _combine(reduce: str, a: nd.NDArray, b: nd.NDArray) -> nd.NDArray:
    if reduce == "prod":
        return a * b
    return a.maximum(b) if reduce == "amax" else a.minimum(b)


def _reduce_into(flat: nd.NDArray, pos: nd.NDArray, vals: nd.NDArray, reduce: str, counts: nd.NDArray) -> None:
    """flat[pos[i]] = reduce(flat[pos[i]], vals[i]) for every i, repeated positions combining (in place)."""
    if reduce in ("sum", "mean"):
        flat.index_put_((pos,), vals, accumulate=True)
        return
    order = pos.argsort(0, False, True)
    pos_sorted, vals_sorted = pos[order], vals[order]
    first = counts.cumsum(0) - counts  # where each position's run starts in the sorted order
    rank = nd.arange(pos.shape[0], device=pos.device) - first[pos_sorted]
    for r in range(int(counts.max().item())):
        chosen = rank == r
        p, v = pos_sorted.masked_select(chosen), vals_sorted.masked_select(chosen)
        flat[(p,)] = _combine(reduce, flat[(p,)], v)


def _counts(pos: nd.NDArray, size: int) -> nd.NDArray:
    counts = nd.zeros(size, dtype=nd.int64, device=pos.device)
    counts.index_put_((pos,), nd.ones(pos.shape[0], dtype=nd.int64, device=pos.device), accumulate=True)
    return counts


def _scatter_reduce(a: nd.NDArray, pos: nd.NDArray, vals: nd.NDArray, reduce: str, include_self: bool):
    """(the result, how many src elements reach each position) of scatter_reduce on flat data."""
    out = a.contiguous().clone()
    flat = out.reshape(-1)
    counts = _counts(pos, flat.shape[0])
    touched = counts > 0
    if not include_self:
        flat.masked_fill_(touched, _IDENTITY[reduce](a.dtype))
    _reduce_into(flat, pos, vals, reduce, counts)
    if reduce == "mean":
        n = (counts + int(include_self)).maximum(nd.ones((), dtype=nd.int64, device=pos.device))
        mean = flat.astype(nd.float64) / n if not a.dtype.is_floating_point else flat / n.astype(a.dtype)
        if not a.dtype.is_floating_point:
            mean = mean.floor()
        flat.copy_(mean.astype(a.dtype))
    return out.reshape(*a.shape), counts


class ScatterReduce(Primitive):
    """out = self with src reduced into the positions index names along dim (see the module docstring)."""

    @staticmethod
    def forward(ctx, a, dim, index, src, reduce, include_self):
        used = src.data[tuple(slice(0, n) for n in index.shape)] if src.ndim else src.data
        pos = _flat_positions(index.data, dim, tuple(a.shape))
        vals = used.reshape(-1)
        out, counts = _scatter_reduce(a.data, pos, vals, reduce, include_self)
        if ctx.records:
            ctx.saved = (a.data, vals, pos, out, counts, tuple(src.shape), tuple(index.shape))
            ctx.args = (reduce, include_self)
        return out

    @staticmethod
    def backward(ctx, g):
        a, vals, pos, out, counts, src_shape, index_shape = ctx.saved
        reduce, include_self = ctx.args
        gflat = g.data.contiguous().reshape(-1)
        touched = counts > 0
        keep_self = nd.ones(counts.shape[0], dtype=g.dtype, device=g.device)
        if not include_self:
            keep_self = keep_self.masked_fill(touched, 0)
        if reduce in ("sum", "mean"):
            if reduce == "mean":
                gflat = gflat / (counts + int(include_self)).maximum(nd.ones((), dtype=nd.int64, device=g.device))
            ga, gs = gflat * keep_self, gflat[(pos,)]
        elif reduce in ("amax", "amin"):
            oflat, aflat = out.reshape(-1), a.contiguous().reshape(-1)
            self_hits = (aflat == oflat).astype(g.dtype) * keep_self
            src_hits = (vals == oflat[(pos,)]).astype(g.dtype)
            share = self_hits.clone()
            share.index_put_((pos,), src_hits, accumulate=True)
            per = gflat / share.maximum(nd.ones((), dtype=g.dtype, device=g.device))
            ga, gs = per * self_hits, per[(pos,)] * src_hits
        else:
            ga, gs = _prod_grads(gflat, a.contiguous().reshape(-1), vals, pos, out.reshape(-1), counts, include_self)
            ga = ga * keep_self
        grad_src = nd.zeros(*src_shape, dtype=g.dtype, device=g.device)
        if src_shape:
            grad_src[tuple(slice(0, n) for n in index_shape)] = gs.reshape(*index_shape)
        elif gs.shape[0]:
            grad_src = gs.reshape(())
        return wrap(g, ga.reshape(*a.shape)), None, None, wrap(g, grad_src), None, None


def _prod_grads(g, a, vals, pos, out, counts, include_self):
    """The gradients of a product: the product of the other factors, exact where factors are zero (the
    product of the nonzero factors where this is the only zero, else zero)."""
    zeros_at = nd.zeros(counts.shape[0], dtype=nd.int64, device=g.device)
    if include_self:
        zeros_at = zeros_at + (a == 0).astype(nd.int64)
    zeros_at.index_put_((pos,), (vals == 0).astype(nd.int64), accumulate=True)
    nonzero_a = a.where(a != 0, nd.ones((), dtype=a.dtype, device=a.device))
    nonzero_vals = vals.where(vals != 0, nd.ones((), dtype=vals.dtype, device=vals.device))
    start = nonzero_a.clone() if include_self else nd.ones(counts.shape[0], dtype=a.dtype, device=a.device)
    untouched = counts == 0
    start = start.where(~untouched, nonzero_a)
    _reduce_into(start, pos, nonzero_vals, "prod", counts)  # the product of the nonzero factors

    def grad_of(x, at):
        others = (out[at] / x.where(x != 0, nd.ones((), dtype=x.dtype, device=x.device))).where(
            x != 0, start[at].where(zeros_at[at] == 1, nd.zeros((), dtype=x.dtype, device=x.device))
        )
        return g[at] * others

    everywhere = (nd.arange(counts.shape[0], device=g.device),)
    ga = grad_of(a, everywhere).where(~untouched, g)
    return ga, grad_of(vals, (pos,))


def _tensor(x: Any) -> Tensor:
    return cast("Tensor", x)


def _check_scatter(self: Any, dim: int, index: Any, src: Any, reduce: str, op: str, names: tuple) -> int:
    if reduce not in names:
        listed = ", ".join(names[:-1]) + f" or {names[-1]}"
        if op == "index_reduce":
            raise RuntimeError(f"index_reduce(): Expected reduce to be one of {listed} but got {reduce}.")
        raise RuntimeError(f"reduce argument must be either {listed}, got {reduce}")
    if src.dtype is not self.dtype:
        if op == "index_reduce":
            raise RuntimeError(
                f"index_reduce_(): self ({torch_name(self.dtype)}) and source ({torch_name(src.dtype)}) "
                "must have the same scalar type"
            )
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    check_long_index(f"{op}()", index)
    return normalize_dim(dim, max(self.ndim, 1))


class IndexReduceMixin(TensorBase):
    """Tensor's scatter_reduce and index_reduce (and their in-place forms)."""

    __slots__ = ()

    def scatter_reduce(self, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True) -> Tensor:
        """A copy of self with each ``src[i][j]`` reduced into ``out[index[i][j]][j]`` (dim=0) by ``reduce``
        ('sum', 'prod', 'mean', 'amax' or 'amin'); ``include_self=False`` leaves self's values out of the
        positions that receive something."""
        index = tensor_arg(self, index, "scatter_reduce", "index")
        src = tensor_arg(self, src, "scatter_reduce", "src")
        d = _check_scatter(self, dim, index, src, reduce, "scatter_reduce", _SCATTER_REDUCTIONS)
        if index.ndim != self.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
        too_big = any(i > s for k, (i, s) in enumerate(zip(index.shape, self.shape)) if k != d) or any(
            i > s for i, s in zip(index.shape, src.shape)
        )
        if too_big:
            raise RuntimeError(
                f"Expected index {list(index.shape)} to be no larger than self {list(self.shape)} apart from "
                f"dimension {d} and to be no larger size than src {list(src.shape)}"
            )
        size = self.shape[d] if self.ndim else 1
        if index.numel():
            low, high = int(index.data.min().item()), int(index.data.max().item())
            if high >= size or low < -size:
                bad = high if high >= size else low
                raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
        return ScatterReduce.apply(_tensor(self), d, index, src, reduce, include_self)

    def scatter_reduce_(
        self, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
    ) -> Tensor:
        """In-place version of :meth:`scatter_reduce`."""
        return self._math_inplace("scatter_reduce", dim, index, src, reduce, include_self=include_self)

    def index_reduce(
        self, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self: bool = True
    ) -> Tensor:
        """A copy of self with each slice ``source[..., j, ...]`` (along ``dim``) reduced into the slice at
        ``index[j]`` by ``reduce`` ('prod', 'mean', 'amax' or 'amin'), with or without self's values."""
        index = tensor_arg(self, index, "index_reduce", "index")
        source = tensor_arg(self, source, "index_reduce", "source")
        d = _check_scatter(self, dim, index, source, reduce, "index_reduce", _INDEX_REDUCTIONS)
        if index.ndim > 1:
            raise IndexError(f"index_reduce_(): Index should have dimension 1 or 0 (got {index.ndim})")
        if source.ndim != self.ndim or any(s != t for k, (s, t) in enumerate(zip(source.shape, self.shape)) if k != d):
            raise RuntimeError(
                "source tensor shape must match self tensor shape, excluding the specified dimension. Got "
                f"self.shape = {list(self.shape)} source.shape = {list(source.shape)}"
            )
        n = source.shape[d] if source.ndim else 1
        if index.numel() != n:
            raise RuntimeError(
                f"index_reduce_(): Number of indices ({index.numel()}) should be equal to source.size(dim): "
                f"({n}), for dim: {d}"
            )
        size = self.shape[d] if self.ndim else 1
        if index.numel():
            low, high = int(index.data.min().item()), int(index.data.max().item())
            if high >= size or low < -size:
                bad = high if high >= size else low
                raise IndexError(f"index_reduce_(): index {bad} is out of bounds for dimension {d} with size {size}")
        along = [1] * self.ndim
        if along:
            along[d] = n
        spread = _tensor(index).reshape(along).expand(*source.shape) if along else _tensor(index).reshape(())
        return ScatterReduce.apply(_tensor(self), d, spread, source, reduce, include_self)

    def index_reduce_(
        self, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self: bool = True
    ) -> Tensor:
        """In-place version of :meth:`index_reduce`."""
        return self._math_inplace("index_reduce", dim, index, source, reduce, include_self=include_self)
