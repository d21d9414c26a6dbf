"""Reductions: sum, mean, prod, amax/amin, max/min along a dim, var, logsumexp, vector norms; and
ReduceMixin, their Tensor methods (with argmax/argmin/all/any, which have no gradient).

Each backward re-expands the gradient over the reduced dims.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from genesis_ndarray import arange, get_default_dtype
from genesis_ndarray.shape import normalize_dims

from ..tensor_base import TensorBase
from ._util import Primitive, ValuesIndices, check_output_version, saved_output, wrap
from .scan import exclusive_prod, to_dtype

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from genesis_ndarray import DType

    from ..tensor import Tensor


def _dims(a, dim) -> tuple[int, ...]:
    return normalize_dims(dim, a.ndim) if a.ndim else ()


def _refuse_empty(op: str, a, dim) -> None:
    """torch's errors for a reduction without an identity (max, argmax, ...) over nothing: a
    RuntimeError for the whole of an empty tensor (an IndexError for the arg- forms, as torch), an
    IndexError for an empty reduced dim. Checked here, before any backend, so every device agrees."""
    if dim is None:
        if a.numel() == 0:
            hint = "" if op.startswith("arg") else " Specify the reduction dim with the 'dim' argument."
            error = IndexError if op.startswith("arg") else RuntimeError
            raise error(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.{hint}")
        return
    for d in _dims(a, dim):
        if a.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _expand_back(g, shape, dims, keepdim):
    """A reduced gradient viewed back to the input's shape (no copy)."""
    if not keepdim and dims:
        kept = tuple(1 if i in dims else s for i, s in enumerate(shape))
        g = g.reshape(kept)
    return g.expand(*shape)


class Sum(Primitive):
    @staticmethod
    def forward(ctx, a, dim, keepdim, dtype):
        if ctx.records:
            ctx.geometry = (a.data.shape, _dims(a, dim), keepdim, a.data.dtype)
        elif dim is not None:
            _dims(a, dim)  # the dims are checked here, with genesis's message, recorded or not
        return a.data.sum(dim, keepdim, dtype)

    @staticmethod
    def backward(ctx, g):
        shape, dims, keepdim, dtype = ctx.geometry
        return _expand_back(g, shape, dims, keepdim).to(dtype), None, None, None


class Mean(Primitive):
    @staticmethod
    def forward(ctx, a, dim, keepdim, dtype):
        dims = _dims(a, dim)
        ctx.geometry = (tuple(a.shape), dims, keepdim, a.dtype)
        ctx.count = math.prod(a.shape[d] for d in dims)
        return a.data.mean(dim, keepdim, dtype)

    @staticmethod
    def backward(ctx, g):
        shape, dims, keepdim, dtype = ctx.geometry
        return (_expand_back(g, shape, dims, keepdim) / ctx.count).to(dtype), None, None, None


class Prod(Primitive):
    """prod over one dim (or all). Without zeros the gradient is prod / x; with zeros (found with one
    read-back, as torch does) it is the product of the other elements, as exclusive products from both
    ends: exact, and itself differentiable."""

    @staticmethod
    def forward(ctx, a, dim, keepdim, dtype):
        out = a.data.prod(dim, keepdim, dtype)
        if ctx.records:
            ctx.save_for_backward(a)
            ctx.args = (dim, keepdim, dtype)
            ctx.out = out
        return out

    @staticmethod
    def backward(ctx, g):
        dim, keepdim, dtype = ctx.args
        y = saved_output(ctx, g, lambda a: a.prod(dim, keepdim, dtype=dtype))
        (a,) = ctx.saved_tensors
        x = to_dtype(a, dtype)
        if x.ndim == 0:
            return g.to(a.dtype), None, None, None
        if dim is None:
            x, dim, g, y = x.reshape(-1), 0, g.reshape(1), y.reshape(1)
        elif not keepdim:
            g, y = g.unsqueeze(dim), y.unsqueeze(dim)
        dim %= x.ndim
        if (x == 0).any().item():
            grad = g * exclusive_prod(x, dim, reverse=False) * exclusive_prod(x, dim, reverse=True)
        else:
            grad = g * y / x
        return grad.reshape(*a.shape).to(a.dtype), None, None, None


class _Extreme(Primitive):
    """amax / amin: the gradient is shared evenly among tied extremes, as torch."""

    op = ""

    @classmethod
    def forward(cls, ctx, a, dim, keepdim):
        ctx.save_for_backward(a)
        ctx.geometry = (tuple(a.shape), _dims(a, dim), keepdim)
        ctx.out = getattr(a.data, cls.op)(dim, keepdim)
        return ctx.out

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        shape, dims, keepdim = ctx.geometry
        check_output_version(ctx)
        out = _expand_back(wrap(g, ctx.out), shape, dims, keepdim)
        hit = (a == out).to(g.dtype)
        count = hit.sum(dims, keepdim=True) if dims else hit
        return _expand_back(g, shape, dims, keepdim) * hit / count, None, None


class Amax(_Extreme):
    op = "amax"


class Amin(_Extreme):
    op = "amin"


class _ExtremeDim(Primitive):
    """max / min along a dim: (values, indices); the gradient goes to the index."""

    op = ""

    @classmethod
    def forward(cls, ctx, a, dim, keepdim):
        values, indices = getattr(a.data, cls.op)(dim, keepdim)
        dim = _dims(a, dim)[0] if a.ndim else 0
        ctx.geometry = (tuple(a.shape), dim, keepdim, a.dtype, a.device)
        ctx.indices = indices
        ctx.mark_non_differentiable(1)
        return values, indices

    @staticmethod
    def backward(ctx, g, _g_indices):
        shape, dim, keepdim, dtype, device = ctx.geometry
        if not shape:
            return g, None, None
        index = ctx.indices if keepdim else ctx.indices.unsqueeze(dim)
        positions = arange(shape[dim], device=device).reshape(
            *[shape[dim] if i == dim else 1 for i in range(len(shape))]
        )
        one_hot = wrap(g, (positions == index).astype(dtype))
        return _expand_back(g, shape, (dim,), keepdim) * one_hot, None, None


class MaxDim(_ExtremeDim):
    op = "max"


class MinDim(_ExtremeDim):
    op = "min"


class Var(Primitive):
    @staticmethod
    def forward(ctx, a, dim, correction, keepdim):
        dims = _dims(a, dim)
        ctx.save_for_backward(a)
        ctx.geometry = (tuple(a.shape), dims, keepdim)
        ctx.denominator = max(math.prod(a.shape[d] for d in dims) - correction, 0)
        return a.data.var(dim, correction, keepdim)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        shape, dims, keepdim = ctx.geometry
        centered = a - a.mean(dims, keepdim=True)
        return _expand_back(g, shape, dims, keepdim) * centered * (2.0 / ctx.denominator), None, None, None


class Logsumexp(Primitive):
    @staticmethod
    def forward(ctx, a, dim, keepdim):
        ctx.save_for_backward(a)
        ctx.geometry = (tuple(a.shape), _dims(a, dim), keepdim)
        return a.data.logsumexp(dim, keepdim)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        shape, dims, keepdim = ctx.geometry
        out = a.logsumexp(dims, keepdim=True)
        return _expand_back(g, shape, dims, keepdim) * (a - out).exp(), None, None


class VectorNorm(Primitive):
    """torch.linalg.vector_norm. Where the norm is 0 the gradient is 0, as in torch."""

    @staticmethod
    def forward(ctx, a, ord, dim, keepdim):
        ctx.save_for_backward(a)
        ctx.geometry = (tuple(a.shape), _dims(a, dim), keepdim, ord)
        ctx.out = a.data.vector_norm(ord, dim, keepdim)
        return ctx.out

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        shape, dims, keepdim, ord = ctx.geometry
        if ord == 0:  # a count of non-zeros: torch leaves the input's gradient undefined
            return None, None, None, None
        norm = _expand_back(saved_output(ctx, g, lambda x: x.vector_norm(ord, dims, keepdim)), shape, dims, keepdim)
        g = _expand_back(g, shape, dims, keepdim)
        if ord == 1:
            return g * a.sign(), None, None, None
        if math.isinf(ord):
            hit = (a.abs() == norm).to(g.dtype)
            count = hit.sum(dims, keepdim=True) if dims else hit
            return g * a.sign() * hit / count, None, None, None
        safe = norm.masked_fill(norm == 0, 1) if ord == 2 else norm.masked_fill(norm == 0, 1) ** (ord - 1)
        if ord == 2:
            scaled = a
        else:  # sign(x) |x|^(ord-1), with 0 at x = 0 (|0|^(ord-1) is inf for ord < 1)
            scaled = a.sign() * a.abs().masked_fill(a == 0, 1) ** (ord - 1)
        return (g * scaled / safe).masked_fill(norm == 0, 0), None, None, None


class ReduceMixin(TensorBase):
    """Tensor's reductions. max / min with a dim give (values, indices), named as torch.return_types."""

    __slots__ = ()

    def sum(
        self, dim: int | Sequence[int] | None = None, keepdim: bool = False, dtype: DType | str | None = None
    ) -> Tensor:
        """The sum of the elements over ``dim`` (all of them by default).

        Args:
            dim: a dimension or a tuple of dimensions to reduce.
            keepdim: whether the reduced dimensions stay, with size 1.
            dtype: the dtype to accumulate and return in; by default self's, with bool and integer
                inputs summed in int64, as torch.
        """
        return Sum.apply(self, dim, keepdim, dtype)

    def mean(
        self, dim: int | Sequence[int] | None = None, keepdim: bool = False, dtype: DType | str | None = None
    ) -> Tensor:
        """The mean of the elements over ``dim`` (all of them by default); floating-point inputs only.

        Args:
            dim: a dimension or a tuple of dimensions to reduce.
            keepdim: whether the reduced dimensions stay, with size 1.
            dtype: the dtype to compute and return in.
        """
        return Mean.apply(self, dim, keepdim, dtype)

    def prod(self, dim: int | None = None, keepdim: bool = False, dtype=None) -> Tensor:
        """The product of the elements over one dimension ``dim`` (all of them by default).

        Args:
            dim: the dimension to reduce (one int, as torch).
            keepdim: whether the reduced dimensions stay, with size 1.
            dtype: the dtype to compute and return in.
        """
        if dim is not None and not isinstance(dim, int):
            raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
        return Prod.apply(self, dim, keepdim, dtype)

    def amax(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        """The largest element over ``dim`` (all by default); the gradient is shared evenly among ties."""
        _refuse_empty("amax", self, dim)
        return Amax.apply(self, dim, keepdim)

    def amin(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        """The smallest element over ``dim`` (all by default); the gradient is shared evenly among ties."""
        _refuse_empty("amin", self, dim)
        return Amin.apply(self, dim, keepdim)

    def max(self, dim: int | Tensor | None = None, keepdim: bool = False) -> Any:
        """The largest element; with ``dim``, the named tuple (values, indices) along it; with a Tensor,
        the elementwise maximum (as ``maximum``).
        """
        if isinstance(dim, self._result_type):
            return self.maximum(dim)
        _refuse_empty("max", self, dim)
        if dim is None:
            return Amax.apply(self, None, False)
        return ValuesIndices(*MaxDim.apply(self, dim, keepdim))

    def min(self, dim: int | Tensor | None = None, keepdim: bool = False) -> Any:
        """The smallest element; with ``dim``, the named tuple (values, indices) along it; with a Tensor,
        the elementwise minimum (as ``minimum``).
        """
        if isinstance(dim, self._result_type):
            return self.minimum(dim)
        _refuse_empty("min", self, dim)
        if dim is None:
            return Amin.apply(self, None, False)
        return ValuesIndices(*MinDim.apply(self, dim, keepdim))

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The int64 index of the largest element along ``dim``, or in the flattened tensor without it."""
        _refuse_empty("argmax", self, dim)
        return self._result_type(self.data.argmax(dim, keepdim))

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The int64 index of the smallest element along ``dim``, or in the flattened tensor without it."""
        _refuse_empty("argmin", self, dim)
        return self._result_type(self.data.argmin(dim, keepdim))

    def var(
        self,
        dim: int | Sequence[int] | None = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
    ) -> Tensor:
        """The variance over ``dim`` (all elements by default): sum((x - mean)^2) / (N - correction).

        Args:
            dim: a dimension or a tuple of dimensions to reduce.
            unbiased: the older spelling: True for correction=1 (the default), False for 0.
            keepdim: whether the reduced dimensions stay, with size 1.
            correction: subtracted from N in the divisor (1: Bessel's correction).
        """
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        return Var.apply(self, dim, correction, keepdim)

    def std(
        self,
        dim: int | Sequence[int] | None = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
    ) -> Tensor:
        """The standard deviation over ``dim``: the square root of ``var`` with the same arguments."""
        return self.var(dim, unbiased, keepdim, correction=correction).sqrt()

    def vector_norm(
        self,
        ord: float = 2,
        dim: int | Sequence[int] | None = None,
        keepdim: bool = False,
        *,
        dtype: DType | str | None = None,
    ) -> Tensor:
        """torch.linalg.vector_norm: ``sum(|x|^ord)^(1/ord)`` over ``dim`` (inf / -inf: max / min of |x|)."""
        x = self if dtype is None else self.to(dtype=dtype)
        return VectorNorm.apply(x, float(ord), dim, keepdim)

    def norm(
        self,
        p: float | str = "fro",
        dim: int | Sequence[int] | None = None,
        keepdim: bool = False,
        dtype: DType | str | None = None,
    ) -> Tensor:
        """torch.norm for vector norms: ``p`` a number, inf or "fro" (the 2-norm over ``dim``)."""
        if isinstance(p, str):
            if p != "fro":
                raise RuntimeError(f"norm: the {p!r} norm is a matrix norm, which genesis does not implement")
            p = 2
        return self.vector_norm(p, dim, keepdim, dtype=dtype)

    def logsumexp(self, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))) over ``dim``, computed without overflow; integers in the default float dtype."""
        if not self.dtype.is_floating_point:  # torch computes integer input in the default dtype
            return Logsumexp.apply(self.to(get_default_dtype()), dim, keepdim)
        return Logsumexp.apply(self, dim, keepdim)

    def all(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        """Whether every element over ``dim`` (all by default) is nonzero: a bool tensor."""
        return self._result_type(self.data.all(dim, keepdim))

    def any(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        """Whether some element over ``dim`` (all by default) is nonzero: a bool tensor."""
        return self._result_type(self.data.any(dim, keepdim))
