"""Piecewise-linear activations: hardshrink, softshrink, threshold, hardsigmoid and hardswish.

Each is a short composition of where / clamp, so its gradient (1 on the linear pieces, 0 on the flat
ones) comes from those ops.
"""

from __future__ import annotations

from genesis_autograd import Tensor

from ._dtype_checks import require_floating
from .activation import _apply

__all__ = ["hardshrink", "hardsigmoid", "hardswish", "softshrink", "threshold", "threshold_"]


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0, elementwise (NaN stays NaN, as torch's).

    Args:
        input: any shape, floating dtype.
        lambd: the half-width of the zeroed band.
    """
    return input.hardshrink(lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0, elementwise.

    Args:
        input: any shape, floating dtype.
        lambd: the half-width of the zeroed band (at least 0).
    """
    require_floating("softshrink", input)
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return input - input.clamp(-lambd, lambd)


def _threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else ``value``, elementwise (in ``input``'s dtype).

    Args:
        input: any shape.
        threshold: the value to compare with.
        value: what replaces the elements not above the threshold.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    return _apply(lambda t: t.where(t > threshold, value).to(dtype=t.dtype), input, inplace)


# Defined as _threshold (as torch does) because its argument named threshold hides the function's name.
threshold = _threshold


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _threshold(input, threshold, value, inplace=True)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6 elementwise: 0 below -3, 1 above 3, linear between.

    Args:
        input: any shape, floating dtype.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    require_floating("hardsigmoid", input)
    return _apply(lambda t: (t + 3).clamp(0.0, 6.0) / 6, input, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6 elementwise (MobileNetV3's cheap swish).

    Args:
        input: any shape, floating dtype.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    require_floating("hardswish", input)
    return _apply(lambda t: t * (t + 3).clamp(0.0, 6.0) / 6, input, inplace)
