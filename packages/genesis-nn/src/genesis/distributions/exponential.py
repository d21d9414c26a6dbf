"""Exponential(rate) (torch.distributions.Exponential)."""

from __future__ import annotations

from numbers import Number
from typing import Any

import genesis
from genesis import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(Distribution):
    """The exponential distribution with rate ``rate`` (mean 1 / rate)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(() if isinstance(rate, Number) else self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Exponential:
        """This distribution with its rate expanded to ``batch_shape``."""
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self) -> Tensor:
        """1 / rate."""
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        """0."""
        return genesis.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        """1 / rate."""
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        """1 / rate^2."""
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """E / rate with E ~ Exp(1): differentiable in rate."""
        shape = self._extended_shape(sample_shape)
        with genesis.no_grad():
            e = genesis.empty(*shape, dtype=self.rate.dtype, device=self.rate.device).exponential_()
        return e / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        """log(rate) - rate value."""
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        """1 - exp(-rate value)."""
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        """-log(1 - value) / rate."""
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        """1 - log(rate)."""
        return 1.0 - self.rate.log()
