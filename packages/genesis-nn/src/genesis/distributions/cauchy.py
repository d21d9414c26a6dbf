"""Cauchy(loc, scale) (torch.distributions.Cauchy)."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import genesis
from genesis import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, standard_uniform

__all__ = ["Cauchy"]


def _atan(x: Tensor) -> Tensor:
    return genesis.atan2(x, genesis.ones_like(x))


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution with median ``loc`` and half-width ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if isinstance(loc, Number) and isinstance(scale, Number) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Cauchy:
        """This distribution with loc and scale expanded to ``batch_shape``."""
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> Tensor:
        """NaN: the Cauchy distribution has no mean."""
        return genesis.full_like(self.loc.expand(*self._extended_shape()), math.nan)

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """inf."""
        return genesis.full_like(self.loc.expand(*self._extended_shape()), math.inf)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """loc + scale tan(pi (u - 1/2)), u ~ U[0, 1): differentiable in loc and scale."""
        shape = self._extended_shape(sample_shape)
        eps = ((standard_uniform(shape, self.loc) - 0.5) * math.pi).tan()
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        """-log(pi) - log(scale) - log(1 + ((value - loc) / scale)^2)."""
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        """atan((value - loc) / scale) / pi + 1/2."""
        if self._validate_args:
            self._validate_sample(value)
        return _atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        """loc + scale tan(pi (value - 1/2))."""
        return ((value - 0.5) * math.pi).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        """log(4 pi) + log(scale)."""
        return math.log(4 * math.pi) + self.scale.log()
