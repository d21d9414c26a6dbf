"""OneHotCategorical(probs | logits): a Categorical drawn as one-hot vectors
(torch.distributions.OneHotCategorical)."""

from __future__ import annotations

from typing import Any

import genesis
import genesis.nn.functional as F
from genesis import Tensor

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["OneHotCategorical"]


class OneHotCategorical(Distribution):
    """One-hot vectors of length K, the 1 at a class drawn from ``probs`` / ``logits``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(
        self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None
    ) -> None:
        self._categorical = Categorical(probs, logits)
        param = self._categorical._param
        super().__init__(param.shape[:-1], param.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> OneHotCategorical:
        """This distribution with its parameter expanded to ``batch_shape``."""
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        """The class probabilities."""
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        """The normalised log-probabilities."""
        return self._categorical.logits

    @property
    def param_shape(self) -> genesis.Size:
        """The shape of the parameter given."""
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        """probs."""
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        """The one-hot vector of the most probable class."""
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Tensor:
        """probs (1 - probs)."""
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """One-hot draws in the probabilities' dtype."""
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).to(probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        """log(probs) at the class marked by the one-hot ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        """The entropy of the underlying Categorical."""
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The K one-hot vectors along a new leading dimension."""
        n = self.event_shape[0]
        values = genesis.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape(n, *([1] * len(self.batch_shape)), n)
        return values.expand(n, *self.batch_shape, n) if expand else values
