"""Uniform(low, high): the continuous uniform distribution on [low, high) (torch.distributions.Uniform)."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

from genesis import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, standard_uniform

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform on the half-open interval [low, high)."""

    arg_constraints = {
        "low": constraints.dependent(is_discrete=False, event_dim=0),
        "high": constraints.dependent(is_discrete=False, event_dim=0),
    }
    has_rsample = True

    def __init__(self, low: Tensor | float, high: Tensor | float, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        batch_shape = () if isinstance(low, Number) and isinstance(high, Number) else self.low.shape
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and not bool((self.low < self.high).all().item()):
            raise ValueError("Uniform is not defined when low>= high")

    def expand(self, batch_shape: Any, _instance: Any = None) -> Uniform:
        """This distribution with low and high expanded to ``batch_shape``."""
        return self._expand_params(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        """[low, high]."""
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        """(low + high) / 2."""
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        """NaN: every point of the interval is a mode."""
        return self.high * math.nan

    @property
    def stddev(self) -> Tensor:
        """(high - low) / sqrt(12)."""
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        """(high - low)^2 / 12."""
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """low + U (high - low), U ~ U[0, 1): differentiable in low and high."""
        shape = self._extended_shape(sample_shape)
        return self.low + standard_uniform(shape, self.low) * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        """-log(high - low) inside [low, high), -inf outside."""
        if self._validate_args:
            self._validate_sample(value)
        lb = (self.low <= value).to(self.low.dtype)
        ub = (self.high > value).to(self.low.dtype)
        return (lb * ub).log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        """(value - low) / (high - low), clamped to [0, 1]."""
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        """low + value (high - low)."""
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        """log(high - low)."""
        return (self.high - self.low).log()
