"""Dirichlet(concentration): distributions over the probability simplex (torch.distributions.Dirichlet)."""

from __future__ import annotations

from typing import Any

import genesis
import genesis.nn.functional as F
from genesis import Tensor

from . import constraints
from ._gamma_sampling import standard_gamma
from ._math import digamma, lgamma, xlogy
from .distribution import Distribution
from .utils import eps, tiny

__all__ = ["Dirichlet"]


class Dirichlet(Distribution):
    """The Dirichlet distribution of concentration ``concentration`` (its last dimension is the event)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Dirichlet:
        """This distribution with its concentration expanded to ``batch_shape``."""
        return self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """Normalised Gamma(concentration_i, 1) draws: differentiable in the concentration (implicitly)."""
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(self.concentration.expand(*shape))
        value = gammas / gammas.sum(-1, keepdim=True)
        return value.clamp(min=tiny(value.dtype), max=1 - eps(value.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        """sum((a - 1) log x) + lgamma(sum a) - sum lgamma(a)."""
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return xlogy(a - 1.0, value).sum(-1) + lgamma(a.sum(-1)) - lgamma(a).sum(-1)

    @property
    def mean(self) -> Tensor:
        """a / sum(a)."""
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """(a - 1)+ normalised; where every a < 1, the vertex of the largest a."""
        am1 = (self.concentration - 1).clamp(min=0.0)
        mode = am1 / am1.sum(-1, keepdim=True)
        vertex = F.one_hot(am1.argmax(-1), am1.shape[-1]).to(mode.dtype)
        every_small = (self.concentration < 1).all(-1, keepdim=True)
        return genesis.where(every_small, vertex, mode)

    @property
    def variance(self) -> Tensor:
        """a (a0 - a) / (a0^2 (a0 + 1)), a0 = sum(a)."""
        a = self.concentration
        a0 = a.sum(-1, keepdim=True)
        return a * (a0 - a) / (a0.pow(2) * (a0 + 1))

    def entropy(self) -> Tensor:
        """sum lgamma(a) - lgamma(a0) - (k - a0) digamma(a0) - sum((a - 1) digamma(a))."""
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return lgamma(a).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0) - ((a - 1.0) * digamma(a)).sum(-1)
