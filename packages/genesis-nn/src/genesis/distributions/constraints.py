"""Constraints: the sets a distribution's parameters and values live in (torch.distributions.constraints).

Each constraint's ``check(value)`` is a bool tensor, reduced over the constraint's ``event_dim``
rightmost dimensions; ``is_discrete`` says whether the set is countable.
"""

from __future__ import annotations

from typing import Any

import genesis
from genesis import Tensor

__all__ = [
    "Constraint",
    "boolean",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "symmetric",
    "unit_interval",
]


class Constraint:
    """A region of values: ``check(value)`` says, per event, whether the value lies in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """A bool tensor of the batch shape: True where ``value`` satisfies the constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A constraint that depends on other parameters (a Binomial's value on its total_count): not checked."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        """Whether the region is countable (given when the constraint was made)."""
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return bool(self._is_discrete)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        """How many rightmost dimensions make one event (given when the constraint was made)."""
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return int(self._event_dim)

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> _Dependent:
        """A dependent constraint with these static attributes."""
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Tensor) -> Tensor:
        """Dependent constraints cannot be checked on their own."""
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a dependent one (skipped by argument validation)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property of a distribution that is also a dependent constraint (e.g. Uniform's support)."""

    def __init__(self, fn: Any = None, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn: Any) -> _DependentProperty:  # type: ignore[override]
        """Decorate ``fn`` as the property's getter."""
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """A constraint whose ``reinterpreted_batch_ndims`` rightmost batch dimensions count as event dimensions."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"expected a Constraint, got {type(base_constraint).__name__}")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(f"reinterpreted_batch_ndims must be a non-negative int, got {reinterpreted_batch_ndims}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        """As the base constraint."""
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        """The base constraint's event_dim plus the reinterpreted dimensions."""
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        """The base check, all-reduced over the reinterpreted dimensions."""
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        if self.reinterpreted_batch_ndims:
            result = result.reshape(*result.shape[: result.dim() - self.reinterpreted_batch_ndims], -1).all(-1)
        return result

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    """{0, 1}."""

    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        """Whether each entry is 0 or 1."""
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors: entries 0 or 1, exactly one 1 per event."""

    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        """Whether each last-dimension vector is one-hot."""
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _IntegerInterval(Constraint):
    """Integers in [lower_bound, upper_bound]."""

    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each entry is an integer within the bounds."""
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    """Integers >= lower_bound."""

    is_discrete = True

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each entry is an integer at least lower_bound."""
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    """The extended real line (NaN excluded)."""

    def check(self, value: Tensor) -> Tensor:
        """False at NaN."""
        return value == value


class _GreaterThan(Constraint):
    """(lower_bound, inf]."""

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each entry exceeds lower_bound."""
        return value > self.lower_bound

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    """[lower_bound, inf]."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each entry is at least lower_bound."""
        return value >= self.lower_bound


class _LessThan(Constraint):
    """[-inf, upper_bound)."""

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each entry is below upper_bound."""
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """[lower_bound, upper_bound]."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each entry lies within the closed interval."""
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    """[lower_bound, upper_bound)."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each entry lies within the half-open interval."""
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _Simplex(Constraint):
    """Vectors of non-negative entries summing to 1 (to within 1e-6)."""

    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        """Whether each last-dimension vector is a probability vector."""
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _LowerTriangular(Constraint):
    """Lower-triangular square matrices."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix equals its lower triangle."""
        return (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is lower triangular with a positive diagonal."""
        lower = (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """True for every matrix when the last two sizes agree."""
        square = value.shape[-2] == value.shape[-1]
        return genesis.full(tuple(value.shape[:-2]), square, dtype=genesis.bool, device=value.device)


class _Symmetric(_Square):
    """Symmetric matrices (to within torch.isclose's default tolerance)."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is square and close to its transpose."""
        square = super().check(value)
        if not bool(square.all().item()):
            return square
        return genesis.isclose(value, value.mT, atol=1e-6).reshape(*value.shape[:-2], -1).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Symmetric matrices with non-negative eigenvalues (checked by a Cholesky factorisation of A + tiny I)."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is symmetric and has a Cholesky factor after a tiny diagonal shift."""
        from ._linalg import cholesky_ok

        n = value.shape[-1]
        shift = genesis.eye(n, dtype=value.dtype, device=value.device) * 1e-10
        return super().check(value) & cholesky_ok(value + shift)


class _PositiveDefinite(_Symmetric):
    """Symmetric matrices with positive eigenvalues (checked by a Cholesky factorisation)."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is symmetric and has a Cholesky factor."""
        from ._linalg import cholesky_ok

        symmetric = super().check(value)
        if not bool(symmetric.all().item()):
            return symmetric
        return symmetric & cholesky_ok(value)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
