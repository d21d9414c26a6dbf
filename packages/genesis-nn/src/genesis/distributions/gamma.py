"""Gamma(concentration, rate) (torch.distributions.Gamma)."""

from __future__ import annotations

from numbers import Number
from typing import Any

from genesis import Tensor

from . import constraints
from ._gamma_sampling import gammainc, standard_gamma
from ._math import digamma, lgamma, xlogy
from .distribution import Distribution
from .utils import broadcast_all, tiny

__all__ = ["Gamma"]


class Gamma(Distribution):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, Number) and isinstance(rate, Number)
        super().__init__(() if scalar else self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        """This distribution with its parameters expanded to ``batch_shape``."""
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self) -> Tensor:
        """concentration / rate."""
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        """(concentration - 1) / rate, clamped at 0."""
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        """concentration / rate^2."""
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """Gamma(concentration, 1) draws (implicitly reparameterised) divided by rate."""
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)
        return value.clamp(min=tiny(value.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        """c log(rate) + (c - 1) log(value) - rate value - lgamma(c)."""
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return xlogy(c, r) + xlogy(c - 1, value) - r * value - lgamma(c)

    def cdf(self, value: Tensor) -> Tensor:
        """The regularised lower incomplete gamma function P(concentration, rate value)."""
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        """c - log(rate) + lgamma(c) + (1 - c) digamma(c)."""
        c = self.concentration
        return c - self.rate.log() + lgamma(c) + (1.0 - c) * digamma(c)
