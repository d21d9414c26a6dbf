"""Laplace(loc, scale) (torch.distributions.Laplace)."""

from __future__ import annotations

from numbers import Number
from typing import Any

from genesis import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, eps, standard_uniform

__all__ = ["Laplace"]


class Laplace(Distribution):
    """The Laplace (double exponential) distribution with location ``loc`` and scale ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if isinstance(loc, Number) and isinstance(scale, Number) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Laplace:
        """This distribution with loc and scale expanded to ``batch_shape``."""
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """2 scale^2."""
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        """sqrt(2) scale."""
        return 2**0.5 * self.scale

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """loc - scale sign(u) log(1 - |u|), u uniform on (-1, 1): differentiable in loc and scale."""
        shape = self._extended_shape(sample_shape)
        e = eps(self.loc.dtype)
        u = standard_uniform(shape, self.loc) * (2 - e) + (e - 1)  # (eps - 1, 1), as torch's
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        """-log(2 scale) - |value - loc| / scale."""
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        """1/2 - sign(value - loc) expm1(-|value - loc| / scale) / 2."""
        if self._validate_args:
            self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * (-d.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        """loc - scale sign(value - 1/2) log(1 - 2 |value - 1/2|)."""
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        """1 + log(2 scale)."""
        return 1 + (2 * self.scale).log()
