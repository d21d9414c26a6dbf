"""Normal(loc, scale): the Gaussian distribution (torch.distributions.Normal)."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

from genesis import Tensor

from . import constraints
from ._math import erfinv
from .distribution import Distribution
from .utils import broadcast_all, standard_normal

__all__ = ["Normal"]


class Normal(Distribution):
    """The normal distribution with mean ``loc`` and standard deviation ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if isinstance(loc, Number) and isinstance(scale, Number) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Normal:
        """This distribution with loc and scale expanded to ``batch_shape``."""
        new = self._get_checked_instance(Normal, _instance)
        new.loc = self.loc.expand(*batch_shape)
        new.scale = self.scale.expand(*batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def stddev(self) -> Tensor:
        """scale."""
        return self.scale

    @property
    def variance(self) -> Tensor:
        """scale ** 2."""
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """loc + scale * eps with eps ~ N(0, 1): differentiable in loc and scale."""
        shape = self._extended_shape(sample_shape)
        return self.loc + standard_normal(shape, self.loc) * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        """-(value - loc)^2 / (2 scale^2) - log(scale) - log(sqrt(2 pi))."""
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value: Tensor) -> Tensor:
        """(1 + erf((value - loc) / (scale sqrt 2))) / 2."""
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value: Tensor) -> Tensor:
        """loc + scale sqrt(2) erfinv(2 value - 1)."""
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        """1/2 + log(sqrt(2 pi) scale)."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()
