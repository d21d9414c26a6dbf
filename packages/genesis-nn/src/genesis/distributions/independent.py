"""Independent(base_distribution, reinterpreted_batch_ndims): batch dimensions read as event dimensions
(torch.distributions.Independent)."""

from __future__ import annotations

from typing import Any

from genesis import Tensor

from . import constraints
from .distribution import Distribution
from .utils import sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """The product of ``base_distribution`` over its rightmost ``reinterpreted_batch_ndims`` batch dimensions:
    log_prob and entropy are summed over them (a diagonal Normal as one multivariate event, say)."""

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(
        self, base_distribution: Distribution, reinterpreted_batch_ndims: int, validate_args: bool | None = None
    ) -> None:
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}"
            )
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[: len(shape) - event_dim], shape[len(shape) - event_dim :], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Independent:
        """This distribution over an expanded batch (the base is expanded with the event dims it reinterprets)."""
        new = self._get_checked_instance(Independent, _instance)
        extra = tuple(self._event_shape[: self.reinterpreted_batch_ndims])
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + extra)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        """As the base distribution."""
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        """As the base distribution, when no dimension is reinterpreted."""
        return False if self.reinterpreted_batch_ndims > 0 else self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self) -> Any:
        """The base support, independent over the reinterpreted dimensions."""
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self) -> Tensor:
        """The base mean."""
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        """The base mode."""
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        """The base variance."""
        return self.base_dist.variance

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """The base distribution's sample."""
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """The base distribution's reparameterised sample."""
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        """The base log_prob summed over the reinterpreted dimensions."""
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        """The base entropy summed over the reinterpreted dimensions."""
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The base support; NotImplementedError once dimensions are reinterpreted (a cartesian product)."""
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
