"""Random draws, with torch's gradient rule: nothing flows through a draw, its parameters get zero;
and RandomMixin, the Tensor methods that draw (in-place fills and bernoulli)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import grad_mode
from ..tensor_base import TensorBase
from ._util import is_tensor, wrap
from .memory import Copy

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


def sample(values, *params):
    """``values`` (an NDArray of draws) as a Tensor which, like torch's sampling functions, passes a
    zero gradient to the Tensors among ``params`` (the distribution's mean, std, p, ...)."""
    tensors = [x for x in params if is_tensor(x)]
    out = wrap(tensors[0], values)
    if grad_mode.is_grad_enabled():
        for x in tensors:
            if x.requires_grad:
                out = Copy.apply(x.expand(*values.shape), out)
    return out


class RandomMixin(TensorBase):
    """In-place random fills are recorded like fill_: nothing of the old value survives, so its gradient
    is zero. As torch, a leaf that requires grad (or a view of one) is refused outside no_grad (nn.init
    runs under it)."""

    __slots__ = ()

    def _random_(self, fill) -> Tensor:
        def recorded():
            before = self._snapshot()
            fill(self.data)
            return Copy.apply(before, self._result_type(self.data.clone()))

        return self._inplace(recorded, lambda: fill(self.data))

    def uniform_(self, a: float = 0.0, b: float = 1.0) -> Tensor:
        """Fill self with numbers drawn uniformly from [a, b), in place."""
        return self._random_(lambda d: d.uniform_(a, b))

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> Tensor:
        """Fill self with numbers drawn from the normal distribution N(mean, std^2), in place."""
        return self._random_(lambda d: d.normal_(mean, std))

    def exponential_(self, lambd: float = 1.0) -> Tensor:
        """Fill self with numbers drawn from the exponential distribution of rate ``lambd``, in place."""
        return self._random_(lambda d: d.exponential_(lambd))

    def bernoulli_(self, p: Tensor | float = 0.5) -> Tensor:
        """Fill self with 0 or 1, each 1 with probability ``p`` (a number, or a tensor of probabilities), in place."""
        prob = p.data if is_tensor(p) else p
        return self._random_(lambda d: d.bernoulli_(prob))

    def random_(self, low: int | None = None, high: int | None = None) -> Tensor:
        """Fill self with random integers, in place: ``random_(to)`` in [0, to), ``random_(from, to)``
        in [from, to), ``random_()`` over every integer the dtype holds (up to 2^mantissa for floats).
        """
        return self._random_(lambda d: d.random_(low, high))

    def bernoulli(self, p: Tensor | float | None = None) -> Tensor:
        """0 / 1 in this tensor's dtype, each 1 with the probability at its place here (or with ``p``);
        the gradient to this tensor is zero, as torch's.
        """
        return sample(self.data.bernoulli(p.data if is_tensor(p) else p), self)
