"""The exponential linear units: elu, celu and selu (and their in-place forms).

Each is ``x`` for x > 0 and a scaled ``expm1`` below; the ``expm1`` sees the input clamped at 0, so
the branch that is not taken never overflows (an inf there would turn where's zero gradient into NaN).
"""

from __future__ import annotations

from genesis_autograd import Tensor

from ._dtype_checks import require_floating
from .activation import _apply

__all__ = ["celu", "celu_", "elu", "elu_", "selu", "selu_"]

# SELU's constants (Klambauer et al., 2017), as torch writes them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _elu(input: Tensor, alpha: float, input_scale: float = 1.0) -> Tensor:
    """x for x > 0, alpha * (exp(x * input_scale) - 1) otherwise."""
    negative = (input.clamp_max(0.0) * input_scale).expm1() * alpha
    return input.where(input > 0, negative)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """ELU: x for x > 0, alpha * (exp(x) - 1) otherwise, elementwise.

    Args:
        input: any shape, floating dtype.
        alpha: the value approached for large negative x is -alpha.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    require_floating("elu", input)
    return _apply(lambda t: _elu(t, alpha), input, inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """CELU: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), elementwise.

    Args:
        input: any shape, floating dtype.
        alpha: the scale of the negative part (not 0).
        inplace: write the result into ``input`` (the gradient still flows).
    """
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    require_floating("elu", input)  # torch's CELU runs its ELU kernel, and names it
    return _apply(lambda t: _elu(t, alpha, 1.0 / alpha), input, inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """SELU: scale * elu(x, alpha) with the self-normalising constants alpha = 1.6733, scale = 1.0507.

    Args:
        input: any shape, floating dtype.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    require_floating("elu", input)
    return _apply(lambda t: _elu(t, _SELU_ALPHA) * _SELU_SCALE, input, inplace)


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`."""
    return selu(input, inplace=True)
