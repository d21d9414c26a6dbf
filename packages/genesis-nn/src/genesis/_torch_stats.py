"""torch.X statistics and binning: searchsorted, bucketize, bincount, histc, histogram, median, nanmedian,
quantile, nanquantile, mode, kthvalue, cummax, cummin, logcumsumexp, nansum, nanmean, trapezoid / trapz,
cumulative_trapezoid, renorm, vander.

The order statistics forward to their Tensor methods (genesis_autograd/functions/stats.py); searchsorted is
a binary-search kernel (genesis_kernels/search.py); the integrals are sums of differentiable ops.
"""

from __future__ import annotations

from typing import Any

from genesis_autograd import Tensor, arange, cat, float64, int64, tensor
from genesis_autograd import searchsorted as _searchsorted

Number = int | float

__all__ = [
    "searchsorted",
    "bucketize",
    "bincount",
    "histc",
    "histogram",
    "median",
    "nanmedian",
    "quantile",
    "nanquantile",
    "mode",
    "kthvalue",
    "cummax",
    "cummin",
    "logcumsumexp",
    "nansum",
    "nanmean",
    "trapezoid",
    "trapz",
    "cumulative_trapezoid",
    "renorm",
    "vander",
]


def searchsorted(
    sorted_sequence: Tensor,
    input: Tensor | Number,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    """For each value, the index where it would be inserted into the innermost dim of ``sorted_sequence`` to
    keep it sorted (the first such place; the last with ``right=True`` or ``side="right"``)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"
            )
        right = side == "right"
    seq = sorted_sequence.detach()
    if sorter is not None:
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(
                "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
                f"{list(seq.shape)}and got sorter tensor {list(sorter.shape)}"
            )
        seq = seq.gather(-1, sorter)
    scalar = not isinstance(input, Tensor)
    values = tensor(input, device=seq.device) if scalar else input.detach()  # type: ignore[union-attr]
    if seq.ndim > 1 and tuple(seq.shape[:-1]) != tuple(values.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
            f"tensor and input value tensor must match, but we got boundaries tensor {list(seq.shape)} and input "
            f"value tensor {list(values.shape)}"
        )
    return _searchsorted(seq, values, right, out_int32)


def bucketize(input: Tensor | Number, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each value among the 1-D ``boundaries`` (searchsorted with the arguments swapped)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """The count (or summed weights) of each value of a 1-D tensor of non-negative integers."""
    return input.bincount(weights, minlength)


def histc(input: Tensor, bins: int = 100, min: Number = 0, max: Number = 0) -> Tensor:
    """A histogram with ``bins`` equal bins over [min, max] (the data's range when they are equal)."""
    return input.histc(bins, min, max)


def histogram(
    input: Tensor,
    bins: int | Tensor,
    *,
    range: tuple[float, float] | None = None,
    weight: Tensor | None = None,
    density: bool = False,
) -> Any:
    """(hist, bin_edges): counts (or summed ``weight``) per bin; ``bins`` a count of equal bins (over
    ``range``, by default the data's) or a 1-D tensor of increasing edges. ``density`` normalises to a pdf."""
    return input.histogram(bins, range=range, weight=weight, density=density)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median (of everything, or (values, indices) along ``dim``)."""
    return input.median(dim, keepdim)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median ignoring NaN."""
    return input.nanmedian(dim, keepdim)


def quantile(
    input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """The ``q``-th quantiles along ``dim``."""
    return input.quantile(q, dim, keepdim, interpolation=interpolation)


def nanquantile(
    input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """The ``q``-th quantiles along ``dim``, ignoring NaN."""
    return input.nanquantile(q, dim, keepdim, interpolation=interpolation)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """(values, indices): the most frequent value along ``dim``."""
    return input.mode(dim, keepdim)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """(values, indices): the k-th smallest along ``dim``."""
    return input.kthvalue(k, dim, keepdim)


def cummax(input: Tensor, dim: int) -> Any:
    """(values, indices): the running maximum along ``dim``."""
    return input.cummax(dim)


def cummin(input: Tensor, dim: int) -> Any:
    """(values, indices): the running minimum along ``dim``."""
    return input.cummin(dim)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along ``dim``, without overflow."""
    return input.logcumsumexp(dim)


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The sum treating NaN as zero."""
    return input.nansum(dim, keepdim, dtype=dtype)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean of the non-NaN elements."""
    return input.nanmean(dim, keepdim, dtype=dtype)


def _spacing(y: Tensor, x: Tensor | None, dx: Number | None, dim: int) -> Any:
    """The widths between samples along dim: diff(x) broadcast to y, or the constant dx."""
    if x is None:
        return 1 if dx is None else dx
    if x.ndim == 1:
        shape = [1] * y.ndim
        shape[dim % y.ndim] = x.shape[0]
        x = x.reshape(*shape)
    n = x.shape[dim]
    return x.narrow(dim, 1, n - 1) - x.narrow(dim, 0, n - 1)


def _trapezoids(y: Tensor, x: Tensor | None, dx: Number | None, dim: int) -> Tensor:
    if x is not None and dx is not None:
        raise RuntimeError("torch.trapezoid: cannot pass both x and dx")
    n = y.shape[dim]
    if n == 0:
        return y.narrow(dim, 0, 0)
    mids = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) * 0.5
    return mids * _spacing(y, x, dx, dim)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: int = -1) -> Tensor:
    """The integral of ``y`` along ``dim`` by the trapezoidal rule, at points ``x`` or spacing ``dx`` (1)."""
    return _trapezoids(y, x, dx, dim).sum(dim)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: int = -1) -> Tensor:
    """trapezoid's older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral of ``y`` along ``dim`` (one element fewer than y)."""
    return _trapezoids(y, x, dx, dim).cumsum(dim)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` with p-norm above ``maxnorm`` scaled down to it."""
    return input.renorm(p, dim, maxnorm)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-D ``x``: columns x ** (N-1), ..., x ** 0 (reversed with ``increasing``)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    base = x if x.dtype.is_floating_point or x.dtype in (int64, float64) else x.to(int64)
    if n == 0:
        return base.unsqueeze(1).narrow(1, 0, 0)
    powers = arange(n, device=x.device)
    if not increasing:
        powers = powers.flip([0])
    cols = [base.unsqueeze(1) ** int(p) for p in powers.tolist()]
    return cat(cols, 1)
