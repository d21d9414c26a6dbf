"""Distribution: the base of every probability distribution (torch.distributions.Distribution).

A distribution has a ``batch_shape`` (independent, differently parameterised copies) and an
``event_shape`` (the shape of one draw); ``sample(sample_shape)`` returns
``sample_shape + batch_shape + event_shape``. With validation on (the default, as torch's: off
only under ``python -O``), parameters are checked against ``arg_constraints`` when the
distribution is made and values against ``support`` before they are scored, raising ValueError.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import genesis
from genesis import Tensor

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]

_Shape = Sequence[int]


class Distribution:
    """The abstract base of probability distributions."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample validation on or off for distributions made from now on."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: _Shape = (), event_shape: _Shape = (), validate_args: bool | None = None) -> None:
        self._batch_shape = genesis.Size(batch_shape)
        self._event_shape = genesis.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._validate_parameters()

    def _validate_parameters(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(
                f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` or "
                "initialize the distribution with `validate_args=False` to turn off validation.",
                stacklevel=3,
            )
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue  # constraints on other parameters cannot be checked alone
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                continue  # parameters computed on demand from another one
            value = getattr(self, param)
            if not bool(constraint.check(value).all().item()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                    f"but found invalid values:\n{value}"
                )

    def expand(self, batch_shape: _Shape, _instance: Any = None) -> Distribution:
        """A distribution of the same kind with its parameters expanded to ``batch_shape`` (no copies,
        no new validation)."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> genesis.Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> genesis.Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """Each parameter's name and the constraint it must satisfy."""
        raise NotImplementedError

    @property
    def support(self) -> Any:
        """The constraint the values of this distribution satisfy."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape: _Shape = ()) -> Tensor:
        """A sample of shape sample_shape + batch_shape + event_shape, outside the graph."""
        with genesis.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: _Shape = ()) -> Tensor:
        """A reparameterised sample: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """``n`` samples (deprecated in torch: use sample((n,)))."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample(genesis.Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the probability density (mass) function at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution's support, along a new leading dimension."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, batched over batch_shape."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """exp(entropy)."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: _Shape = ()) -> genesis.Size:
        """sample_shape + batch_shape + event_shape."""
        if not isinstance(sample_shape, genesis.Size):
            sample_shape = genesis.Size(sample_shape)
        return genesis.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """ValueError unless ``value``'s rightmost dimensions match the event shape, it broadcasts with
        batch_shape + event_shape, and it lies in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(
                f"The right-most size of value must match event_shape: {value.shape} vs {self._event_shape}."
            )
        actual, expected = value.shape, self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable sample validation. Please initialize "
                "the distribution with `validate_args=False` to turn off validation.",
                stacklevel=2,
            )
            return
        if not bool(support.check(value).all().item()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def _expand_params(self, cls: type, batch_shape: _Shape, _instance: Any, names: Sequence[str]) -> Any:
        """A new ``cls`` instance whose parameters ``names`` are this one's expanded to ``batch_shape`` (plus
        each parameter's own event dimensions), with no new validation: the body of most ``expand``s."""
        new = self._get_checked_instance(cls, _instance)
        batch = tuple(batch_shape)
        for name in names:
            value = getattr(self, name)
            extra = tuple(value.shape[len(self._batch_shape) :])  # the parameter's own event dimensions
            setattr(new, name, value.expand(*batch, *extra))
        Distribution.__init__(new, batch, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:  # type: ignore[misc]
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        shown = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}" for p in names
        )
        return f"{self.__class__.__name__}({shown})"
