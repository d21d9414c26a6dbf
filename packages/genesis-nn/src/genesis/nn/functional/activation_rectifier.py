"""Rectifiers with a learnt or random negative slope: prelu and rrelu (and rrelu_)."""

from __future__ import annotations

from genesis_autograd import Tensor, empty

from ._dtype_checks import require_floating
from .activation import _apply, leaky_relu

__all__ = ["prelu", "rrelu", "rrelu_"]


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x, with one learnt slope per channel (or one for all).

    Args:
        input: (N, C, *) or any shape for a one-element weight; dim 1 is the channel dim (a 1-D
            input has one channel).
        weight: a scalar or 1-D tensor of 1 or C slopes, of ``input``'s dtype.
    """
    return input.prelu(weight)  # Tensor.prelu: torch's checks, one slope per channel along dim 1


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    """Randomised leaky ReLU: while training, each non-positive element gets its own slope drawn from
    U(lower, upper) (which is also its gradient); otherwise the slope is (lower + upper) / 2.

    Args:
        input: any shape, floating dtype.
        lower, upper: the range of the random slopes.
        training: draw random slopes (False: the fixed mean slope).
        inplace: write the result into ``input`` (the gradient still flows).
    """
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    require_floating("leaky_relu", input)
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = empty(*input.shape, dtype=input.dtype, device=input.device).uniform_(lower, upper)
    return _apply(lambda t: t.where(t > 0, t * slope), input, inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)
