"""Poisson(rate) (torch.distributions.Poisson)."""

from __future__ import annotations

from numbers import Number
from typing import Any

import genesis
from genesis import Tensor

from . import constraints
from ._math import lgamma, xlogy
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(Distribution):
    """The Poisson distribution with mean ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(() if isinstance(rate, Number) else self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Poisson:
        """This distribution with its rate expanded to ``batch_shape``."""
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self) -> Tensor:
        """rate."""
        return self.rate

    @property
    def mode(self) -> Tensor:
        """floor(rate)."""
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        """rate."""
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Counts of Exp(1) arrival times falling within ``rate`` (Knuth's method, vectorised): one round of
        draws per unit of the largest rate, so meant for moderate rates."""
        shape = self._extended_shape(sample_shape)
        with genesis.no_grad():
            rate = self.rate.expand(*shape)
            count = genesis.zeros_like(rate)
            clock = genesis.zeros_like(rate)
            while True:
                clock = clock + genesis.empty_like(rate).exponential_()
                arrived = clock < rate
                if not bool(arrived.any().item()):
                    return count
                count = count + arrived.to(rate.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        """value log(rate) - rate - lgamma(value + 1)."""
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)
