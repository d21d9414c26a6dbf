"""Transforms: invertible maps with the log-determinant of their Jacobian, the pieces of a
TransformedDistribution (torch.distributions.transforms).

``t(x)`` maps forward, ``t.inv(y)`` back, ``t.log_abs_det_jacobian(x, y)`` is log |dy/dx| (summed
over the transform's event dimensions); ``domain`` and ``codomain`` are constraints.
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

import genesis
import genesis.nn.functional as F
from genesis import Tensor

from . import constraints
from ._math import atanh
from .utils import eps, sum_rightmost, tiny

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "ComposeTransform",
    "ExpTransform",
    "PowerTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]


class Transform:
    """An invertible (or at least left-invertible) map y = f(x). ``cache_size=1`` remembers the last
    (x, y) pair, so that ``inv(f(x))`` returns x itself."""

    bijective = False
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y: tuple[Any, Any] = (None, None)
        self._inv: Transform | None = None

    @property
    def event_dim(self) -> int:
        """The domain's event_dim when it equals the codomain's."""
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (x = inv(y))."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self) -> Any:
        """The sign of the Jacobian's determinant (+1 or -1), for monotone scalar transforms."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with the given cache size."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        """y = f(x)."""
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |det dy/dx| at the pair (x, y)."""
        raise NotImplementedError

    def forward_shape(self, shape: Any) -> Any:
        """The output shape for an input of ``shape``."""
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        """The input shape for an output of ``shape``."""
        return shape

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform, sharing its cache."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        """The forward transform's codomain."""
        assert self._inv is not None
        return self._inv.codomain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        """The forward transform's domain."""
        assert self._inv is not None
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        """As the forward transform."""
        assert self._inv is not None
        return self._inv.bijective

    @property
    def sign(self) -> Any:
        """As the forward transform."""
        assert self._inv is not None
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        """The forward transform."""
        assert self._inv is not None
        return self._inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        """The forward transform's inverse at x."""
        assert self._inv is not None
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """Minus the forward transform's, at the swapped pair."""
        assert self._inv is not None
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: Any) -> Any:
        """The forward transform's inverse_shape."""
        assert self._inv is not None
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        """The forward transform's forward_shape."""
        assert self._inv is not None
        return self._inv.forward_shape(shape)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"


class ComposeTransform(Transform):
    """The transforms of ``parts`` applied in order."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = parts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @functools.cached_property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        """The first part's domain, made independent over the event dimensions the later parts consume."""
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim = max(event_dim + part.domain.event_dim - part.codomain.event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @functools.cached_property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        """The last part's codomain, made independent over the event dimensions the earlier parts produce."""
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(event_dim + part.codomain.event_dim - part.domain.event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        """Whether every part is."""
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> Any:
        """The product of the parts' signs."""
        return functools.reduce(operator.mul, (p.sign for p in self.parts), 1)

    @property
    def inv(self) -> Transform:
        """The inverses of the parts, in reverse order."""
        if self._inv is None:
            inverse = ComposeTransform([p.inv for p in reversed(self.parts)])
            inverse._inv = self
            self._inv = inverse
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The composition with every part cached."""
        return self if self._cache_size == cache_size else ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        """Each part applied in turn."""
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """The parts' log-determinants at their intermediate values, summed to the composition's event dims."""
        if not self.parts:
            return genesis.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, xi, yi in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(sum_rightmost(part.log_abs_det_jacobian(xi, yi), event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return functools.reduce(operator.add, terms)

    def forward_shape(self, shape: Any) -> Any:
        """The shape after every part."""
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        """The shape before every part."""
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{self.__class__.__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """x."""
        return x


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with the given cache size."""
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> Any:
        """sign(exponent)."""
        e = self.exponent
        return e.sign() if isinstance(e, Tensor) else (1 if e > 0 else -1 if e < 0 else 0)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PowerTransform):
            return False
        same = self.exponent == other.exponent
        return bool(same.all().item()) if isinstance(same, Tensor) else bool(same)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |exponent y / x|."""
        return (self.exponent * y / x).abs().log()


class SigmoidTransform(Transform):
    """y = sigmoid(x)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.sigmoid().clamp(min=tiny(x.dtype), max=1 - eps(x.dtype))

    def _inverse(self, y: Tensor) -> Tensor:
        y = y.clamp(min=tiny(y.dtype), max=1 - eps(y.dtype))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """-softplus(-x) - softplus(x)."""
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x)."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """2 (log 2 - x - softplus(-2x)), stable for large |x|."""
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(Transform):
    """y = |x| (not bijective: its inverse is the identity on the non-negative reals)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """y = loc + scale x, over ``event_dim`` rightmost dimensions."""

    bijective = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        """The number of rightmost dimensions one event spans."""
        return self._event_dim

    @functools.cached_property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        """The reals, independent over event_dim dimensions."""
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real, self._event_dim)

    @functools.cached_property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        """The reals, independent over event_dim dimensions."""
        return self.domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with the given cache size."""
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            same = a == b
            if not (bool(same.all().item()) if isinstance(same, Tensor) else bool(same)):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self) -> Any:
        """sign(scale)."""
        s = self.scale
        return s.sign() if isinstance(s, Tensor) else (1 if s > 0 else -1 if s < 0 else 0)

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |scale|, summed over event_dim and broadcast to x's batch shape."""
        shape = tuple(x.shape)
        scale = self.scale
        if isinstance(scale, Tensor):
            result = scale.abs().log()
        else:
            result = genesis.full_like(x, math.log(abs(scale)))
        if self._event_dim:
            result = result.reshape(*result.shape[: result.dim() - self._event_dim], -1).sum(-1)
            shape = shape[: len(shape) - self._event_dim]
        return result.expand(*shape)

    def forward_shape(self, shape: Any) -> Any:
        """The input shape broadcast with loc's and scale's."""
        from .utils import broadcast_shapes

        extra = [tuple(t.shape) for t in (self.loc, self.scale) if isinstance(t, Tensor)]
        return broadcast_shapes(tuple(shape), *extra)

    def inverse_shape(self, shape: Any) -> Any:
        """The output shape broadcast with loc's and scale's."""
        return self.forward_shape(shape)


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dimension (not bijective; its inverse is log)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()


class StickBreakingTransform(Transform):
    """A bijection from R^(K-1) onto the K-simplex by stick breaking: each coordinate (shifted by
    log of the pieces left) takes a sigmoid-sized share of what remains of the stick."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    @staticmethod
    def _offset(n: int, like: Tensor) -> Tensor:
        """log of n, n-1, ..., 1: the shift that makes x = 0 the simplex's centre."""
        return genesis.arange(n, 0, -1, dtype=like.dtype, device=like.device).log()

    def _call(self, x: Tensor) -> Tensor:
        z = (x - self._offset(x.shape[-1], x)).sigmoid().clamp(min=tiny(x.dtype), max=1 - eps(x.dtype))
        remaining = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(remaining, [1, 0], value=1)

    def _inverse(self, y: Tensor) -> Tensor:
        crop = y[..., :-1]
        left = (1 - crop.cumsum(-1)).clamp(min=tiny(y.dtype))
        return crop.log() - left.log() + self._offset(crop.shape[-1], y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """sum(-x' + logsigmoid(x') + log y_k) over the first K-1 coordinates, x' = x - offset."""
        shifted = x - self._offset(x.shape[-1], x)
        return (-shifted + F.logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Any) -> Any:
        """One more coordinate in the last dimension."""
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return (*shape[:-1], shape[-1] + 1)

    def inverse_shape(self, shape: Any) -> Any:
        """One coordinate fewer in the last dimension."""
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return (*shape[:-1], shape[-1] - 1)
