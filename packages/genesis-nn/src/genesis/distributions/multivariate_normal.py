"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)
(torch.distributions.MultivariateNormal)."""

from __future__ import annotations

import math
from typing import Any

from genesis import Tensor

from . import constraints
from ._linalg import cholesky, cholesky_inverse, solve_triangular
from .distribution import Distribution
from .utils import broadcast_shapes, lazy_property, standard_normal

__all__ = ["MultivariateNormal", "batch_mahalanobis"]


def batch_mahalanobis(scale_tril: Tensor, x: Tensor) -> Tensor:
    """x^T (L L^T)^-1 x for the batches of L and x broadcast together: |L^-1 x|^2."""
    solved = solve_triangular(scale_tril, x.unsqueeze(-1)).squeeze(-1)
    return solved.pow(2).sum(-1)


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The Cholesky factor of the inverse of ``precision``."""
    return cholesky(cholesky_inverse(cholesky(precision)))


class MultivariateNormal(Distribution):
    """The multivariate normal with mean ``loc`` and a covariance given by exactly one of
    ``covariance_matrix``, ``precision_matrix`` (its inverse) or ``scale_tril`` (its Cholesky factor)."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, matrix = next(
            (n, m)
            for n, m in (
                ("scale_tril", scale_tril),
                ("covariance_matrix", covariance_matrix),
                ("precision_matrix", precision_matrix),
            )
            if m is not None
        )
        assert matrix is not None
        if matrix.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(*batch_shape, -1, -1))
        self.loc = loc.expand(*batch_shape, -1)
        super().__init__(batch_shape, loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: Any, _instance: Any = None) -> MultivariateNormal:
        """This distribution with its parameters expanded to ``batch_shape``."""
        names = ["loc"] + [n for n in ("covariance_matrix", "scale_tril", "precision_matrix") if n in self.__dict__]
        new = self._expand_params(MultivariateNormal, batch_shape, _instance, names)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance."""
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, *self._event_shape, *self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """L L^T."""
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.mT).expand(*self._batch_shape, *self._event_shape, *self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """(L L^T)^-1."""
        inverse = cholesky_inverse(self._unbroadcasted_scale_tril)
        return inverse.expand(*self._batch_shape, *self._event_shape, *self._event_shape)

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
        """The covariance's diagonal: the squared rows of L summed."""
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(*self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """loc + L eps, eps ~ N(0, I): differentiable in loc and the covariance."""
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        """-(n log(2 pi) + mahalanobis^2) / 2 - log det L."""
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self) -> Tensor:
        """n (1 + log(2 pi)) / 2 + log det L."""
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h if len(self._batch_shape) == 0 else h.expand(*self._batch_shape)
