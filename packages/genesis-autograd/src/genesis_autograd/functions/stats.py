"""Order statistics and running extremes, composed of sort / gather / scans so they run on every device:
median / nanmedian (torch's lower median), quantile / nanquantile (five interpolations), kthvalue, mode,
cummax / cummin, logcumsumexp, nansum / nanmean, histc, bincount, renorm; and StatsMixin, their Tensor methods.

Values are gathered from the input at computed indices, so their gradients flow back through gather to
the elements chosen (as torch's). cummax / cummin / logcumsumexp use the Hillis-Steele doubling scan:
log2(n) passes of an associative combine over the whole dim.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from genesis_ndarray import float64, get_default_dtype, int64

from ..grad_mode import no_grad
from ..tensor_base import TensorBase
from ._util import ValuesIndices

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _arange_like(x: Any, n: int) -> Any:
    from ..factories import arange  # factories imports this package: imported at use

    return arange(n, device=x.device)


def _shift(x: Any, dim: int, s: int, fill: Any) -> Any:
    """x moved ``s`` places forward along dim, the first ``s`` places filled with ``fill`` (a tensor of x's
    shape, narrowed)."""
    from ..factories import cat

    n = x.shape[dim]
    return cat([fill.narrow(dim, 0, s), x.narrow(dim, 0, n - s)], dim)


def _doubling_scan(values: Sequence[Any], dim: int, combine: Callable[..., Any], identity: Sequence[Any]) -> tuple:
    """The inclusive scan of ``combine(left, right)`` along dim, by doubling: after the pass with shift s
    every place holds the combination of the 2s places ending at it."""
    n = values[0].shape[dim]
    s = 1
    while s < n:
        left = [_shift(v, dim, s, f) for v, f in zip(values, identity)]
        values = combine(left, values)
        s *= 2
    return tuple(values)


def _running_extreme(self: Any, dim: int, largest: bool) -> ValuesIndices:
    """cummax / cummin: the running extreme and the index of its latest occurrence (NaN wins and stays)."""
    dim = dim % max(self.ndim, 1)
    x = self.detach() if self.ndim else self.detach().reshape(1)
    n = x.shape[dim]
    shape = [1] * x.ndim
    shape[dim] = n
    pos = _arange_like(x, n).reshape(*shape).expand(*x.shape)

    def combine(left, right):
        (lv, li), (rv, ri) = left, right
        beats = rv >= lv if largest else rv <= lv
        take_right = rv.isnan() | (~lv.isnan() & beats)
        return [rv.where(take_right, lv), ri.where(take_right, li)]

    with no_grad():
        _, idx = _doubling_scan([x, pos], dim, combine, [x, pos])
    idx = idx if self.ndim else idx.reshape(())
    return ValuesIndices(self.gather(dim, idx) if self.ndim else self.clone(), idx)


def _logaddexp(a: Any, b: Any) -> Any:
    m = a.maximum(b)
    d = -(a - b).abs()
    return m + d.where(a != b, 0.0).exp().log1p()  # equal infinities: no NaN from inf - inf


def _check_k(k: int, n: int, dim: int) -> None:
    if not 1 <= k <= max(n, 1) or n == 0:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")


def _pick(self: Any, dim: int | None, keepdim: bool, position: Callable[[Any, int], Any]) -> ValuesIndices:
    """(values, indices) of the sorted element at ``position(valid_count, n)`` along dim (a flattened
    tensor when dim is None; then values only, 0-d)."""
    x = self.reshape(-1) if dim is None else (self if self.ndim else self.reshape(1))
    d = -1 if dim is None else dim % max(self.ndim, 1)
    n = x.shape[d]
    with no_grad():
        srt, order = x.detach().sort(d, stable=True)
        nans = srt.isnan().sum(d, keepdim=True)
        k = position(nans, n).clamp(0, max(n - 1, 0))
        idx = order.gather(d, k)
    values = x.gather(d, idx)
    if dim is None:
        return ValuesIndices(values.reshape(()), idx.reshape(()))
    if not keepdim or self.ndim == 0:
        values, idx = values.squeeze(d), idx.squeeze(d)
    if self.ndim == 0:
        values, idx = values.reshape(()), idx.reshape(())
    return ValuesIndices(values, idx)


def _quantile(self: Any, q: Any, dim: int | None, keepdim: bool, interpolation: str, ignore_nan: bool) -> Any:
    name = "nanquantile" if ignore_nan else "quantile"
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, but got {interpolation}"
        )
    scalar_q = not hasattr(q, "grad_fn")
    qs = [q] if scalar_q else q.detach().reshape(-1).tolist()
    for v in qs:
        if not 0 <= v <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {v}")
    x = self.reshape(-1) if dim is None else (self if self.ndim else self.reshape(1))
    d = x.ndim - 1 if dim is None else dim % max(self.ndim, 1)
    x = x.movedim(d, -1)
    n = x.shape[-1]
    from ..factories import tensor

    qt = tensor(qs, dtype=float64, device=self.device)
    with no_grad():
        srt, order = x.detach().sort(-1, stable=True)
        nans = srt.isnan().sum(-1, keepdim=True)
        valid = (n - nans) if ignore_nan else (nans * 0 + n)
        pos = (valid - 1).clamp(0, None).to(float64) * qt  # [..., Q]
        if interpolation == "lower":
            pos = pos.floor()
        elif interpolation == "higher":
            pos = pos.ceil()
        elif interpolation == "nearest":
            pos = pos.round()
        lo, hi = pos.floor().to(int64), pos.ceil().to(int64)
        frac = (pos - pos.floor()).to(self.dtype)
        if interpolation == "midpoint":
            frac = frac.where(lo == hi, 0.5)
        nan_row = (nans > 0) if not ignore_nan else (valid == 0)
    v_lo = x.gather(-1, order.gather(-1, lo))
    v_hi = x.gather(-1, order.gather(-1, hi))
    out = (v_lo + (v_hi - v_lo) * frac).where(~nan_row, math.nan)
    out = out.movedim(-1, 0)  # [Q, ...]
    if keepdim:
        out = out.reshape(len(qs), *([1] * self.ndim)) if dim is None else out.unsqueeze(d + 1)
    return out[0] if scalar_q else out.reshape(*q.shape, *out.shape[1:])


class StatsMixin(TensorBase):
    __slots__ = ()

    def median(self: Any, dim: int | None = None, keepdim: bool = False) -> Any:
        """The lower median (of the flattened tensor, or (values, indices) along ``dim``); NaN if any is NaN."""
        picked = _pick(self, dim, keepdim, lambda nans, n: ((n - nans) * 0 + (n - 1) // 2).where(nans == 0, n - nans))
        return picked.values if dim is None else picked

    def nanmedian(self: Any, dim: int | None = None, keepdim: bool = False) -> Any:
        """The lower median ignoring NaN (NaN only where every element is)."""
        picked = _pick(self, dim, keepdim, lambda nans, n: ((n - nans - 1) // 2).clamp(0, None))
        return picked.values if dim is None else picked

    def kthvalue(self: Any, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """The k-th smallest element along ``dim`` (k from 1): (values, indices)."""
        n = self.shape[dim] if self.ndim else 1
        _check_k(k, n, dim % max(self.ndim, 1))
        return _pick(self, dim, keepdim, lambda nans, n: nans * 0 + (k - 1))

    def quantile(
        self: Any, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
    ) -> Any:
        """The ``q``-th quantiles (a number or a 1-D tensor in [0, 1]) along ``dim`` (flattened when None);
        NaN where a row has NaN."""
        return _quantile(self, q, dim, keepdim, interpolation, ignore_nan=False)

    def nanquantile(
        self: Any, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
    ) -> Any:
        """quantile ignoring NaN (NaN only where a whole row is)."""
        return _quantile(self, q, dim, keepdim, interpolation, ignore_nan=True)

    def mode(self: Any, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """The most frequent value along ``dim`` (the smallest of those tied) and an index of it."""
        x = self if self.ndim else self.reshape(1)
        d = dim % x.ndim
        n = x.shape[d]
        with no_grad():
            srt, order = x.detach().sort(d, stable=True)
            shape = [1] * x.ndim
            shape[d] = n
            pos = _arange_like(x, n).reshape(*shape).expand(*x.shape)
            first = pos == 0
            new_run = first | (srt != _shift(srt, d, 1, srt))
            start, _ = pos.where(new_run, 0).cummax(d)
            best = (pos - start).argmax(d, keepdim=True)  # first place reaching the longest run
            idx = order.gather(d, best)
        values = x.gather(d, idx)
        if not keepdim or self.ndim == 0:
            values, idx = values.squeeze(d), idx.squeeze(d)
        if self.ndim == 0:
            values, idx = values.reshape(()), idx.reshape(())
        return ValuesIndices(values, idx)

    def cummax(self: Any, dim: int) -> ValuesIndices:
        """(values, indices): the running maximum along ``dim`` and where it was (NaN propagates)."""
        return _running_extreme(self, dim, largest=True)

    def cummin(self: Any, dim: int) -> ValuesIndices:
        """(values, indices): the running minimum along ``dim`` and where it was (NaN propagates)."""
        return _running_extreme(self, dim, largest=False)

    def logcumsumexp(self: Any, dim: int) -> Tensor:
        """log(cumsum(exp(x))) along ``dim``, without overflow."""
        x = self if self.dtype.is_floating_point else self.to(get_default_dtype())
        if x.ndim == 0:
            return x.clone()
        d = dim % x.ndim
        from ..factories import full_like

        neg_inf = full_like(x.detach(), -math.inf)
        (out,) = _doubling_scan([x], d, lambda left, right: [_logaddexp(left[0], right[0])], [neg_inf])
        return out

    def nansum(
        self: Any, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None
    ) -> Tensor:
        """The sum treating NaN as zero."""
        x = self.where(~self.isnan(), 0) if self.dtype.is_floating_point else self
        if dim is None:
            return x.sum(dtype=dtype) if dtype is not None else x.sum()
        return x.sum(dim, keepdim, dtype=dtype) if dtype is not None else x.sum(dim, keepdim)

    def nanmean(
        self: Any, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None
    ) -> Tensor:
        """The mean of the non-NaN elements."""
        if not self.dtype.is_floating_point:
            raise RuntimeError(
                f"nanmean(): expected input to have floating point dtype but got {self.dtype.name.capitalize()}"
            )
        x = self if dtype is None else self.to(dtype)
        count = (~x.isnan()).sum() if dim is None else (~x.isnan()).sum(dim, keepdim)
        return x.nansum(dim, keepdim) / count

    def histc(self: Any, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
        """A histogram of ``bins`` equal bins over [min, max] (the data's range when min == max)."""
        if not self.dtype.is_floating_point:
            raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_name(self.dtype)}'")
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        x = self.detach().reshape(-1)
        lo, hi = float(min), float(max)
        if lo == hi and x.numel():
            lo, hi = float(x.min().item()), float(x.max().item())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): max must be larger than min, but got min {lo} max {hi}")
        return _bin_counts(x, None, lo, hi, bins).to(self.dtype)

    def histogram(
        self: Any,
        bins: int | Tensor,
        *,
        range: tuple[float, float] | None = None,
        weight: Tensor | None = None,
        density: bool = False,
    ) -> Histogram:
        """(hist, bin_edges): counts (or summed ``weight``) per bin; ``bins`` a count of equal bins (over
        ``range``, by default the data's) or a 1-D tensor of increasing edges. ``density`` makes it a pdf."""
        if not self.dtype.is_floating_point:
            raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_name(self.dtype)}'")
        from ..factories import linspace, zeros

        x = self.detach().reshape(-1)
        if not isinstance(bins, int):
            edges = bins.detach().to(self.dtype)
        else:
            if bins <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
            lo, hi = (float(range[0]), float(range[1])) if range is not None else _data_range(x)
            if lo > hi:
                raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {lo} max {hi}")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges = linspace(lo, hi, bins + 1, dtype=self.dtype, device=self.device)
        n = edges.shape[0] - 1
        inside = (x >= edges[0]) & (x <= edges[-1])
        # the bin of each value: how many inner edges are <= it (the top edge closes the last bin)
        idx = (edges[1:-1].unsqueeze(0) <= x.unsqueeze(1)).sum(1)
        w = inside.to(self.dtype) if weight is None else weight.detach().reshape(-1).to(self.dtype) * inside
        hist = zeros(n, dtype=self.dtype, device=self.device).index_add(0, idx.where(inside, 0), w)
        if density:
            hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
        return Histogram(hist, edges)

    def bincount(self: Any, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
        """The count (or the summed ``weights``) of each value of a 1-D tensor of non-negative integers."""
        if self.dtype.is_floating_point:
            raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_name(self.dtype)}'")
        if self.ndim != 1 or (self.numel() and int(self.min().item()) < 0):
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        if minlength < 0:
            raise RuntimeError("minlength should be >= 0")
        size = builtin_max(int(self.max().item()) + 1 if self.numel() else 0, minlength)
        from ..factories import zeros

        if weights is None:
            src = self.detach() * 0 + 1
            return zeros(size, dtype=int64, device=self.device).index_add(0, self.detach(), src.to(int64))
        out_dtype = weights.dtype if weights.dtype.is_floating_point else float64
        return zeros(size, dtype=out_dtype, device=self.device).index_add(0, self.detach(), weights.to(out_dtype))

    def renorm(self: Any, p: float, dim: int, maxnorm: float) -> Tensor:
        """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``."""
        if self.ndim <= 1:
            raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.ndim} dimensions")
        d = dim % self.ndim
        others = tuple(i for i in range(self.ndim) if i != d)
        norm = self.abs().pow(p).sum(others, keepdim=True).pow(1.0 / p)
        factor = (maxnorm / (norm + 1e-7)).where(norm > maxnorm, 1.0)  # the norm's gradient counts, as torch's
        return self * factor

    def renorm_(self: Any, p: float, dim: int, maxnorm: float) -> Tensor:
        return self._math_inplace("renorm", p, dim, maxnorm)


builtin_max = max

Histogram = namedtuple("Histogram", ["hist", "bin_edges"])
Histogram.__doc__ = "(hist, bin_edges) of histogram, like torch.return_types.histogram."


def _data_range(x: Any) -> tuple[float, float]:
    """(min, max) of a flat tensor, (0, 0) when empty."""
    if not x.numel():
        return 0.0, 0.0
    return float(x.min().item()), float(x.max().item())


def _name(dtype: Any) -> str:
    from .elementwise import _torch_dtype_name

    return _torch_dtype_name(dtype)


def searchsorted(sorted_sequence: Any, values: Any, right: bool = False, out_int32: bool = False) -> Any:
    """Insertion indices of ``values`` in the innermost dim of ``sorted_sequence`` (1-D: shared by every value;
    N-D: one row per leading index, matching ``values``' leading dims), by binary search (no gradient)."""
    seq = sorted_sequence.detach()
    vals = values.detach()
    if seq.ndim <= 1:
        seq2, vals2 = seq.reshape(1, -1), vals.reshape(1, -1)
    else:
        seq2, vals2 = seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1])
    out = seq2._result_type(seq2.data.searchsorted(vals2.data, right, out_int32))
    return out.reshape(*vals.shape)


def _bin_counts(x: Any, weight: Any, lo: float, hi: float, bins: int) -> Any:
    """Counts (or summed weights) of x over ``bins`` equal bins of [lo, hi]; the top edge in the last bin,
    elements outside ignored."""
    from ..factories import zeros

    inside = (x >= lo) & (x <= hi)
    idx = ((x - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).to(int64)
    w = inside.to(x.dtype) if weight is None else weight.reshape(-1) * inside.to(weight.dtype)
    return zeros(bins, dtype=w.dtype, device=x.device).index_add(0, idx.where(inside, 0), w)
