"""Bernoulli(probs | logits): a 0 / 1 variable (torch.distributions.Bernoulli)."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import genesis
import genesis.nn.functional as F
from genesis import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


def _one_of(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
    """1 with probability ``probs`` (or sigmoid(``logits``)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        _one_of(probs, logits)
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)  # type: ignore[arg-type]
            param = self.logits
        self._param = param
        super().__init__(() if is_scalar else param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Bernoulli:
        """This distribution with its parameter expanded to ``batch_shape``."""
        new = self._get_checked_instance(Bernoulli, _instance)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(*batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(*batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """probs."""
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where probs > 1/2, 0 below, NaN at exactly 1/2."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return genesis.where(self.probs == 0.5, genesis.full_like(mode, math.nan), mode)

    @property
    def variance(self) -> Tensor:
        """probs (1 - probs)."""
        return self.probs * (1 - self.probs)

    @lazy_property
    def logits(self) -> Tensor:
        """log(probs) - log(1 - probs)."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """sigmoid(logits)."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> genesis.Size:
        """The shape of the parameter given."""
        return self._param.shape

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """0 / 1 draws in the parameter's dtype."""
        shape = self._extended_shape(sample_shape)
        with genesis.no_grad():
            return genesis.bernoulli(self.probs.expand(*shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """value log(p) + (1 - value) log(1 - p), from the logits."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value.to(logits.dtype), reduction="none")

    def entropy(self) -> Tensor:
        """-p log p - (1 - p) log(1 - p)."""
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """[0, 1] along a new leading dimension (expanded over the batch unless ``expand=False``)."""
        values = genesis.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape(-1, *([1] * len(self._batch_shape)))
        return values.expand(2, *self._batch_shape) if expand else values
