"""Sampling: multinomial, poisson, binomial, and the in-place fills cauchy_, log_normal_, geometric_; and
SamplingMixin, their Tensor methods.

Every draw is a transformation of the device's uniform / exponential / normal draws, written with NDArray
ops both devices have, so a seed reproduces it on each device:

- multinomial with replacement: inverse transform, counting the cumulative probabilities at or below a
  uniform draw (the cdf is normalised by its own last value, so a category of probability zero can never
  be hit); without replacement: the ``num_samples`` smallest ``Exp(1) / p`` (the exponential race, torch's
  algorithm too), zero-probability categories last (infinite keys).
- poisson: Knuth's counting of exponential arrivals for rates below 10, Hörmann's transformed rejection
  (PTRS) above; binomial: counting geometric gaps while ``n * min(p, 1 - p) < 10``, else Hörmann's BTRS.
  The rejection methods loop until every element has accepted (a few rounds).

No draw of multinomial waits for the device (no sync, capturable in a CUDA graph): see multinomial_draw.
``generator=`` takes a genesis.Generator (a cpu stream): it is swapped in around the draw, as the factories
of genesis.random do. Nothing flows back through a draw: its inputs get zero gradients, as torch's.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import genesis_ndarray as nd

from ..tensor_base import TensorBase
from ._util import is_tensor
from .index_write import torch_name
from .random import sample

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor

_CHUNK = 1 << 22  # comparisons per block of multinomial's inverse transform: bounds its temporary memory


def drawing(generator: Any, device: Any) -> Any:
    """The context that makes ``generator`` (or the device's global stream, for None) supply the draws."""
    if generator is None:
        return nullcontext()
    if device.type != "cpu":
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found 'cpu'")
    return generator.active()


def _scalar(value: float, like: nd.NDArray) -> nd.NDArray:
    return nd.full((), value, dtype=like.dtype, device=like.device)


def _uniform(shape: tuple[int, ...], dtype: Any, device: Any) -> nd.NDArray:
    return nd.rand(*shape, dtype=dtype, device=device)


# ------------------------------------------------------------------ multinomial
def _check_arguments(p: nd.NDArray, num_samples: int, replacement: bool) -> None:
    """torch's argument errors, all decided on the host (shapes, dtype, counts): no device read."""
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not p.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {torch_name(p.dtype)}")
    categories = p.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if p.numel() == 0:
        raise RuntimeError("cannot sample from an empty distribution")


def multinomial_draw(p: nd.NDArray, num_samples: int, replacement: bool) -> nd.NDArray:
    """int64 category indices of shape (rows, num_samples) (or (num_samples,) for 1-d ``p``).

    Nothing here waits for the device: the values of ``p`` are validated by ``multinomial_rows`` (eagerly
    on cpu; on cuda a flag read at the next host read-back or graph replay, an invalid row drawn as
    uniform), and the result's range [0, k) is known on the host, so indexing by it needs no bounds wait."""
    _check_arguments(p, num_samples, replacement)
    # float64 (n, k), contiguous; torch reports per row in its kernel (replacement, several samples)
    rows = p.multinomial_rows(row_messages=replacement and num_samples > 1)
    n, k = rows.shape
    if replacement:
        cdf = rows.cumsum(1)
        cdf = cdf / cdf[:, k - 1 :]  # the last entry exactly 1, zero-probability tails equal to it
        u = _uniform((n, num_samples), nd.float64, p.device)
        step = max(1, _CHUNK // max(n * k, 1))
        parts = []
        for s in range(0, num_samples, step):
            block = u[:, s : s + step]
            hits = cdf.reshape(n, 1, k) <= block.reshape(n, block.shape[1], 1)
            parts.append(hits.astype(nd.int64).sum(2))
        counts = parts[0] if len(parts) == 1 else _cat(parts, 1)
        # counts <= k - 1 already (the last cdf entry is 1 > u); the clamp records the range on the host
        out = counts.clamp(0, k - 1)
    else:
        race = nd.empty(n, k, dtype=nd.float64, device=p.device)
        race.exponential_(1.0)
        keys = race / rows  # a zero probability gives +inf: drawn only once every other category is (as torch)
        out = keys.topk(num_samples, 1, False, True)[1]  # positions along dim 1: their range is known
    return out.reshape(num_samples) if p.ndim == 1 else out


def _cat(parts: list[nd.NDArray], dim: int) -> nd.NDArray:
    shape = list(parts[0].shape)
    shape[dim] = sum(q.shape[dim] for q in parts)
    out = nd.empty(*shape, dtype=parts[0].dtype, device=parts[0].device)
    start = 0
    for q in parts:
        size = q.shape[dim]
        out[(slice(None),) * dim + (slice(start, start + size),)] = q
        start += size
    return out


# ------------------------------------------------------------------ poisson
def _count_arrivals(rate: nd.NDArray) -> nd.NDArray:
    """Poisson draws for small rates: how many Exp(1) arrivals fit in [0, rate)."""
    count = nd.zeros(*rate.shape, dtype=nd.float64, device=rate.device)
    elapsed = nd.zeros(*rate.shape, dtype=nd.float64, device=rate.device)
    active = rate > 0
    while bool(active.any().item()):
        gap = nd.empty(*rate.shape, dtype=nd.float64, device=rate.device)
        gap.exponential_(1.0)
        elapsed = elapsed + gap
        active = active & (elapsed < rate)
        count = count + active.astype(nd.float64)
    return count


def _ptrs(rate: nd.NDArray) -> nd.NDArray:
    """Poisson draws for rates >= 10: Hörmann's transformed rejection with squeeze (PTRS)."""
    slam, loglam = rate.sqrt(), rate.log()
    b = slam * 2.53 + 0.931
    a = b * 0.02483 - 0.059
    inv_alpha = (b - 3.4).reciprocal() * 1.1328 + 1.1239
    vr = 0.9277 - (b - 2.0).reciprocal() * 3.6224
    out = nd.zeros(*rate.shape, dtype=nd.float64, device=rate.device)
    pending = nd.ones(*rate.shape, dtype=nd.bool_, device=rate.device)
    while bool(pending.any().item()):
        u = _uniform(rate.shape, nd.float64, rate.device) - 0.5
        v = _uniform(rate.shape, nd.float64, rate.device)
        us = 0.5 - u.abs()
        k = ((a * 2.0 / us + b) * u + rate + 0.43).floor()
        quick = (us >= 0.07) & (v <= vr)
        log_accept = (v * inv_alpha / (a / (us * us) + b)).log()
        exact = (k >= 0) & ~((us < 0.013) & (v > us)) & (log_accept <= k * loglam - rate - (k + 1.0).unary("lgamma"))
        accept = pending & (quick | exact)
        out = k.where(accept, out)
        pending = pending & ~accept
    return out


def poisson_draw(rate: nd.NDArray) -> nd.NDArray:
    """Poisson draws of the rates in ``rate`` (>= 0), in its dtype."""
    if bool((rate < 0).any().item()) or bool(rate.isnan().any().item()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    lam = rate.astype(nd.float64)
    small = lam < 10
    large_lam = lam.where(~small, _scalar(10.0, lam))
    out = _count_arrivals(lam.where(small, _scalar(0.0, lam))).where(small, _ptrs(large_lam))
    return out.astype(rate.dtype)


# ------------------------------------------------------------------ binomial
def _count_gaps(n: nd.NDArray, p: nd.NDArray) -> nd.NDArray:
    """Binomial draws for small n * p: how many Geometric(p) gaps fit in n trials."""
    count = nd.zeros(*n.shape, dtype=nd.float64, device=n.device)
    used = nd.zeros(*n.shape, dtype=nd.float64, device=n.device)
    active = (p > 0) & (n > 0)
    log_q = (-p).log1p()
    while bool(active.any().item()):
        u = 1.0 - _uniform(n.shape, nd.float64, n.device)  # in (0, 1]
        gap = (u.log() / log_q.where(active, _scalar(-1.0, log_q))).ceil().maximum(_scalar(1.0, u))
        used = used + gap
        active = active & (used <= n)
        count = count + active.astype(nd.float64)
    return count


def _log_factorial(k: nd.NDArray) -> nd.NDArray:
    return (k + 1.0).unary("lgamma")


def _btrs(n: nd.NDArray, p: nd.NDArray) -> nd.NDArray:
    """Binomial draws for n * p >= 10 (p <= 1/2): Hörmann's transformed rejection (BTRS); a candidate k is
    accepted against the exact ratio pmf(k) / pmf(mode), in logs."""
    spq = (n * p * (1.0 - p)).sqrt()
    b = spq * 2.53 + 1.15
    a = b * 0.0248 + p * 0.01 - 0.0873
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (5.1 / b + 2.83) * spq
    lpq = (p / (1.0 - p)).log()
    m = ((n + 1.0) * p).floor()
    at_mode = _log_factorial(m) + _log_factorial(n - m)
    out = nd.zeros(*n.shape, dtype=nd.float64, device=n.device)
    pending = nd.ones(*n.shape, dtype=nd.bool_, device=n.device)
    zero = _scalar(0.0, n)
    while bool(pending.any().item()):
        u = _uniform(n.shape, nd.float64, n.device) - 0.5
        v = _uniform(n.shape, nd.float64, n.device)
        us = 0.5 - u.abs()
        k = ((a * 2.0 / us + b) * u + c).floor()
        in_range = (k >= 0) & (k <= n)
        quick = in_range & (us >= 0.07) & (v <= vr)
        log_v = (v * alpha / (a / (us * us) + b)).log()
        kk = k.maximum(zero).minimum(n)  # in range for the factorials; out-of-range k are refused anyway
        bound = at_mode - _log_factorial(kk) - _log_factorial(n - kk) + (kk - m) * lpq
        accept = pending & (quick | (in_range & (log_v <= bound)))
        out = k.where(accept, out)
        pending = pending & ~accept
    return out


def binomial_draw(count: nd.NDArray, prob: nd.NDArray) -> nd.NDArray:
    """Binomial draws of ``count`` trials of success probability ``prob`` (broadcast), in ``count``'s dtype."""
    zero, one = nd.zeros((), dtype=nd.float64, device=count.device), nd.ones((), dtype=nd.float64, device=count.device)
    n = count.astype(nd.float64).floor().maximum(zero)  # as torch: no error for p outside [0, 1] or n < 0
    p = prob.astype(nd.float64).maximum(zero).minimum(one)
    shape = nd.shape.broadcast_shapes(n.shape, p.shape)
    n, p = n.expand(*shape).contiguous(), p.expand(*shape).contiguous()
    flip = p > 0.5
    q = (1.0 - p).where(flip, p)  # q <= 1/2: draw the rarer outcome, flip back after
    small = n * q < 10
    by_gaps = _count_gaps(n.where(small, _scalar(0.0, n)), q)
    by_btrs = _btrs(n.where(~small, _scalar(100.0, n)), q.where(~small, _scalar(0.5, q)))
    drawn = by_gaps.where(small, by_btrs)
    drawn = (n - drawn).where(flip, drawn)
    return drawn.astype(count.dtype)


class SamplingMixin(TensorBase):
    """Tensor's multinomial and the in-place fills cauchy_, log_normal_, geometric_."""

    __slots__ = ()

    def multinomial(self, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
        """``num_samples`` category indices (int64) drawn with the (unnormalised, non-negative) weights of each
        row of this 1-d or 2-d tensor; without ``replacement`` a row never repeats a category."""
        with drawing(generator, self.device):
            return sample(multinomial_draw(self.data, int(num_samples), replacement), self)

    def _transformed_fill(self, op: str, transform: Any, generator: Any, floating: bool = True) -> Tensor:
        if floating and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"{op} is a continuous probability distribution. dtype must be a floating point but you specified "
                f"{self.dtype.name}"
            )

        def fill(target: nd.NDArray) -> None:
            with drawing(generator, self.device):
                target.copy_(transform(target.shape).astype(target.dtype))

        return self._random_(fill)  # type: ignore[attr-defined]  # random.py

    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill self with draws of the Cauchy distribution ``median + sigma * tan(pi * (U - 1/2))``, in place."""
        if not sigma > 0.0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        device = self.device

        def draw(shape: tuple[int, ...]) -> nd.NDArray:
            u = _uniform(shape, nd.float64, device)
            return ((u - 0.5) * math.pi).tan() * sigma + median

        return self._transformed_fill("Cauchy distribution", draw, generator)

    def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> Tensor:
        """Fill self with ``exp(N(mean, std^2))`` draws, in place."""
        if not self.dtype.is_floating_point:
            names = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
            raise NotImplementedError(f"\"log_normal_cpu\" not implemented for '{names.get(self.dtype.name)}'")
        if not std > 0.0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        device = self.device

        def draw(shape: tuple[int, ...]) -> nd.NDArray:
            z = nd.empty(*shape, dtype=nd.float64, device=device)
            z.normal_(mean, std)
            return z.exp()

        return self._transformed_fill("log_normal_", draw, generator)

    def geometric_(self, p: float, *, generator: Any = None) -> Tensor:
        """Fill self with the number of Bernoulli(p) trials up to and including the first success (>= 1), in
        place (integer dtypes too)."""
        if not 0.0 < p < 1.0:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
        device = self.device

        def draw(shape: tuple[int, ...]) -> nd.NDArray:
            u = 1.0 - _uniform(shape, nd.float64, device)  # in (0, 1]
            trials = (u.log() / math.log1p(-p)).ceil()
            return trials.maximum(nd.ones((), dtype=nd.float64, device=device))

        return self._transformed_fill("geometric_", draw, generator, floating=False)


def poisson(input: Any, generator: Any = None) -> Any:
    """Poisson draws with the rates in ``input`` (same shape and dtype); its gradient is zero."""
    if not is_tensor(input):
        raise TypeError(f"poisson(): argument 'input' must be Tensor, not {type(input).__name__}")
    with drawing(generator, input.device):
        return sample(poisson_draw(input.data), input)


def binomial(count: Any, prob: Any, generator: Any = None) -> Any:
    """Binomial draws of ``count`` trials with success probability ``prob`` (tensors that broadcast)."""
    if not is_tensor(count) or not is_tensor(prob):
        raise TypeError("binomial(): arguments 'count' and 'prob' must be Tensors")
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {torch_name(count.dtype)}")
    if count.dtype is not prob.dtype:
        raise RuntimeError(f"Found dtype {torch_name(prob.dtype)} but expected {torch_name(count.dtype)}")
    with drawing(generator, count.device):
        return sample(binomial_draw(count.data, prob.data), count, prob)
