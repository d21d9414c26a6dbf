"""StudentT(df, loc, scale) (torch.distributions.StudentT)."""

from __future__ import annotations

import math
from typing import Any

import genesis
from genesis import Tensor

from . import constraints
from ._gamma_sampling import standard_gamma
from ._math import digamma, lgamma
from .distribution import Distribution
from .utils import broadcast_all, standard_normal

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, shifted by ``loc`` and scaled by ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(
        self,
        df: Tensor | float,
        loc: Tensor | float = 0.0,
        scale: Tensor | float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> StudentT:
        """This distribution with its parameters expanded to ``batch_shape``."""
        return self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))

    @property
    def mean(self) -> Tensor:
        """loc where df > 1, else NaN."""
        return genesis.where(self.df > 1, self.loc, genesis.full_like(self.loc, math.nan))

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """scale^2 df / (df - 2) where df > 2, inf for 1 < df <= 2, NaN for df <= 1."""
        df = self.df
        finite = self.scale.pow(2) * df / genesis.where(df > 2, df - 2, genesis.ones_like(df))
        inf = genesis.full_like(df, math.inf)
        return genesis.where(df > 2, finite, genesis.where(df > 1, inf, genesis.full_like(df, math.nan)))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """loc + scale X / sqrt(Z / df), X ~ N(0, 1), Z ~ Chi2(df) = Gamma(df / 2, 1/2)."""
        shape = self._extended_shape(sample_shape)
        x = standard_normal(shape, self.df)
        z = 2 * standard_gamma(0.5 * self.df.expand(*shape))
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        """-(df + 1)/2 log(1 + y^2 / df) - log(scale sqrt(df pi) B(df/2, 1/2)) with y = (value - loc) / scale."""
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        norm = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + lgamma(0.5 * self.df)
            - lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * (y**2 / self.df).log1p() - norm

    def entropy(self) -> Tensor:
        """log(scale) + (df + 1)/2 (digamma((df + 1)/2) - digamma(df/2)) + log(sqrt(df) B(df/2, 1/2))."""
        df = self.df
        lbeta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1))
        return (
            self.scale.log() + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df)) + 0.5 * df.log() + lbeta
        )
