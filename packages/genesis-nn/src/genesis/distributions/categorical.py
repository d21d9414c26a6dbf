"""Categorical(probs | logits): one of K classes (torch.distributions.Categorical)."""

from __future__ import annotations

import math
from typing import Any

import genesis
from genesis import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_shapes, lazy_property, logits_to_probs, probs_to_logits, standard_uniform

__all__ = ["Categorical"]

_MIN_REAL = {genesis.float64: -1.7976931348623157e308, genesis.float16: -65504.0, genesis.bfloat16: -3.3895e38}


class Categorical(Distribution):
    """Class indices 0 .. K-1 with the probabilities in the last dimension of ``probs`` (normalised to sum
    to 1) or ``logits`` (normalised by logsumexp)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(
        self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            assert logits is not None
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            param = self.logits
        self._param = param
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Categorical:
        """This distribution with its parameter expanded to ``batch_shape``."""
        new = self._get_checked_instance(Categorical, _instance)
        shape = (*batch_shape, self._num_events)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(*shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(*shape)
            new._param = new.logits
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        """The integers 0 .. K-1."""
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        """log(probs)."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        """softmax(logits)."""
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> genesis.Size:
        """The shape of the parameter given."""
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        """NaN (a class index has no mean), of the batch shape."""
        return genesis.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        """The most probable class."""
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        """NaN, of the batch shape."""
        return genesis.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """int64 class indices: one uniform draw per sample located in the cumulative probabilities."""
        with genesis.no_grad():
            shape = self._extended_shape(sample_shape)
            cdf = self.probs.cumsum(-1)
            u = standard_uniform(tuple(shape), cdf).unsqueeze(-1) * cdf[..., -1:]
            index = (cdf <= u).to(genesis.int64).sum(-1)
            return index.clamp(max=self._num_events - 1)

    def log_prob(self, value: Tensor) -> Tensor:
        """log(probs) at the class ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = broadcast_shapes(value.shape, self.logits.shape)
        log_pmf = self.logits.expand(*shape)
        index = value.expand(*shape[:-1], 1)
        return log_pmf.gather(-1, index).squeeze(-1)

    def entropy(self) -> Tensor:
        """-sum(probs * logits) (with the logits of zero-probability classes clamped to the dtype's min)."""
        logits = self.logits.clamp(min=_MIN_REAL.get(self.logits.dtype, -3.4028234663852886e38))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """0 .. K-1 along a new leading dimension (expanded over the batch unless ``expand=False``)."""
        values = genesis.arange(self._num_events, dtype=genesis.int64, device=self._param.device)
        values = values.reshape(-1, *([1] * len(self._batch_shape)))
        return values.expand(self._num_events, *self._batch_shape) if expand else values
