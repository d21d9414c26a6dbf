"""Binomial(total_count, probs | logits) (torch.distributions.Binomial)."""

from __future__ import annotations

from typing import Any

import genesis
from genesis import Tensor

from . import constraints
from ._math import lgamma
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits, standard_uniform

__all__ = ["Binomial"]


def _clamp_by_zero(x: Tensor) -> Tensor:
    """max(x, 0), with a gradient of 1/2 at 0 (as torch's, for a symmetric log-normaliser)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    """The number of successes in ``total_count`` independent trials of success probability ``probs``."""

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self,
        total_count: Tensor | int = 1,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)  # type: ignore[arg-type]
            self.total_count = self.total_count.to(self.logits.dtype)
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Binomial:
        """This distribution with its parameters expanded to ``batch_shape``."""
        names = ["total_count"] + [n for n in ("probs", "logits") if n in self.__dict__]
        new = self._expand_params(Binomial, batch_shape, _instance, names)
        new._param = getattr(new, names[-1])
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        """The integers 0 .. total_count."""
        return constraints.integer_interval(0, self.total_count)

    @lazy_property
    def logits(self) -> Tensor:
        """log(p) - log(1 - p)."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """sigmoid(logits)."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> genesis.Size:
        """The shape of the parameter given."""
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        """total_count p."""
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        """floor((total_count + 1) p), at most total_count."""
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        """total_count p (1 - p)."""
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """The number of uniform draws below p among total_count trials (one round per trial of the largest
        total_count)."""
        shape = self._extended_shape(sample_shape)
        with genesis.no_grad():
            probs = self.probs.expand(*shape)
            counts = self.total_count.expand(*shape)
            successes = genesis.zeros_like(probs)
            for trial in range(int(counts.max().item()) if counts.numel() else 0):
                hit = (standard_uniform(shape, probs) < probs) & (counts > trial)
                successes = successes + hit.to(probs.dtype)
            return successes

    def log_prob(self, value: Tensor) -> Tensor:
        """log C(n, k) + k logits - n log(1 + exp(logits)), written to stay finite for large |logits|."""
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_factorial_n = lgamma(n + 1)
        log_factorial_k = lgamma(value + 1)
        log_factorial_nmk = lgamma(n - value + 1)
        normalize = n * _clamp_by_zero(self.logits) + n * (-self.logits.abs()).exp().log1p() - log_factorial_n
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize

    def entropy(self) -> Tensor:
        """-sum p(k) log p(k) over the support (total_count must be the same everywhere)."""
        total = int(self.total_count.max().item())
        if not int(self.total_count.min().item()) == total:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """0 .. total_count along a new leading dimension (total_count must be the same everywhere)."""
        total = int(self.total_count.max().item())
        if not int(self.total_count.min().item()) == total:
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = genesis.arange(1 + total, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape(-1, *([1] * len(self._batch_shape)))
        return values.expand(1 + total, *self._batch_shape) if expand else values
