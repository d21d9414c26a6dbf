"""Beta(concentration1, concentration0) on [0, 1], a two-class Dirichlet (torch.distributions.Beta)."""

from __future__ import annotations

from numbers import Number
from typing import Any

import genesis
from genesis import Tensor

from . import constraints
from .dirichlet import Dirichlet
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(Distribution):
    """The beta distribution: density proportional to x^(concentration1 - 1) (1 - x)^(concentration0 - 1)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self, concentration1: Tensor | float, concentration0: Tensor | float, validate_args: bool | None = None
    ) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(genesis.stack([c1, c0], -1), validate_args=validate_args)
        scalar = isinstance(concentration1, Number) and isinstance(concentration0, Number)
        super().__init__(() if scalar else self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Beta:
        """This distribution with its concentrations expanded to ``batch_shape``."""
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self) -> Tensor:
        """The first concentration (alpha)."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        """The second concentration (beta)."""
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        """c1 / (c1 + c0)."""
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        """The first coordinate of the Dirichlet's mode."""
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        """c1 c0 / ((c1 + c0)^2 (c1 + c0 + 1))."""
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """X / (X + Y) with X ~ Gamma(c1), Y ~ Gamma(c0): differentiable in both (implicitly)."""
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        """The Dirichlet log-density of (value, 1 - value)."""
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(genesis.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        """The entropy of the two-class Dirichlet."""
        return self._dirichlet.entropy()
