"""Geometric(probs | logits): the number of failures before the first success
(torch.distributions.Geometric)."""

from __future__ import annotations

from numbers import Number
from typing import Any

import genesis
import genesis.nn.functional as F
from genesis import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits, standard_uniform, tiny

__all__ = ["Geometric"]


class Geometric(Distribution):
    """P(X = k) = (1 - p)^k p for k = 0, 1, 2, ..., with success probability ``probs`` (or
    sigmoid(``logits``))."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param, scalar = self.probs, isinstance(probs, Number)
        else:
            (self.logits,) = broadcast_all(logits)  # type: ignore[arg-type]
            param, scalar = self.logits, isinstance(logits, Number)
        super().__init__(() if scalar else param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all().item()):
            invalid = self.probs.detach()[~(self.probs > 0)]
            raise ValueError(
                f"Expected parameter probs ({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) "
                f"of distribution {self!r} to satisfy the constraint {constraints.positive!r}, "
                f"but found invalid values:\n{invalid}"
            )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Geometric:
        """This distribution with its parameter expanded to ``batch_shape``."""
        names = [n for n in ("probs", "logits") if n in self.__dict__]
        return self._expand_params(Geometric, batch_shape, _instance, names)

    @lazy_property
    def logits(self) -> Tensor:
        """log(p) - log(1 - p)."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """sigmoid(logits)."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def mean(self) -> Tensor:
        """1 / p - 1."""
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        """0."""
        return genesis.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        """(1 / p - 1) / p."""
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """floor(log(u) / log(1 - p)), u ~ U(tiny, 1)."""
        shape = self._extended_shape(sample_shape)
        with genesis.no_grad():
            u = standard_uniform(shape, self.probs).clamp(min=tiny(self.probs.dtype))
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        """value log(1 - p) + log(p) (0 at p = 1, value = 0)."""
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        certain = (probs == 1) & (value == 0)
        probs = genesis.where(certain, genesis.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        """The Bernoulli entropy of p, divided by p."""
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
